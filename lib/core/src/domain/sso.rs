//! An organisation's single sign-on through its OpenID provider, and the provider identity
//! bound to a member at their first sign-in.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::clock::Timestamp;

/// The `userName` claim used when an organisation names none: the ID token's `email`.
pub const DEFAULT_USER_NAME_CLAIM: &str = "email";
/// E-mail domains one organisation may route to its provider at most (each is a storage item
/// written in the configuration's transaction).
pub const SSO_DOMAIN_LIMIT: usize = 20;

/// How an organisation's members sign in. Written only through
/// [`crate::ports::OrgStore::set_sso`], which checks `version` and keeps each e-mail domain
/// with one organisation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SsoConfig {
    /// The provider's issuer identifier: `https://…`, or `http://` on a loopback host.
    pub issuer: String,
    pub client_id: String,
    /// The client secret, sealed under the deployment's sealing key for this organisation and
    /// client (see [`crate::seal::sso_secret_context`]); never the secret itself.
    pub client_secret_sealed: String,
    /// The ID-token claim that carries the member's `userName` (`email`, `preferred_username`,
    /// `upn`, ...).
    pub user_name_claim: String,
    /// Lowercase e-mail domains whose people sign in here, sorted, without repeats.
    pub email_domains: Vec<String>,
    /// Sign-in (and SCIM, which needs SSO) works only while this is on.
    pub enabled: bool,
    /// Whether a person the provider vouches for who is not yet a member becomes one, as a
    /// viewer, at sign-in. Off by default: members are provisioned by SCIM or an admin.
    #[serde(default)]
    pub just_in_time: bool,
    pub updated_at: Timestamp,
    /// The optimistic-concurrency token; 1 when first configured.
    pub version: u64,
}

impl SsoConfig {
    /// Whether `issuer` can name an OpenID provider here: an `https://` URL with a host, or
    /// `http://` on `127.0.0.1`, `[::1]` or `localhost` (a provider on this machine), at most
    /// 512 characters, with no query, fragment, spaces or control characters.
    pub fn valid_issuer(issuer: &str) -> bool {
        let host_and_path = issuer.strip_prefix("https://").or_else(|| {
            let rest = issuer.strip_prefix("http://")?;
            let host = rest.split(['/', ':']).next()?;
            let host = if rest.starts_with("[::1]") {
                "[::1]"
            } else {
                host
            };
            matches!(host, "127.0.0.1" | "[::1]" | "localhost").then_some(rest)
        });
        issuer.len() <= 512
            && host_and_path.is_some_and(|r| !r.is_empty() && !r.starts_with(['/', ':']))
            && !issuer.contains(['?', '#', '\\'])
            && !issuer.chars().any(|c| c.is_whitespace() || c.is_control())
    }

    /// `domain` in the form domains are kept in (trimmed, lowercase), if it can be an e-mail
    /// domain: labels of letters, digits and hyphens, with at least one dot.
    pub fn email_domain(domain: &str) -> Option<String> {
        let d = domain.trim().trim_end_matches('.').to_ascii_lowercase();
        let label_ok = |l: &str| {
            (1..=63).contains(&l.len())
                && !l.starts_with('-')
                && !l.ends_with('-')
                && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        };
        (d.len() <= 253 && d.contains('.') && d.split('.').all(label_ok)).then_some(d)
    }

    /// Whether a claim name can be looked up in an ID token: 1 to 64 characters of letters,
    /// digits, `_`, `-`, `.` and `:`.
    pub fn valid_claim(claim: &str) -> bool {
        (1..=64).contains(&claim.len())
            && claim
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_-.:".contains(c))
    }
}

/// The provider's identifier of a person: its issuer and the `sub` it gives them there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FederatedId {
    pub issuer: String,
    pub subject: String,
}

impl FederatedId {
    /// The form under which an identity is unique in an organisation: a SHA-256 of issuer and
    /// subject, so that a key of bounded length stands for both.
    pub fn key(&self) -> String {
        let mut h = Sha256::new();
        h.update(self.issuer.as_bytes());
        h.update([0]);
        h.update(self.subject.as_bytes());
        hex::encode(h.finalize())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issuers_are_https_or_loopback_http() {
        for ok in [
            "https://login.microsoftonline.com/tid/v2.0",
            "https://acme.okta.com",
            "http://127.0.0.1:4000",
            "http://localhost/realm",
            "http://[::1]:9000",
        ] {
            assert!(SsoConfig::valid_issuer(ok), "{ok}");
        }
        for bad in [
            "http://idp.example.com",
            "http://127.0.0.1.evil.com",
            "https://",
            "https:///x",
            "ftp://idp",
            "https://idp?x=1",
            "https://idp/#",
            "https://id p",
            "idp.example.com",
        ] {
            assert!(!SsoConfig::valid_issuer(bad), "{bad}");
        }
    }

    #[test]
    fn email_domains_are_kept_lowercase_and_must_have_a_dot() {
        assert_eq!(
            SsoConfig::email_domain(" Example.COM. ").as_deref(),
            Some("example.com")
        );
        for bad in [
            "localhost",
            "-a.com",
            "a..com",
            "a b.com",
            "exa_mple.com",
            "",
        ] {
            assert_eq!(SsoConfig::email_domain(bad), None, "{bad}");
        }
    }

    #[test]
    fn an_identity_key_separates_issuer_from_subject() {
        let a = FederatedId {
            issuer: "https://a".into(),
            subject: "bc".into(),
        };
        let b = FederatedId {
            issuer: "https://ab".into(),
            subject: "c".into(),
        };
        assert_ne!(a.key(), b.key());
        assert_eq!(a.key(), a.clone().key());
    }
}
