//! SCIM bearer tokens: generated once, stored only as a SHA-256 hash, compared in constant time.
//!
//! A token reads `kscim.<org id>.<64 hex digits>`: the organisation id says whose hash to compare
//! with, and the 256 random bits make a plain SHA-256 as strong as a slow password hash.

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::ids::OrgId;

const PREFIX: &str = "kscim";

/// A fresh token for `org`, and the hash to store for it.
pub fn generate(org: &OrgId) -> Result<(String, String), getrandom::Error> {
    let mut secret = [0u8; 32];
    getrandom::fill(&mut secret)?;
    let token = format!("{PREFIX}.{org}.{}", hex::encode(secret));
    let hash = sha256_hex(&token);
    Ok((token, hash))
}

/// The organisation a well-formed token names; `None` for anything else, whose hash would match
/// no organisation's anyway.
pub fn org_of(token: &str) -> Option<OrgId> {
    let rest = token.strip_prefix(PREFIX)?.strip_prefix('.')?;
    let (org, secret) = rest.split_once('.')?;
    (secret.len() == 64 && secret.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| OrgId::parse(org).ok())
        .flatten()
}

/// Whether `token` hashes to `stored`, compared in constant time.
pub fn matches(token: &str, stored: &str) -> bool {
    sha256_hex(token).as_bytes().ct_eq(stored.as_bytes()).into()
}

fn sha256_hex(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_token_names_its_org_and_matches_only_its_own_hash() {
        let org = OrgId::parse("org_a").unwrap();
        let (token, hash) = generate(&org).unwrap();
        let (other, other_hash) = generate(&org).unwrap();
        assert_eq!(org_of(&token), Some(org));
        assert!(matches(&token, &hash));
        assert!(!matches(&token, &other_hash));
        assert!(!matches(&other, &hash));
        assert!(!hash.contains(&token[token.len() - 64..]));
    }

    #[test]
    fn malformed_tokens_name_no_org() {
        for bad in [
            "",
            "kscim",
            "kscim.org_a",
            "kscim.org_a.xyz",
            "other.org_a.00",
            "kscim.a/b.00",
        ] {
            assert_eq!(org_of(bad), None, "{bad}");
        }
    }
}
