//! The session cookie: an HS256-signed JWT carrying the user, the active organisation and expiry.

use std::time::{SystemTime, UNIX_EPOCH};

use axum::http::HeaderMap;
use axum::http::header::COOKIE;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use knowledge_core::clock::{Clock, SystemClock, Timestamp};
use knowledge_core::ids::{OrgId, UserId};
use serde::{Deserialize, Serialize};

/// How long a cookie issued at sign-in lasts, in seconds: eight hours.
pub const SIGN_IN_TTL_SECS: u64 = 8 * 60 * 60;

/// Name of the session cookie.
pub const COOKIE_NAME: &str = "ks_session";
const ISSUER: &str = "knowledge-service";
/// Signing keys shorter than this are refused: HS256 wants at least its output size.
pub const MIN_KEY_BYTES: usize = 32;

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Claims {
    sub: String,
    org: String,
    iss: String,
    iat: u64,
    /// When it was issued, in milliseconds: what a sign-out stamp is compared with. Cookies
    /// from before this claim existed count as issued at the start of their second.
    #[serde(default)]
    iat_ms: Option<i64>,
    exp: u64,
}

/// What a valid cookie says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CookieClaims {
    pub user: UserId,
    pub org: OrgId,
    /// When it was issued; a member who signed out since is no longer signed in by it.
    pub issued_at: Timestamp,
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

/// Signs and verifies session cookies with the service's key.
pub struct CookieSigner {
    encoding: EncodingKey,
    decoding: DecodingKey,
    validation: Validation,
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
        })
    }

    /// A cookie value valid until `expires_at` (seconds since the epoch).
    pub fn mint_until(
        &self, user: &UserId, org: &OrgId, expires_at: u64,
    ) -> Result<String, CookieError> {
        let now = SystemClock.now();
        let claims = Claims {
            sub: user.to_string(),
            org: org.to_string(),
            iss: ISSUER.into(),
            iat: (now.millis().max(0) / 1000) as u64,
            iat_ms: Some(now.millis()),
            exp: expires_at,
        };
        jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &self.encoding)
            .map_err(CookieError::Signing)
    }

    /// A cookie value valid for `ttl_secs` from now.
    pub fn mint(&self, user: &UserId, org: &OrgId, ttl_secs: u64) -> Result<String, CookieError> {
        self.mint_until(user, org, expiry_after(ttl_secs))
    }

    /// The claims of a cookie value, if its signature, issuer and expiry are valid.
    pub fn verify(&self, token: &str) -> Option<CookieClaims> {
        let data = jsonwebtoken::decode::<Claims>(token, &self.decoding, &self.validation).ok()?;
        let c = data.claims;
        Some(CookieClaims {
            user: UserId::parse(&c.sub).ok()?,
            org: OrgId::parse(&c.org).ok()?,
            issued_at: Timestamp(c.iat_ms.unwrap_or(c.iat as i64 * 1000)),
            expires_at: c.exp,
        })
    }

    /// The claims of the request's session cookie, if present and valid.
    pub fn from_headers(&self, headers: &HeaderMap) -> Option<CookieClaims> {
        headers
            .get_all(COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .filter_map(|pair| pair.trim().split_once('='))
            .find(|(name, _)| *name == COOKIE_NAME)
            .and_then(|(_, value)| self.verify(value))
    }
}

/// The expiry, in seconds since the epoch, of a cookie valid for `ttl_secs` from now.
pub fn expiry_after(ttl_secs: u64) -> u64 {
    epoch_secs().saturating_add(ttl_secs)
}

/// The `Set-Cookie` value that removes the session cookie from the browser.
pub fn clear_cookie_header(secure: bool) -> String {
    let secure = if secure { "; Secure" } else { "" };
    format!("{COOKIE_NAME}=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0{secure}")
}

/// The `Set-Cookie` value for a session cookie that expires at `expires_at`.
pub fn set_cookie_header(token: &str, expires_at: u64, secure: bool) -> String {
    let max_age = expires_at.saturating_sub(epoch_secs());
    let secure = if secure { "; Secure" } else { "" };
    format!("{COOKIE_NAME}={token}; Path=/; HttpOnly; SameSite=Lax; Max-Age={max_age}{secure}")
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
    fn an_expired_cookie_is_refused() {
        let token = signer(&[7; 32])
            .mint_until(&UserId::generate(), &OrgId::generate(), epoch_secs() - 1)
            .unwrap();
        assert!(signer(&[7; 32]).verify(&token).is_none());
    }

    #[test]
    fn short_keys_are_refused() {
        assert!(CookieSigner::new(&[1; 16]).is_err());
    }
}
