//! Sealing of secrets the store keeps for members (integration credentials): AES-256-GCM
//! under a deployment key that never enters the store, bound to the owner and purpose by
//! associated data, so a sealed value copied to another member or integration does not open.

use aws_lc_rs::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};

/// Prefix of the current sealed format: `v1.<hex(nonce ‖ ciphertext ‖ tag)>`.
const FORMAT: &str = "v1.";

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SealError {
    #[error("the sealing key must be 32 bytes")]
    KeyLength,
    #[error("the sealing key must be written in hex")]
    NotHex,
    /// Wrong key, wrong owner, or tampered with; deliberately no more detail.
    #[error("the sealed value does not open")]
    Open,
}

/// Seals and opens secrets under one 256-bit key.
pub struct Sealer {
    key: LessSafeKey,
}

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sealer(..)")
    }
}

impl Sealer {
    /// Errors: `KeyLength` unless `key` is 32 bytes.
    pub fn new(key: &[u8]) -> Result<Self, SealError> {
        let key = UnboundKey::new(&AES_256_GCM, key).map_err(|_| SealError::KeyLength)?;
        Ok(Self {
            key: LessSafeKey::new(key),
        })
    }

    /// The sealer of a key as it is stored (in a file, a variable or a secret): hex, surrounding
    /// whitespace ignored. Errors: `NotHex`, `KeyLength`.
    pub fn from_hex(text: &str) -> Result<Self, SealError> {
        let key = hex::decode(text.trim()).map_err(|_| SealError::NotHex)?;
        Self::new(&key)
    }

    /// Seals `secret` for `context` (who owns it and what it is for) under a fresh random
    /// nonce; the same secret seals differently each time.
    pub fn seal(&self, context: &str, secret: &str) -> String {
        let mut nonce = [0u8; NONCE_LEN];
        getrandom::fill(&mut nonce).expect("the system random source works");
        let mut data = secret.as_bytes().to_vec();
        self.key
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(context.as_bytes()),
                &mut data,
            )
            .expect("AES-GCM seals any input under 64 GiB");
        let mut out = nonce.to_vec();
        out.extend(data);
        format!("{FORMAT}{}", hex::encode(out))
    }

    /// The secret sealed for `context`. Errors: `Open` when the value was sealed under
    /// another key or context, or changed.
    pub fn open(&self, context: &str, sealed: &str) -> Result<String, SealError> {
        let bytes = sealed
            .strip_prefix(FORMAT)
            .and_then(|h| hex::decode(h).ok())
            .filter(|b| b.len() >= NONCE_LEN)
            .ok_or(SealError::Open)?;
        let (nonce, rest) = bytes.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| SealError::Open)?;
        let mut data = rest.to_vec();
        let plain = self
            .key
            .open_in_place(nonce, Aad::from(context.as_bytes()), &mut data)
            .map_err(|_| SealError::Open)?;
        String::from_utf8(plain.to_vec()).map_err(|_| SealError::Open)
    }
}

/// The context a member's credential for an integration is sealed for: the member, and the
/// integration's name and URL, so that a token stops opening when the integration is pointed
/// at another server, rather than being sent there.
pub fn credential_context(org: &str, user: &str, integration: &str, url: &str) -> String {
    format!("integration-credential\n{org}\n{user}\n{integration}\n{url}")
}

/// The context an OAuth grant is sealed for: the organisation, its owner (a user id, or `org`
/// for the organisation's own), the integration and its URL, so that a grant copied to another
/// member or integration, or left behind when the integration moves, does not open.
pub fn grant_context(org: &str, owner: &str, integration: &str, url: &str) -> String {
    format!("oauth-grant\n{org}\n{owner}\n{integration}\n{url}")
}

/// The context the service's client secret at an integration's authorization server is sealed
/// for: the organisation, the integration and the client.
pub fn oauth_client_context(org: &str, integration: &str, client_id: &str) -> String {
    format!("oauth-client-secret\n{org}\n{integration}\n{client_id}")
}

/// The context of the PKCE verifier a connect in progress keeps until its callback.
pub fn pkce_context(org: &str, integration: &str, state_hash: &str) -> String {
    format!("oauth-pkce\n{org}\n{integration}\n{state_hash}")
}

/// The context an organisation's SSO client secret is sealed for: the organisation and the
/// client, so that a secret stops opening when it is moved to another client or organisation.
pub fn sso_secret_context(org: &str, issuer: &str, client_id: &str) -> String {
    format!("sso-client-secret\n{org}\n{issuer}\n{client_id}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sealer(byte: u8) -> Sealer {
        Sealer::new(&[byte; 32]).unwrap()
    }

    #[test]
    fn a_sealed_secret_opens_for_its_own_context_only() {
        let s = sealer(7);
        let sealed = s.seal("org/alice/wiki", "tok-123");
        assert!(!sealed.contains("tok-123"));
        assert_eq!(s.open("org/alice/wiki", &sealed).unwrap(), "tok-123");
        assert_eq!(s.open("org/bob/wiki", &sealed), Err(SealError::Open));
        assert_eq!(
            sealer(8).open("org/alice/wiki", &sealed),
            Err(SealError::Open)
        );
    }

    #[test]
    fn sealing_twice_gives_different_values_and_tampering_is_detected() {
        let s = sealer(1);
        let (a, b) = (s.seal("c", "x"), s.seal("c", "x"));
        assert_ne!(a, b);
        let mut tampered = a.clone().into_bytes();
        let last = tampered.len() - 1;
        tampered[last] = if tampered[last] == b'0' { b'1' } else { b'0' };
        let tampered = String::from_utf8(tampered).unwrap();
        assert_eq!(s.open("c", &tampered), Err(SealError::Open));
        assert_eq!(s.open("c", "v1.zz"), Err(SealError::Open));
        assert_eq!(Sealer::new(&[0; 16]).unwrap_err(), SealError::KeyLength);
    }
}
