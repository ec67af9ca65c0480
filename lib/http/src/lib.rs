//! The HTTP interface of the service: one axum [`Router`] that the local binary serves with
//! `axum::serve` and the Lambda functions hand to `lambda_http::run`.

pub mod cookie;
pub mod error;
pub mod guard;
pub mod routes;

use std::sync::Arc;

use axum::Router;
use axum::middleware::from_fn_with_state;
use axum::routing::{get, post};
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

/// The session endpoints and the organisation switch.
pub fn router(state: AppState) -> Router {
    let sessions = Router::new()
        .route(
            "/api/managed-agents/session",
            post(routes::create_session).delete(routes::delete_session),
        )
        .route("/api/managed-agents/message", post(routes::post_message))
        .route("/api/managed-agents/transcript", get(routes::transcript))
        .route("/api/managed-agents/sessions", get(routes::list_sessions))
        .route("/api/managed-agents/cancel", post(routes::cancel))
        .route_layer(from_fn_with_state(state.clone(), guard::member));
    let auth = Router::new()
        .route("/api/auth/switch-org", post(routes::switch_org))
        .route_layer(from_fn_with_state(state.clone(), guard::signed_in));
    sessions
        .merge(auth)
        .fallback(routes::route_not_found)
        .method_not_allowed_fallback(routes::method_not_allowed)
        .layer(axum::middleware::from_fn(guard::log))
        .with_state(state)
}
