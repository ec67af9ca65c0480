//! Connections to OAuth-protected integrations: a member lists theirs, connects and
//! disconnects (`/api/integrations`); the authorization server sends the browser back to the
//! organisation's and integration's own callback (`/api/oauth/callback/{org}/{name}`); the
//! service's Client ID Metadata Document is served where servers fetch it
//! (`/api/oauth/clients/{org}/{name}.json`). An admin connects the organisation's account
//! through the admin routes, with the same use cases.

use axum::Json;
use axum::extract::{Path, RawQuery, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use knowledge_core::CoreError;
use knowledge_core::clock::Timestamp;
use knowledge_core::connections::{
    CONNECT_TTL_MS, CallbackParams, ConnectionKind, ConnectionState, Connections, Started,
    client_document_url,
};
use knowledge_core::domain::ClientRegistration;
use knowledge_core::ids::OrgId;
use serde::Serialize;
use serde_json::json;
use utoipa::ToSchema;

use crate::auth::{for_the_browser, navigation, see_other, with_cookie};
use crate::cookie::{clear_cookie_header, cookie_value, now_secs, set_cookie_header};
use crate::error::{ApiError, ErrorBody};
use crate::extract::{Member, QueryParams};
use crate::routes::ApiErrors;
use crate::state::SessionApi;
use crate::wire::Done;

/// One OAuth integration as the member sees it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionView {
    pub integration: String,
    /// `member` (each member connects their own account) or `organisation` (an admin
    /// connected the organisation's, which everyone's questions use).
    pub kind: String,
    /// The authorization server: whose account it is.
    pub issuer: String,
    /// `not_connected`, `connected` or `needs_reconnect`.
    pub state: String,
    /// Why it needs reconnecting: `refresh_refused`, `refresh_interrupted`, `expired` or
    /// `token_rejected`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connected_by: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connected_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ConnectionList {
    pub connections: Vec<ConnectionView>,
}

/// Where to send the browser: the authorization server's page.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConnectStarted {
    pub authorization_url: String,
}

impl From<knowledge_core::connections::ConnectionView> for ConnectionView {
    fn from(v: knowledge_core::connections::ConnectionView) -> Self {
        let (state, reason) = match v.state {
            ConnectionState::NotConnected => ("not_connected", None),
            ConnectionState::Connected => ("connected", None),
            ConnectionState::NeedsReconnect(r) => ("needs_reconnect", Some(r.as_str().to_owned())),
        };
        Self {
            integration: v.integration,
            kind: kind_name(v.kind).to_owned(),
            issuer: v.issuer,
            state: state.to_owned(),
            reason,
            connected_by: v.connected_by.map(|u| u.to_string()),
            connected_at: v.connected_at.map(Timestamp::to_iso8601),
            scope: v.scope,
        }
    }
}

fn kind_name(kind: ConnectionKind) -> &'static str {
    match kind {
        ConnectionKind::Member => "member",
        ConnectionKind::Organisation => "organisation",
    }
}

pub(crate) fn connections(app: &SessionApi) -> Result<&Connections, ApiError> {
    // The routers serve these routes only with the connections assembled.
    let connections = app.connections.as_ref();
    Ok(connections.ok_or_else(|| CoreError::internal("connections are not assembled"))?)
}

/// Your connections: each OAuth integration of the organisation, whether it is connected, as
/// whom, since when, and whether it needs reconnecting. Never a token.
#[utoipa::path(get, path = "/api/integrations", operation_id = "listConnections",
    responses((status = 200, description = "The organisation's OAuth integrations.", body = ConnectionList), ApiErrors))]
pub async fn list(Member { app, p }: Member) -> Result<Json<ConnectionList>, ApiError> {
    let views = connections(&app)?.list(&p.org, &p.user).await?;
    Ok(Json(ConnectionList {
        connections: views.into_iter().map(ConnectionView::from).collect(),
    }))
}

/// Connect your own account to an integration each member connects: answers where to send the
/// browser (the authorization server), and sets the cookie that binds the connect to this
/// browser. 409 `wrong_kind` for an integration an admin connects for everyone.
#[utoipa::path(post, path = "/api/integrations/{name}/connect", operation_id = "connect",
    params(("name" = String, Path, description = "The integration's name")),
    responses((status = 200, description = "Go to `authorizationUrl`.", body = ConnectStarted,
        headers(("Set-Cookie" = String, description = "The connect in progress, for ten minutes"))),
        (status = 409, description = "`wrong_kind`: an admin connects this integration for everyone.",
        body = ErrorBody), ApiErrors))]
pub async fn connect(
    Member { app, p }: Member, Path(name): Path<String>,
) -> Result<Response, ApiError> {
    let started = connections(&app)?
        .start(
            &p.org,
            &p.user,
            p.user_name.as_deref(),
            &name,
            ConnectionKind::Member,
        )
        .await?;
    started_response(&app, started)
}

/// The answer to a connect begun: the URL, and the browser's cookie.
pub(crate) fn started_response(app: &SessionApi, started: Started) -> Result<Response, ApiError> {
    let config = &app.config;
    let expires_at = now_secs() + (CONNECT_TTL_MS / 1000) as u64;
    let cookie = set_cookie_header(
        connect_cookie_name(app),
        &started.browser_secret,
        expires_at,
        config.secure_cookies(),
    );
    let body = Json(ConnectStarted {
        authorization_url: started.url,
    });
    with_cookie(body.into_response(), &cookie)
}

fn connect_cookie_name(app: &SessionApi) -> &'static str {
    match app.config.secure_cookies() {
        true => "__Host-ks_connect",
        false => "ks_connect",
    }
}

/// Disconnect your own account from an integration: its tokens are deleted, and revoked at
/// the authorization server where it offers revocation. 404 when you have no connection.
#[utoipa::path(delete, path = "/api/integrations/{name}/connection", operation_id = "disconnect",
    params(("name" = String, Path, description = "The integration's name")),
    responses((status = 200, description = "Disconnected.", body = Done), ApiErrors))]
pub async fn disconnect(
    Member { app, p }: Member, Path(name): Path<String>,
) -> Result<Json<Done>, ApiError> {
    (connections(&app)?)
        .disconnect(
            &p.org,
            &p.user,
            p.user_name.as_deref(),
            &name,
            ConnectionKind::Member,
        )
        .await?;
    Ok(Json(Done::OK))
}

/// Where an integration's authorization server sends the browser back (the redirect URI the
/// service registered there): the connect in progress is taken (single use), and must be this
/// organisation's and integration's and this browser's; `iss` (RFC 9207) must be the server's.
/// Only then is the code exchanged and the account connected. A browser goes on to
/// `/connections` (an admin's connect of the organisation's account to `/admin/integrations`),
/// with `connected=<name>` or `connect_error=<code>`.
#[utoipa::path(get, path = "/api/oauth/callback/{org}/{name}", operation_id = "connectCallback",
    params(("org" = String, Path, description = "The organisation"),
        ("name" = String, Path, description = "The integration"),
        ("state" = String, Query, description = "What the connect gave the server"),
        ("code" = Option<String>, Query, description = "The authorization code"),
        ("iss" = Option<String>, Query, description = "The server's issuer identifier (RFC 9207)"),
        ("error" = Option<String>, Query, description = "The server's refusal, instead of `code`")),
    responses((status = 303, description = "A browser's page: connected, on to the connections \
        page; or refused, on to it with `connect_error=<code>`.",
        headers(("Location" = String, description = "`/connections?connected=<name>`, \
        `/admin/integrations?connected=<name>` or `/connections?connect_error=<code>`"))),
        (status = 200, description = "Connected (a request that is not a browser's page).", body = Done),
        (status = 409, description = "`wrong_kind`: the connect was begun as the other kind of \
        connection (a request that is not a browser's page).", body = ErrorBody), ApiErrors))]
pub async fn callback(
    State(app): State<SessionApi>, Path((org, name)): Path<(String, String)>,
    RawQuery(q): RawQuery, headers: HeaderMap,
) -> Result<Response, ApiError> {
    let cleared = clear_cookie_header(connect_cookie_name(&app), app.config.secure_cookies());
    let q = QueryParams::parse(q.as_deref());
    let params = CallbackParams {
        state: q.get("state"),
        code: q.get("code"),
        iss: q.get("iss"),
        error: q.get("error"),
    };
    let secret = cookie_value(&headers, connect_cookie_name(&app));
    let outcome = connections(&app)?
        .finish(&org, &name, &params, secret)
        .await;
    let response = match (outcome, navigation(&headers)) {
        (Ok(kind), true) => {
            let page = match kind {
                ConnectionKind::Member => "/connections",
                ConnectionKind::Organisation => "/admin/integrations",
            };
            // The name is the path's, which the flow checked is this integration's.
            see_other(&format!("{page}?connected={}", url_safe(&name)))?
        }
        (Ok(_), false) => Json(Done::OK).into_response(),
        (Err(e), true) => {
            let code = ApiError::from(e).code();
            see_other(&format!("/connections?connect_error={code}"))?
        }
        (Err(e), false) => for_the_browser(&headers, Err(e.into())),
    };
    with_cookie(response, &cleared)
}

/// `name` if it is an integration name (`a-z 0-9 -`), else nothing: never echoed otherwise.
fn url_safe(name: &str) -> &str {
    match name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    {
        true => name,
        false => "",
    }
}

/// The service's Client ID Metadata Document for an organisation's integration, where its
/// authorization server takes the document's URL as the client id: names the one redirect URI.
/// 404 for any other integration.
#[utoipa::path(get, path = "/api/oauth/clients/{org}/{file}", operation_id = "clientMetadataDocument",
    params(("org" = String, Path, description = "The organisation"),
        ("file" = String, Path, description = "`<integration>.json`")),
    responses((status = 200, description = "The client's metadata (RFC 7591 fields).", body = Object), ApiErrors))]
pub async fn client_document(
    State(app): State<SessionApi>, Path((org, file)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let name = file
        .strip_suffix(".json")
        .ok_or(CoreError::NotFound("client"))?;
    let org = OrgId::parse(&org).map_err(|_| CoreError::NotFound("client"))?;
    let integration = connections(&app)?.integration_of(&org, name).await?;
    let documented = integration
        .oauth
        .as_ref()
        .is_some_and(|o| o.client.registration == ClientRegistration::MetadataDocument);
    if !documented {
        return Err(CoreError::NotFound("client").into());
    }
    let origin = &app.config.app_origin;
    let redirect_uri = connections(&app)?.redirect_uri(&org, name);
    Ok(Json(json!({
        "client_id": client_document_url(origin, &org, name),
        "client_name": "Knowledge",
        "client_uri": origin,
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    }))
    .into_response())
}
