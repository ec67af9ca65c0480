//! The HTTP interface of the service: one axum [`Router`] that the local binary serves (over
//! its own bounded HTTP/1.1 server, `knowledge_local::server`) and the Lambda functions hand to
//! `lambda_http::run`.

pub mod cookie;
pub mod edge;
pub mod error;
pub mod guard;
pub mod routes;
pub mod scim;

use std::sync::Arc;

use axum::Router;
use axum::middleware::from_fn_with_state;
use axum::routing::{MethodRouter, any, delete, get, post};
use knowledge_core::scim::Directory;
use knowledge_core::service::Service;

use crate::cookie::CookieSigner;

/// Settings of the HTTP layer.
#[derive(Debug, Clone)]
pub struct HttpConfig {
    /// The application's own origin (`scheme://host[:port]`); POST and DELETE must carry it.
    pub app_origin: String,
}

impl HttpConfig {
    /// Cookies get `Secure` whenever the application is served over HTTPS.
    pub fn secure_cookies(&self) -> bool {
        self.app_origin.starts_with("https://")
    }
}

/// What the session routes and the organisation switch run on: the use cases, the cookie
/// signer and the HTTP settings.
#[derive(Clone)]
pub struct SessionApi {
    pub service: Service,
    pub signer: Arc<CookieSigner>,
    pub config: Arc<HttpConfig>,
}

impl SessionApi {
    pub fn new(service: Service, signer: Arc<CookieSigner>, config: HttpConfig) -> Self {
        Self {
            service,
            signer,
            config: Arc::new(config),
        }
    }
}

/// What the SCIM routes run on: the directory, and the origin their resources' `location`s
/// are built on. No cookie signer: SCIM authenticates by bearer token.
#[derive(Clone)]
pub struct ScimApi {
    pub directory: Directory,
    pub config: Arc<HttpConfig>,
}

impl ScimApi {
    pub fn new(directory: Directory, config: HttpConfig) -> Self {
        Self {
            directory,
            config: Arc::new(config),
        }
    }
}

/// An endpoint of the interface; on AWS each is its own Lambda function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    CreateSession,
    Message,
    Transcript,
    ListSessions,
    Cancel,
    DeleteSession,
    SwitchOrg,
    /// Every SCIM route, under `/api/scim` and `/api/scim/v2`.
    Scim,
}

impl Endpoint {
    pub const ALL: [Endpoint; 8] = [
        Self::CreateSession,
        Self::Message,
        Self::Transcript,
        Self::ListSessions,
        Self::Cancel,
        Self::DeleteSession,
        Self::SwitchOrg,
        Self::Scim,
    ];

    /// The function's name in `functions/`, `template.yaml` (in PascalCase) and `events/`.
    pub fn function_name(self) -> &'static str {
        match self {
            Self::CreateSession => "create-session",
            Self::Message => "message",
            Self::Transcript => "transcript",
            Self::ListSessions => "list-sessions",
            Self::Cancel => "cancel",
            Self::DeleteSession => "delete-session",
            Self::SwitchOrg => "switch-org",
            Self::Scim => "scim",
        }
    }

    /// The path under `/api/managed-agents` and the handler, for the session endpoints.
    fn session_route(self) -> Option<(&'static str, MethodRouter<SessionApi>)> {
        Some(match self {
            Self::CreateSession => ("/session", post(routes::create_session)),
            Self::DeleteSession => ("/session", delete(routes::delete_session)),
            Self::Message => ("/message", post(routes::post_message)),
            Self::Transcript => ("/transcript", get(routes::transcript)),
            Self::ListSessions => ("/sessions", get(routes::list_sessions)),
            Self::Cancel => ("/cancel", post(routes::cancel)),
            Self::SwitchOrg | Self::Scim => return None,
        })
    }
}

/// Every route, as the local service serves them.
pub fn router(sessions: SessionApi, scim: ScimApi) -> Router {
    edge(session_routes(sessions, &Endpoint::ALL).merge(scim::routes(scim)))
}

/// The router of one Lambda function's session endpoint. Any other request is answered exactly
/// as the full router answers an unknown route (401 without a valid cookie, then 404 or 405):
/// every request under `/api/managed-agents/` passes the member guard first, unknown paths and
/// methods included.
pub fn session_function(sessions: SessionApi, endpoint: Endpoint) -> Router {
    edge(session_routes(sessions, &[endpoint]))
}

/// The router of the SCIM function. It holds no cookie signer, so a request outside the SCIM
/// routes (which API Gateway never sends it) is a plain 404.
pub fn scim_function(scim: ScimApi) -> Router {
    edge(scim::routes(scim))
}

/// The session routes of `endpoints`, behind the member guard, with the organisation switch
/// when it is among them.
fn session_routes(state: SessionApi, endpoints: &[Endpoint]) -> Router {
    let mut sessions = Router::new();
    for (path, handler) in endpoints.iter().filter_map(|e| e.session_route()) {
        // Routes on one path merge their methods.
        sessions = sessions.route(path, handler);
    }
    let sessions = sessions
        .fallback(routes::route_not_found)
        .method_not_allowed_fallback(routes::method_not_allowed)
        .layer(from_fn_with_state(state.clone(), guard::member));
    let mut app = Router::new().nest("/api/managed-agents", sessions);
    if endpoints.contains(&Endpoint::SwitchOrg) {
        app = app.merge(
            Router::new()
                .route("/api/auth/switch-org", post(routes::switch_org))
                .route_layer(from_fn_with_state(state.clone(), guard::signed_in)),
        );
    }
    // The nested router's fallback does not see the prefix with a bare trailing slash.
    let bare = any(routes::route_not_found).layer(from_fn_with_state(state.clone(), guard::member));
    app.route("/api/managed-agents/", bare).with_state(state)
}

/// What every request passes, whatever its route: the head limits and the request log; and the
/// answers to unknown routes outside the guarded prefixes.
fn edge(app: Router) -> Router {
    app.fallback(routes::route_not_found)
        .method_not_allowed_fallback(routes::method_not_allowed)
        .layer(axum::middleware::from_fn(edge::limit_head))
        .layer(axum::middleware::from_fn(guard::log))
}
