//! The session cookie: an HS256-signed JWT carrying the user, the active organisation, when the
//! person signed in and when it expires; and its lifetime rules (a sliding idle lifetime within
//! an absolute one).

use std::time::{SystemTime, UNIX_EPOCH};

use axum::http::HeaderMap;
use axum::http::header::COOKIE;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use knowledge_core::clock::{Clock, SystemClock, Timestamp};
use knowledge_core::ids::{OrgId, UserId};
use serde::{Deserialize, Serialize};

/// Name of the session cookie when the application is served over plain HTTP (on this
/// machine); over HTTPS it is [`SECURE_COOKIE_NAME`].
pub const COOKIE_NAME: &str = "ks_session";
/// Name of the session cookie over HTTPS: the `__Host-` prefix makes browsers refuse it unless
/// it is `Secure`, for `/` and without a `Domain`, so no sibling host can plant or widen it.
pub const SECURE_COOKIE_NAME: &str = "__Host-ks_session";

/// How long a session lasts: it ends after `idle_secs` without a request, and `absolute_secs`
/// after sign-in whatever the activity. Requests renew the cookie (see
/// [`Lifetime::renewal`]), so an active person stays signed in until the absolute end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lifetime {
    pub idle_secs: u64,
    pub absolute_secs: u64,
}

impl Default for Lifetime {
    /// Twelve hours idle (a working day away), seven days absolute (signing in once a week).
    fn default() -> Self {
        Self {
            idle_secs: 12 * 60 * 60,
            absolute_secs: 7 * 24 * 60 * 60,
        }
    }
}

impl Lifetime {
    /// A lifetime of `idle_hours` (1 to 168) idle within `max_days` (1 to 90) absolute, the
    /// idle one at most the absolute one: how operators set it. Errors: a message naming the
    /// bound.
    pub fn from_hours_and_days(idle_hours: u64, max_days: u64) -> Result<Self, String> {
        if !(1..=168).contains(&idle_hours) {
            return Err("the idle session lifetime must be 1 to 168 hours".into());
        }
        if !(1..=90).contains(&max_days) {
            return Err("the absolute session lifetime must be 1 to 90 days".into());
        }
        if idle_hours > max_days * 24 {
            return Err("the idle session lifetime must not exceed the absolute one".into());
        }
        Ok(Self {
            idle_secs: idle_hours * 60 * 60,
            absolute_secs: max_days * 24 * 60 * 60,
        })
    }

    /// The expiry, in seconds since the epoch, of a cookie issued at `now_secs` for a sign-in
    /// at `signed_in_secs`: the idle lifetime from now, capped by the absolute one.
    pub fn expiry(&self, signed_in_secs: u64, now_secs: u64) -> u64 {
        let idle = now_secs.saturating_add(self.idle_secs);
        idle.min(signed_in_secs.saturating_add(self.absolute_secs))
    }

    /// The expiry of a renewed cookie, if `claims` are due for renewal at `now_secs`: issued a
    /// twelfth of the idle lifetime ago or more (an hour, by default), so that renewing costs
    /// a `Set-Cookie` now and then rather than on every response, and only while renewal
    /// still extends the cookie.
    pub fn renewal(&self, claims: &CookieClaims, now_secs: u64) -> Option<u64> {
        let issued_secs = (claims.issued_at.millis().max(0) / 1000) as u64;
        let signed_in_secs = (claims.signed_in_at.millis().max(0) / 1000) as u64;
        let expiry = self.expiry(signed_in_secs, now_secs);
        let due = now_secs.saturating_sub(issued_secs) >= self.idle_secs / 12;
        (due && expiry > claims.expires_at).then_some(expiry)
    }
}
const ISSUER: &str = "knowledge-service";
/// Signing keys shorter than this are refused: HS256 wants at least its output size.
pub const MIN_KEY_BYTES: usize = 32;

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Claims {
    sub: String,
    org: String,
    iss: String,
    iat: u64,
    /// When it was issued, in milliseconds. Cookies from before this claim existed count as
    /// issued at the start of their second.
    #[serde(default)]
    iat_ms: Option<i64>,
    /// When the person signed in, in milliseconds: kept through renewals and organisation
    /// switches, and what a sign-out stamp is compared with. Cookies from before this claim
    /// existed count as signed in when issued.
    #[serde(default)]
    auth_ms: Option<i64>,
    exp: u64,
}

/// What a valid cookie says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CookieClaims {
    pub user: UserId,
    pub org: OrgId,
    /// When this cookie was issued.
    pub issued_at: Timestamp,
    /// When the person signed in; a member who signed out since is no longer signed in by it.
    pub signed_in_at: Timestamp,
    /// Expiry, seconds since the epoch.
    pub expires_at: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum CookieError {
    #[error("the signing key must have at least {MIN_KEY_BYTES} bytes")]
    WeakKey,
    #[error("the signing key must be written in hex")]
    NotHex,
    #[error("signing failed")]
    Signing(#[source] jsonwebtoken::errors::Error),
}

/// Verified cookie values kept at most; past it the cache starts again empty.
const VERIFIED_KEPT: usize = 4096;

/// Signs and verifies session cookies with the service's key.
pub struct CookieSigner {
    encoding: EncodingKey,
    decoding: DecodingKey,
    validation: Validation,
    /// The claims of values this signer verified: a client polling sends the same cookie
    /// every second, and decoding and checking it again costs more than the rest of a kept
    /// tail poll. Only values whose signature checked are kept (so only this key's), and each
    /// is still refused once expired.
    verified: std::sync::Mutex<Verified>,
}

/// Verified values and their claims, found by a keyed hash of the value's last bytes (its
/// signature's) and answered only for the very same value. Hashing a whole value (about 250
/// bytes) took about 900 instructions a poll; the end of an HMAC is as unlike another's as the
/// whole value is, and the key (`RandomState`, random for each signer) keeps values chosen to
/// collide from being made. Two values of one hash only take each other's place.
#[derive(Default)]
struct Verified {
    keys: std::hash::RandomState,
    values: std::collections::HashMap<u64, (String, CookieClaims)>,
}

impl Verified {
    /// The bytes hashed: at most the last 32 of the value.
    const HASHED: usize = 32;

    fn key(&self, token: &str) -> u64 {
        use std::hash::BuildHasher;
        let token = token.as_bytes();
        self.keys
            .hash_one(&token[token.len().saturating_sub(Self::HASHED)..])
    }

    fn get(&self, token: &str) -> Option<&CookieClaims> {
        match self.values.get(&self.key(token)) {
            Some((value, claims)) if value == token => Some(claims),
            _ => None,
        }
    }
}

impl std::fmt::Debug for CookieSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CookieSigner(..)")
    }
}

/// A signing key as it is stored (in a file, a variable or a secret): hex, surrounding
/// whitespace ignored, at least [`MIN_KEY_BYTES`] bytes. Errors: `NotHex`, `WeakKey`.
pub fn key_from_hex(text: &str) -> Result<Vec<u8>, CookieError> {
    let key = hex::decode(text.trim()).map_err(|_| CookieError::NotHex)?;
    if key.len() < MIN_KEY_BYTES {
        return Err(CookieError::WeakKey);
    }
    Ok(key)
}

fn epoch_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

impl CookieSigner {
    /// The signer of a key as it is stored: see [`key_from_hex`]. Errors: `NotHex`, `WeakKey`.
    pub fn from_hex(text: &str) -> Result<Self, CookieError> {
        Self::new(&key_from_hex(text)?)
    }

    pub fn new(key: &[u8]) -> Result<Self, CookieError> {
        if key.len() < MIN_KEY_BYTES {
            return Err(CookieError::WeakKey);
        }
        let mut validation = Validation::new(Algorithm::HS256);
        validation.leeway = 0;
        validation.set_issuer(&[ISSUER]);
        validation.set_required_spec_claims(&["exp", "iss", "sub"]);
        Ok(Self {
            encoding: EncodingKey::from_secret(key),
            decoding: DecodingKey::from_secret(key),
            validation,
            verified: Default::default(),
        })
    }

    /// A cookie value for a sign-in now, valid until `expires_at` (seconds since the epoch).
    pub fn mint_until(
        &self, user: &UserId, org: &OrgId, expires_at: u64,
    ) -> Result<String, CookieError> {
        self.mint_session(user, org, SystemClock.now(), expires_at)
    }

    /// A cookie value issued now for a sign-in at `signed_in_at`, valid until `expires_at`
    /// (seconds since the epoch): a renewal, or the cookie of another organisation.
    pub fn mint_session(
        &self, user: &UserId, org: &OrgId, signed_in_at: Timestamp, expires_at: u64,
    ) -> Result<String, CookieError> {
        let now = SystemClock.now();
        let claims = Claims {
            sub: user.to_string(),
            org: org.to_string(),
            iss: ISSUER.into(),
            iat: (now.millis().max(0) / 1000) as u64,
            iat_ms: Some(now.millis()),
            auth_ms: Some(signed_in_at.millis()),
            exp: expires_at,
        };
        jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &self.encoding)
            .map_err(CookieError::Signing)
    }

    /// A cookie value valid for `ttl_secs` from now.
    pub fn mint(&self, user: &UserId, org: &OrgId, ttl_secs: u64) -> Result<String, CookieError> {
        self.mint_until(user, org, expiry_after(ttl_secs))
    }

    /// The claims of a cookie value, if its signature, issuer and expiry are valid. A value
    /// verified before is answered from memory until it expires.
    pub fn verify(&self, token: &str) -> Option<CookieClaims> {
        let now = now_secs();
        let verified = self.verified.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(claims) = verified.get(token) {
            return (claims.expires_at >= now).then(|| claims.clone());
        }
        drop(verified);
        let claims = self.decode(token)?;
        let mut verified = self.verified.lock().unwrap_or_else(|p| p.into_inner());
        if verified.values.len() >= VERIFIED_KEPT {
            verified.values.clear();
        }
        let key = verified.key(token);
        verified
            .values
            .insert(key, (token.to_owned(), claims.clone()));
        Some(claims)
    }

    /// [`CookieSigner::verify`] without the cache: the JWT's signature, issuer and expiry.
    fn decode(&self, token: &str) -> Option<CookieClaims> {
        let data = jsonwebtoken::decode::<Claims>(token, &self.decoding, &self.validation).ok()?;
        let c = data.claims;
        let issued_at = Timestamp(c.iat_ms.unwrap_or(c.iat as i64 * 1000));
        Some(CookieClaims {
            user: UserId::parse(&c.sub).ok()?,
            org: OrgId::parse(&c.org).ok()?,
            issued_at,
            signed_in_at: c.auth_ms.map_or(issued_at, Timestamp),
            expires_at: c.exp,
        })
    }

    /// The claims of the request's cookie `name`, if present and valid.
    pub fn from_headers(&self, headers: &HeaderMap, name: &str) -> Option<CookieClaims> {
        cookie_value(headers, name).and_then(|value| self.verify(value))
    }

    /// A value signed with this key that says `claims`, whose `iss` must not be the session
    /// cookie's (the session check then refuses it).
    pub(crate) fn sign_other<T: Serialize>(&self, claims: &T) -> Result<String, CookieError> {
        jsonwebtoken::encode(&Header::new(Algorithm::HS256), claims, &self.encoding)
            .map_err(CookieError::Signing)
    }

    /// The claims of a value [`CookieSigner::sign_other`] signed, checked by `validation`.
    pub(crate) fn verify_other<T: serde::de::DeserializeOwned>(
        &self, token: &str, validation: &Validation,
    ) -> Option<T> {
        jsonwebtoken::decode::<T>(token, &self.decoding, validation)
            .ok()
            .map(|d| d.claims)
    }
}

/// The value of the request's cookie `name`, if it sent one.
pub fn cookie_value<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(n, _)| *n == name)
        .map(|(_, value)| value)
}

/// Seconds since the epoch now.
pub fn now_secs() -> u64 {
    epoch_secs()
}

/// The expiry, in seconds since the epoch, of a cookie valid for `ttl_secs` from now.
pub fn expiry_after(ttl_secs: u64) -> u64 {
    epoch_secs().saturating_add(ttl_secs)
}

/// The `Set-Cookie` value that removes cookie `name` from the browser.
pub fn clear_cookie_header(name: &str, secure: bool) -> String {
    let secure = if secure { "; Secure" } else { "" };
    format!("{name}=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0{secure}")
}

/// The `Set-Cookie` value for cookie `name` holding `token` until `expires_at` (seconds since
/// the epoch): `HttpOnly`, `SameSite=Lax`, for the whole application, `Secure` over HTTPS.
pub fn set_cookie_header(name: &str, token: &str, expires_at: u64, secure: bool) -> String {
    let max_age = expires_at.saturating_sub(epoch_secs());
    let secure = if secure { "; Secure" } else { "" };
    format!("{name}={token}; Path=/; HttpOnly; SameSite=Lax; Max-Age={max_age}{secure}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signer(key: &[u8]) -> CookieSigner {
        CookieSigner::new(key).unwrap()
    }

    #[test]
    fn a_minted_cookie_verifies_with_the_same_key_only() {
        let (u, o) = (UserId::generate(), OrgId::generate());
        let token = signer(&[7; 32]).mint(&u, &o, 60).unwrap();
        let claims = signer(&[7; 32]).verify(&token).unwrap();
        assert_eq!((claims.user, claims.org), (u, o));
        assert!(signer(&[8; 32]).verify(&token).is_none());
    }

    #[test]
    fn a_verified_cookie_is_answered_from_memory_until_it_expires_and_a_forged_one_never_is() {
        let s = signer(&[7; 32]);
        let token = s.mint(&UserId::generate(), &OrgId::generate(), 60).unwrap();
        let claims = s.verify(&token).unwrap();
        assert_eq!(s.verify(&token), Some(claims.clone()));
        // Once its expiry has passed, the kept claims no longer sign anyone in.
        let kept = |s: &CookieSigner| s.verified.lock().unwrap().values.len();
        // A value ending as the kept one does (the same signature over another payload) is
        // not that value: decoded, and refused.
        let mut forged = token.clone();
        let payload = token.find('.').unwrap() + 2;
        let other = if &token[payload..=payload] == "A" {
            "B"
        } else {
            "A"
        };
        forged.replace_range(payload..=payload, other);
        assert_eq!(s.verify(&forged), None);
        assert_eq!(s.verify(&token), Some(claims.clone()));
        let mut verified = s.verified.lock().unwrap();
        let key = verified.key(&token);
        verified.values.get_mut(&key).unwrap().1.expires_at = now_secs() - 1;
        drop(verified);
        assert_eq!(s.verify(&token), None);
        // Another key's value, or a tampered one, is neither accepted nor kept.
        let other = signer(&[8; 32])
            .mint(&UserId::generate(), &OrgId::generate(), 60)
            .unwrap();
        let mut tampered = token.clone();
        tampered.pop();
        assert_eq!((s.verify(&other), s.verify(&tampered)), (None, None));
        assert_eq!(kept(&s), 1);
    }

    #[test]
    fn an_expired_cookie_is_refused() {
        let token = signer(&[7; 32])
            .mint_until(&UserId::generate(), &OrgId::generate(), epoch_secs() - 1)
            .unwrap();
        assert!(signer(&[7; 32]).verify(&token).is_none());
    }

    #[test]
    fn a_renewed_cookie_keeps_its_sign_in_time_and_never_outlives_the_absolute_lifetime() {
        let life = Lifetime {
            idle_secs: 1200,
            absolute_secs: 3000,
        };
        let at = |secs: u64| Timestamp(secs as i64 * 1000);
        let claims = |issued: u64, signed_in: u64, exp: u64| CookieClaims {
            user: UserId::generate(),
            org: OrgId::generate(),
            issued_at: at(issued),
            signed_in_at: at(signed_in),
            expires_at: exp,
        };
        // Signed in at 1000: expires at 2200 idle.
        assert_eq!(life.expiry(1000, 1000), 2200);
        // Too fresh to renew (100 s is the twelfth of 1200).
        assert_eq!(life.renewal(&claims(1000, 1000, 2200), 1099), None);
        assert_eq!(life.renewal(&claims(1000, 1000, 2200), 1100), Some(2300));
        // Near the absolute end (4000) the renewal stops extending, then stops.
        assert_eq!(life.renewal(&claims(3500, 1000, 4000), 3700), None);
        assert_eq!(life.expiry(1000, 3700), 4000);
    }

    #[test]
    fn a_cookie_carries_the_sign_in_time_it_was_minted_with() {
        let s = signer(&[7; 32]);
        let signed_in = Timestamp(1_700_000_000_000);
        let token = s
            .mint_session(
                &UserId::generate(),
                &OrgId::generate(),
                signed_in,
                expiry_after(60),
            )
            .unwrap();
        let c = s.verify(&token).unwrap();
        assert_eq!(c.signed_in_at, signed_in);
        assert!(c.issued_at > signed_in);
    }

    #[test]
    fn an_operators_lifetime_is_bounded_and_idle_fits_in_absolute() {
        let life = Lifetime::from_hours_and_days(2, 1).unwrap();
        assert_eq!((life.idle_secs, life.absolute_secs), (7200, 86_400));
        for (idle, max) in [(0, 7), (169, 30), (12, 0), (12, 91), (48, 1)] {
            assert!(
                Lifetime::from_hours_and_days(idle, max).is_err(),
                "{idle} h, {max} d"
            );
        }
    }

    #[test]
    fn short_keys_are_refused() {
        assert!(CookieSigner::new(&[1; 16]).is_err());
    }
}
