//! The HTTP interface of the service: one axum [`Router`] that the local binary serves with
//! `axum::serve` and the Lambda functions hand to `lambda_http::run`.

pub mod cookie;
pub mod error;
pub mod guard;
pub mod routes;

use std::sync::Arc;

use axum::Router;
use axum::middleware::from_fn_with_state;
use axum::routing::{any, get, post};
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

/// Everything a handler needs.
#[derive(Clone)]
pub struct AppState {
    pub service: Service,
    pub signer: Arc<CookieSigner>,
    pub config: Arc<HttpConfig>,
}

/// The session endpoints and the organisation switch. Every request under
/// `/api/managed-agents/` passes the member guard first, unknown paths and methods included, so
/// without a valid cookie the answer is always 401.
pub fn router(state: AppState) -> Router {
    let sessions = Router::new()
        .route(
            "/session",
            post(routes::create_session).delete(routes::delete_session),
        )
        .route("/message", post(routes::post_message))
        .route("/transcript", get(routes::transcript))
        .route("/sessions", get(routes::list_sessions))
        .route("/cancel", post(routes::cancel))
        .fallback(routes::route_not_found)
        .method_not_allowed_fallback(routes::method_not_allowed)
        .layer(from_fn_with_state(state.clone(), guard::member));
    let auth = Router::new()
        .route("/api/auth/switch-org", post(routes::switch_org))
        .route_layer(from_fn_with_state(state.clone(), guard::signed_in));
    // The nested router's fallback does not see the prefix with a bare trailing slash.
    let bare = any(routes::route_not_found).layer(from_fn_with_state(state.clone(), guard::member));
    Router::new()
        .nest("/api/managed-agents", sessions)
        .route("/api/managed-agents/", bare)
        .merge(auth)
        .fallback(routes::route_not_found)
        .method_not_allowed_fallback(routes::method_not_allowed)
        .layer(axum::middleware::from_fn(guard::log))
        .with_state(state)
}
