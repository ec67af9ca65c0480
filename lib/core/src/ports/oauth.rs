//! The authorization servers OAuth-protected integrations are guarded by, as the token vault
//! needs them: refresh a grant, revoke a token.

use std::time::Duration;

use async_trait::async_trait;

use crate::domain::{OAuthAccess, OAuthServer};

/// Tokens an authorization server issued.
#[derive(Clone, PartialEq, Eq)]
pub struct IssuedTokens {
    pub access_token: String,
    /// A new refresh token, when the server issued one (a rotated one replaces the old).
    pub refresh_token: Option<String>,
    /// How long the access token lasts, when the server said.
    pub expires_in: Option<Duration>,
    /// The scopes granted, when the server said.
    pub scope: Option<String>,
}

impl std::fmt::Debug for IssuedTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IssuedTokens")
            .field("expires_in", &self.expires_in)
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

/// Why the token endpoint issued nothing.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    /// The grant is no good (`invalid_grant`: revoked, expired, reused): connect again.
    #[error("the authorization server refused the grant: {0}")]
    Refused(String),
    /// Nothing was issued: the server could not be reached, or failed (5xx) before issuing.
    /// Trying again later is safe. The text is for logs and holds no secret.
    #[error("the authorization server is unavailable: {0}")]
    Unavailable(String),
    /// The request may have reached the server and its answer was lost (a stall, an answer cut
    /// short, too large or malformed): a rotating server may have spent the refresh token.
    #[error("the authorization server's answer was lost: {0}")]
    Uncertain(String),
}

/// An integration's authorization server, spoken to as the service's client there.
#[async_trait]
pub trait TokenEndpoint: Send + Sync {
    /// Exchanges `refresh_token` for new tokens, naming the server's resource (RFC 8707) and
    /// authenticating with `client_secret` when the client has one. A rotating server's old
    /// refresh token is spent even when the answer is lost: the caller never sends it again.
    async fn refresh(
        &self, access: &OAuthAccess, client_secret: Option<&str>, refresh_token: &str,
    ) -> Result<IssuedTokens, TokenError>;
    /// Revokes `token` (a refresh token) at the server's revocation endpoint (RFC 7009).
    /// Errors: `Unavailable`, also when the server offers no revocation.
    async fn revoke(
        &self, access: &OAuthAccess, client_secret: Option<&str>, token: &str,
    ) -> Result<(), TokenError>;
}

/// Where to send the browser to authorize, and what its callback must be checked and
/// completed with.
#[derive(Clone)]
pub struct AuthorizationRequest {
    pub url: String,
    /// The `state` the callback must bring back.
    pub state: String,
    /// The PKCE verifier the code exchange proves possession with.
    pub pkce_verifier: String,
}

/// Why discovery or registration failed; the text is for the admin and holds no secret.
#[derive(Debug, thiserror::Error)]
pub enum DiscoveryFailure {
    /// The server answers without asking for authorization.
    #[error("the server needs no authorization")]
    NotProtected,
    /// An address on the way is one the deployment never connects to.
    #[error("{0}")]
    Refused(super::DestinationRefused),
    /// The server or its authorization server answered what the specifications do not allow,
    /// or could not be reached.
    #[error("{0}")]
    Failed(String),
}

/// The authorization servers of OAuth-protected MCP servers, as connecting needs them:
/// discovery, registration, the authorization request and the code exchange.
#[async_trait]
pub trait AuthorizationServers: TokenEndpoint {
    /// How the MCP server at `url` is authorized (RFC 9728, then RFC 8414 or OpenID discovery).
    async fn discover(&self, url: &str) -> Result<OAuthServer, DiscoveryFailure>;
    /// Registers the service (RFC 7591) for the one `redirect_uri`, for the authorization code
    /// and refresh token grants: the client id, and its secret when one was issued.
    async fn register(
        &self, server: &OAuthServer, redirect_uri: &str, client_name: &str,
    ) -> Result<(String, Option<String>), DiscoveryFailure>;
    /// The authorization request for `access`'s scopes and resource, with PKCE S256 and a
    /// fresh `state`, coming back to `redirect_uri`.
    fn authorization(
        &self, access: &OAuthAccess, redirect_uri: &str,
    ) -> Result<AuthorizationRequest, TokenError>;
    /// Exchanges the callback's `code` for tokens, proving `verifier`, naming the resource.
    async fn exchange_code(
        &self, access: &OAuthAccess, client_secret: Option<&str>, redirect_uri: &str, code: &str,
        verifier: &str,
    ) -> Result<IssuedTokens, TokenError>;
}
