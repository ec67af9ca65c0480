//! [`AuthorizationServers`] (and so [`TokenEndpoint`]) over HTTP: discovery, registration, the
//! authorization request, the code exchange, and the vault's refreshes and revocations, sent
//! to an integration's authorization server with [`crate::client`]'s requests through
//! [`BoundedHttp`].

use async_trait::async_trait;
use knowledge_core::domain::{OAuthAccess, OAuthClient, OAuthServer};
use knowledge_core::ports::{
    AuthorizationRequest, AuthorizationServers, DiscoveryFailure, IssuedTokens, TokenEndpoint,
    TokenError,
};

use crate::client::{self, ClientIdentity, OAuthError};
use crate::discovery::{DiscoveryError, discover};
use crate::http::{BoundedHttp, HttpError};

/// Every integration's authorization server, over HTTP.
#[derive(Clone)]
pub struct HttpAuthorizationServers {
    http: BoundedHttp,
}

impl HttpAuthorizationServers {
    pub fn new(http: BoundedHttp) -> Self {
        Self { http }
    }
}

/// The service's identity at the server, its secret opened.
pub fn identity(client: &OAuthClient, secret: Option<&str>) -> ClientIdentity {
    ClientIdentity {
        client_id: client.client_id.clone(),
        client_secret: secret.map(str::to_owned),
    }
}

/// What a failed exchange means for the tokens: whether anything may have been issued.
fn token_error(e: OAuthError) -> TokenError {
    match e {
        OAuthError::InvalidGrant(text) | OAuthError::Refused(text) => TokenError::Refused(text),
        OAuthError::NotOffered(what) => TokenError::Unavailable(format!("no {what}")),
        OAuthError::Malformed(text) => TokenError::Uncertain(text),
        OAuthError::Unreachable(e) => match e {
            // Nothing reached the server, or it failed before issuing.
            HttpError::Build(_) | HttpError::Refused(_) | HttpError::Url(_) => {
                TokenError::Unavailable(e.to_string())
            }
            HttpError::ServerError(status) => {
                TokenError::Unavailable(format!("it answered {status}"))
            }
            HttpError::Transport(t) if t.is_connect() => TokenError::Unavailable(t.to_string()),
            // Sent, and the answer stalled, broke off or was too large.
            HttpError::Transport(t) => TokenError::Uncertain(t.to_string()),
            HttpError::TooLarge => TokenError::Uncertain(e.to_string()),
        },
    }
}

#[async_trait]
impl TokenEndpoint for HttpAuthorizationServers {
    async fn refresh(
        &self, access: &OAuthAccess, client_secret: Option<&str>, refresh_token: &str,
    ) -> Result<IssuedTokens, TokenError> {
        let (server, client) = (&access.server, identity(&access.client, client_secret));
        let tokens = client::refresh(&self.http, server, &client, refresh_token, &server.scopes)
            .await
            .map_err(token_error)?;
        Ok(issued(tokens))
    }

    async fn revoke(
        &self, access: &OAuthAccess, client_secret: Option<&str>, token: &str,
    ) -> Result<(), TokenError> {
        let client = identity(&access.client, client_secret);
        client::revoke(&self.http, &access.server, &client, token)
            .await
            .map_err(|e| TokenError::Unavailable(e.to_string()))
    }
}

/// `tokens` as the vault keeps them.
pub fn issued(tokens: client::Tokens) -> IssuedTokens {
    IssuedTokens {
        access_token: tokens.access_token,
        refresh_token: tokens.refresh_token,
        expires_in: tokens.expires_in,
        scope: tokens.scope,
    }
}

fn discovery_failure(e: DiscoveryError) -> DiscoveryFailure {
    match e {
        DiscoveryError::NotProtected => DiscoveryFailure::NotProtected,
        DiscoveryError::Refused {
            source: HttpError::Refused(refused),
            ..
        } => DiscoveryFailure::Refused(refused),
        e => DiscoveryFailure::Failed(e.to_string()),
    }
}

#[async_trait]
impl AuthorizationServers for HttpAuthorizationServers {
    async fn discover(&self, url: &str) -> Result<OAuthServer, DiscoveryFailure> {
        let url = reqwest::Url::parse(url)
            .map_err(|e| DiscoveryFailure::Failed(format!("the URL does not parse: {e}")))?;
        discover(&self.http, &url).await.map_err(discovery_failure)
    }

    async fn register(
        &self, server: &OAuthServer, redirect_uri: &str, client_name: &str,
    ) -> Result<(String, Option<String>), DiscoveryFailure> {
        let client = client::register(&self.http, server, redirect_uri, client_name)
            .await
            .map_err(|e| match e {
                OAuthError::Unreachable(HttpError::Refused(refused)) => {
                    DiscoveryFailure::Refused(refused)
                }
                e => DiscoveryFailure::Failed(format!("registering the service failed: {e}")),
            })?;
        Ok((client.client_id, client.client_secret))
    }

    fn authorization(
        &self, access: &OAuthAccess, redirect_uri: &str,
    ) -> Result<AuthorizationRequest, TokenError> {
        let (server, client) = (&access.server, identity(&access.client, None));
        let request = client::authorization(server, &client, redirect_uri, &server.scopes)
            .map_err(token_error)?;
        Ok(AuthorizationRequest {
            url: request.url,
            state: request.state,
            pkce_verifier: request.pkce_verifier,
        })
    }

    async fn exchange_code(
        &self, access: &OAuthAccess, client_secret: Option<&str>, redirect_uri: &str, code: &str,
        verifier: &str,
    ) -> Result<IssuedTokens, TokenError> {
        let client = identity(&access.client, client_secret);
        client::exchange_code(
            &self.http,
            &access.server,
            &client,
            redirect_uri,
            code,
            verifier,
        )
        .await
        .map(issued)
        .map_err(token_error)
    }
}
