//! The identity-provider ports: an organisation's OpenID provider, reached for single sign-on
//! (authorization code flow with PKCE, `state` and `nonce`), and the discovery alone, which is
//! all that an admin's test of a configuration runs.

use async_trait::async_trait;
use serde_json::{Map, Value};

use super::BackendError;

/// One organisation's client at its provider, with the client secret opened for this call.
#[derive(Clone, PartialEq, Eq)]
pub struct OidcClient {
    /// The provider's issuer identifier, exactly as its discovery document and tokens state it.
    pub issuer: String,
    pub client_id: String,
    pub client_secret: String,
    /// Where the provider sends the browser back: the organisation's own callback URL.
    pub redirect_uri: String,
}

impl std::fmt::Debug for OidcClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OidcClient")
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .field("redirect_uri", &self.redirect_uri)
            .finish_non_exhaustive()
    }
}

/// A sign-in started at the provider: where to send the browser, and the secrets the callback
/// needs to finish it (kept by the browser in a signed, short-lived cookie).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authorization {
    /// The provider's authorization endpoint with the request's parameters.
    pub url: String,
    /// The `state` parameter: what the callback must bring back.
    pub state: String,
    /// The `nonce` the ID token must carry.
    pub nonce: String,
    /// The PKCE code verifier whose S256 challenge the URL carries.
    pub pkce_verifier: String,
}

/// What the provider vouched for in a verified ID token.
#[derive(Debug, Clone, PartialEq)]
pub struct VerifiedIdentity {
    /// The token's `iss`.
    pub issuer: String,
    /// The token's `sub`: the provider's stable identifier of the person.
    pub subject: String,
    /// Every claim of the ID token (the standard ones included), for the configured `userName`
    /// claim and the display name.
    pub claims: Map<String, Value>,
}

/// Failures of the identity provider.
#[derive(Debug, thiserror::Error)]
pub enum IdentityError {
    /// The provider could not be reached, or answered what is not OpenID Connect (discovery,
    /// keys or token endpoint): a fault on the provider's side or in the configuration.
    #[error("the identity provider could not be reached")]
    Unavailable(#[source] BackendError),
    /// The provider refused the code, or its ID token failed verification (signature, issuer,
    /// audience, nonce, expiry, issue time): the sign-in must not go on.
    #[error("the identity provider's answer was refused")]
    Rejected(#[source] BackendError),
}

/// An OpenID provider's discovery, without the sign-in: what an admin's test of a configuration
/// runs, so a process that does nothing else with the providers need not hold what verifies
/// their tokens.
#[async_trait]
pub trait IdentityDiscovery: Send + Sync {
    /// Fetches the issuer's discovery document and keys, bypassing the cache: what an admin's
    /// "test" of a configuration runs. Errors: `Unavailable`.
    async fn discover(&self, issuer: &str) -> Result<(), IdentityError>;
}

/// An OpenID provider. Adapters cache discovery documents and signing keys, and fetch the keys
/// again when a token names a key id they do not know. Every such adapter also runs the
/// discovery alone ([`IdentityDiscovery`]), so it serves where only that is asked.
#[async_trait]
pub trait IdentityProvider: IdentityDiscovery {
    /// Starts a sign-in: fresh `state`, `nonce` and PKCE verifier, and the authorization URL
    /// (scopes `openid email profile`, S256 challenge). Errors: `Unavailable` when the
    /// provider's discovery document cannot be had.
    async fn authorize(&self, client: &OidcClient) -> Result<Authorization, IdentityError>;

    /// Finishes a sign-in: exchanges `code` with the PKCE verifier and verifies the ID token
    /// (signature, exact issuer, audience, `nonce`, expiry, issue time). `iss` is the
    /// authorization response's RFC 9207 parameter: when present it must be the issuer, and a
    /// provider whose metadata says it sends one (`authorization_response_iss_parameter_
    /// supported`) must have sent it; otherwise the code is not sent anywhere. Errors:
    /// `Rejected` for an `iss`, a code or a token refused (an answer that arrived and is not
    /// acceptable), `Unavailable` when the provider cannot be reached or fails (5xx).
    async fn exchange(
        &self, client: &OidcClient, code: &str, iss: Option<&str>, pkce_verifier: &str, nonce: &str,
    ) -> Result<VerifiedIdentity, IdentityError>;
}
