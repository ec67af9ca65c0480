//! [`TokenEndpoint`] over HTTP: the vault's refreshes and revocations, sent to an integration's
//! authorization server with [`crate::client`]'s requests through [`BoundedHttp`].

use async_trait::async_trait;
use knowledge_core::domain::{OAuthClient, OAuthServer};
use knowledge_core::ports::{IssuedTokens, TokenEndpoint, TokenError};

use crate::client::{self, ClientIdentity, OAuthError};
use crate::discovery::Discovered;
use crate::http::{BoundedHttp, HttpError};

/// The token endpoints of every integration's authorization server.
#[derive(Clone)]
pub struct HttpTokenEndpoint {
    http: BoundedHttp,
}

impl HttpTokenEndpoint {
    pub fn new(http: BoundedHttp) -> Self {
        Self { http }
    }
}

/// `server` as discovery found it, for the requests of [`crate::client`].
pub fn discovered(server: &OAuthServer) -> Discovered {
    Discovered {
        resource: server.resource.clone(),
        issuer: server.issuer.clone(),
        authorization_endpoint: server.authorization_endpoint.clone(),
        token_endpoint: server.token_endpoint.clone(),
        registration_endpoint: server.registration_endpoint.clone(),
        revocation_endpoint: server.revocation_endpoint.clone(),
        scopes: server.scopes.clone(),
        client_id_metadata_document_supported: false,
        iss_parameter_supported: server.iss_parameter_supported,
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
impl TokenEndpoint for HttpTokenEndpoint {
    async fn refresh(
        &self, server: &OAuthServer, client_secret: Option<&str>, refresh_token: &str,
    ) -> Result<IssuedTokens, TokenError> {
        let client = identity(&server.client, client_secret);
        let found = discovered(server);
        let tokens = client::refresh(&self.http, &found, &client, refresh_token, &server.scopes)
            .await
            .map_err(token_error)?;
        Ok(issued(tokens))
    }

    async fn revoke(
        &self, server: &OAuthServer, client_secret: Option<&str>, token: &str,
    ) -> Result<(), TokenError> {
        let client = identity(&server.client, client_secret);
        client::revoke(&self.http, &discovered(server), &client, token)
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
