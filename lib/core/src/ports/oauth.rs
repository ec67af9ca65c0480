//! The authorization servers OAuth-protected integrations are guarded by, as the token vault
//! needs them: refresh a grant, revoke a token.

use std::time::Duration;

use async_trait::async_trait;

use crate::domain::OAuthServer;

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
        &self, server: &OAuthServer, client_secret: Option<&str>, refresh_token: &str,
    ) -> Result<IssuedTokens, TokenError>;
    /// Revokes `token` (a refresh token) at the server's revocation endpoint (RFC 7009).
    /// Errors: `Unavailable`, also when the server offers no revocation.
    async fn revoke(
        &self, server: &OAuthServer, client_secret: Option<&str>, token: &str,
    ) -> Result<(), TokenError>;
}
