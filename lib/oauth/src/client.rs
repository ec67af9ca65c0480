//! The OAuth 2 client of one discovered authorization server: Dynamic Client Registration
//! (RFC 7591), the authorization URL with PKCE S256, `state` and `resource` (RFC 8707), the code
//! exchange, the refresh, and revocation (RFC 7009). Requests go through [`BoundedHttp`]; a client
//! authenticates with its secret in the request body (`client_secret_post`), or with its id
//! alone as a public client. Nothing here stores anything: the caller seals and keeps what it
//! must (the registered client, the PKCE verifier and `state` until the callback, the tokens).

use std::time::Duration;

use knowledge_core::domain::OAuthServer;
use oauth2::basic::{BasicClient, BasicErrorResponseType, BasicRequestTokenError};
use oauth2::{
    AuthType, AuthUrl, AuthorizationCode, ClientId, ClientSecret, CsrfToken, EndpointMaybeSet,
    EndpointNotSet, EndpointSet, PkceCodeChallenge, PkceCodeVerifier, RedirectUrl, RefreshToken,
    RevocationUrl, Scope, TokenResponse, TokenUrl,
};
use serde::Deserialize;

use crate::http::{BoundedHttp, HttpError};

/// The service's identity at an authorization server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientIdentity {
    pub client_id: String,
    /// `None` for a public client.
    pub client_secret: Option<String>,
}

/// Where to send the browser to authorize, and what the callback must be checked and completed
/// with.
#[derive(Debug, Clone)]
pub struct Authorization {
    pub url: String,
    /// The `state` the callback must bring back.
    pub state: String,
    /// The PKCE verifier the code exchange proves possession with.
    pub pkce_verifier: String,
}

/// Tokens an authorization server issued.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tokens {
    pub access_token: String,
    /// A new refresh token, when the server issued one (a rotated one replaces the old).
    pub refresh_token: Option<String>,
    /// How long the access token lasts, when the server said.
    pub expires_in: Option<Duration>,
    /// The scopes granted, when the server said.
    pub scope: Option<String>,
}

/// Why an exchange with the authorization server failed.
#[derive(Debug, thiserror::Error)]
pub enum OAuthError {
    /// The grant (a code or a refresh token) is invalid, expired, revoked or used already: the
    /// connection must be made again.
    #[error("the authorization server refused the grant: {0}")]
    InvalidGrant(String),
    /// The server refused the request for another reason (an OAuth error), or the client
    /// (`invalid_client`).
    #[error("the authorization server refused the request: {0}")]
    Refused(String),
    /// The server could not be reached, failed (5xx), stalled, or answered too much.
    #[error("the authorization server could not be reached")]
    Unreachable(#[source] HttpError),
    /// The server's answer is not what the specification says.
    #[error("the authorization server's answer is malformed: {0}")]
    Malformed(String),
    /// The server offers no such endpoint (registration, revocation), or one is not a URL.
    #[error("the authorization server offers no {0}")]
    NotOffered(&'static str),
}

impl From<BasicRequestTokenError<HttpError>> for OAuthError {
    fn from(e: BasicRequestTokenError<HttpError>) -> Self {
        match e {
            oauth2::RequestTokenError::ServerResponse(r) => {
                let text = r.to_string();
                match r.error() {
                    BasicErrorResponseType::InvalidGrant => Self::InvalidGrant(text),
                    _ => Self::Refused(text),
                }
            }
            oauth2::RequestTokenError::Request(e) => Self::Unreachable(e),
            oauth2::RequestTokenError::Parse(e, _) => Self::Malformed(e.to_string()),
            oauth2::RequestTokenError::Other(text) => Self::Malformed(text),
        }
    }
}

type Configured =
    BasicClient<EndpointSet, EndpointNotSet, EndpointNotSet, EndpointMaybeSet, EndpointSet>;

/// The oauth2 client of `server` as `client`, sending its redirect URI `redirect_uri` (a
/// refresh sends none).
fn configured(
    server: &OAuthServer, client: &ClientIdentity, redirect_uri: Option<&str>,
) -> Result<Configured, OAuthError> {
    let url = |what| move |_| OAuthError::NotOffered(what);
    let revocation = match &server.revocation_endpoint {
        Some(url_text) => Some(RevocationUrl::new(url_text.clone()).map_err(url("revocation"))?),
        None => None,
    };
    let mut configured = BasicClient::new(ClientId::new(client.client_id.clone()))
        .set_auth_type(AuthType::RequestBody)
        .set_auth_uri(
            AuthUrl::new(server.authorization_endpoint.clone()).map_err(url("authorization"))?,
        )
        .set_token_uri(TokenUrl::new(server.token_endpoint.clone()).map_err(url("token endpoint"))?)
        .set_revocation_url_option(revocation);
    if let Some(redirect_uri) = redirect_uri {
        let redirect = RedirectUrl::new(redirect_uri.to_owned()).map_err(url("redirect URI"))?;
        configured = configured.set_redirect_uri(redirect);
    }
    if let Some(secret) = &client.client_secret {
        configured = configured.set_client_secret(ClientSecret::new(secret.clone()));
    }
    Ok(configured)
}

fn tokens(answer: &oauth2::basic::BasicTokenResponse) -> Tokens {
    Tokens {
        access_token: answer.access_token().secret().clone(),
        refresh_token: answer.refresh_token().map(|t| t.secret().clone()),
        expires_in: answer.expires_in(),
        scope: answer.scopes().map(|scopes| {
            scopes
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(" ")
        }),
    }
}

/// The URL to send the browser to, asking `scopes` of `server` for `client`, to come back to
/// `redirect_uri`: the authorization code flow with PKCE S256, a random `state`, and the
/// resource (RFC 8707). Errors: an endpoint is not a URL (`NotOffered`).
pub fn authorization(
    server: &OAuthServer, client: &ClientIdentity, redirect_uri: &str, scopes: &[String],
) -> Result<Authorization, OAuthError> {
    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    let (url, state) = configured(server, client, Some(redirect_uri))?
        .authorize_url(CsrfToken::new_random)
        .set_pkce_challenge(challenge)
        .add_scopes(scopes.iter().cloned().map(Scope::new))
        .add_extra_param("resource", server.resource.clone())
        .url();
    Ok(Authorization {
        url: url.to_string(),
        state: state.secret().clone(),
        pkce_verifier: verifier.secret().clone(),
    })
}

/// Exchanges the authorization `code` the callback brought for tokens, proving the PKCE
/// `verifier` and naming the resource. Errors: `InvalidGrant` for a code that is wrong, used
/// or expired; the others of [`OAuthError`].
pub async fn exchange_code(
    http: &BoundedHttp, server: &OAuthServer, client: &ClientIdentity, redirect_uri: &str,
    code: &str, verifier: &str,
) -> Result<Tokens, OAuthError> {
    let answer = configured(server, client, Some(redirect_uri))?
        .exchange_code(AuthorizationCode::new(code.to_owned()))
        .set_pkce_verifier(PkceCodeVerifier::new(verifier.to_owned()))
        .add_extra_param("resource", server.resource.clone())
        .request_async(http)
        .await?;
    Ok(tokens(&answer))
}

/// Exchanges `refresh_token` for new tokens, for `scopes` and the resource. A server that
/// rotates refresh tokens returns a new one, which replaces this one: this one must never be
/// sent again. Errors: `InvalidGrant` when the refresh token is no longer good (revoked,
/// expired, or reused); the others of [`OAuthError`].
pub async fn refresh(
    http: &BoundedHttp, server: &OAuthServer, client: &ClientIdentity, refresh_token: &str,
    scopes: &[String],
) -> Result<Tokens, OAuthError> {
    let token = RefreshToken::new(refresh_token.to_owned());
    let answer = configured(server, client, None)?
        .exchange_refresh_token(&token)
        .add_scopes(scopes.iter().cloned().map(Scope::new))
        .add_extra_param("resource", server.resource.clone())
        .request_async(http)
        .await?;
    Ok(tokens(&answer))
}

/// Revokes `refresh_token` (and with it, at most servers, the access tokens issued from it) at
/// the server's revocation endpoint (RFC 7009), authenticating as `client` in the body. A plain
/// form POST rather than oauth2's, which refuses an `http` endpoint (a server on a laptop).
/// Errors: `NotOffered` when the server has no revocation endpoint; `Refused` for any answer
/// but 200; `Unreachable`.
pub async fn revoke(
    http: &BoundedHttp, server: &OAuthServer, client: &ClientIdentity, refresh_token: &str,
) -> Result<(), OAuthError> {
    let endpoint =
        (server.revocation_endpoint.as_deref()).ok_or(OAuthError::NotOffered("revocation"))?;
    let body = {
        let mut form = form_urlencoded::Serializer::new(String::new());
        form.append_pair("token", refresh_token)
            .append_pair("token_type_hint", "refresh_token")
            .append_pair("client_id", &client.client_id);
        if let Some(secret) = &client.client_secret {
            form.append_pair("client_secret", secret);
        }
        form.finish()
    };
    let request = oauth2::http::Request::post(endpoint)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(body.into_bytes())
        .map_err(|_| OAuthError::NotOffered("revocation"))?;
    let answer = http.send(request).await.map_err(OAuthError::Unreachable)?;
    match answer.status().as_u16() {
        200 => Ok(()),
        status => Err(OAuthError::Refused(format!("revocation answered {status}"))),
    }
}

/// What a registration answered (RFC 7591 §3.2.1).
#[derive(Deserialize)]
struct Registered {
    client_id: String,
    #[serde(default)]
    client_secret: Option<String>,
}

/// Registers the service with `server` (RFC 7591) as `client_name`, for the authorization
/// code and refresh token grants, with the one redirect URI `redirect_uri`. The caller keeps
/// the result (sealed) and reuses it for every connection: a registration per connect would
/// pile clients up at the server. Errors: `NotOffered` when the server offers no registration;
/// `Refused` when it refuses; the others of [`OAuthError`].
pub async fn register(
    http: &BoundedHttp, server: &OAuthServer, redirect_uri: &str, client_name: &str,
) -> Result<ClientIdentity, OAuthError> {
    let endpoint =
        (server.registration_endpoint.as_deref()).ok_or(OAuthError::NotOffered("registration"))?;
    let body = serde_json::json!({
        "client_name": client_name,
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "client_secret_post",
        "scope": server.scopes.join(" "),
    });
    let request = oauth2::http::Request::post(endpoint)
        .header("content-type", "application/json")
        .header("accept", "application/json")
        .body(body.to_string().into_bytes())
        .map_err(|_| OAuthError::NotOffered("registration"))?;
    let answer = http.send(request).await.map_err(OAuthError::Unreachable)?;
    if !answer.status().is_success() {
        let text = String::from_utf8_lossy(answer.body())
            .chars()
            .take(200)
            .collect();
        return Err(OAuthError::Refused(text));
    }
    let registered: Registered =
        serde_json::from_slice(answer.body()).map_err(|e| OAuthError::Malformed(e.to_string()))?;
    Ok(ClientIdentity {
        client_id: registered.client_id,
        client_secret: registered.client_secret,
    })
}
