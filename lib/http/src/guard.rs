//! What every request passes before its handler: the cookie check (401), the membership
//! re-check, the `Origin` check on POST and DELETE (403), and the body rules (415, 413, 400).

use axum::extract::{Request, State};
use axum::http::header::{CACHE_CONTROL, CONTENT_LENGTH, ORIGIN, TRANSFER_ENCODING};
use axum::http::{HeaderMap, HeaderValue, Method};
use axum::middleware::Next;
use axum::response::Response;
use knowledge_core::CoreError;

use crate::cookie::CookieClaims;
use crate::error::ApiError;
use crate::extract::is_json;
use crate::state::SessionApi;

/// Logs every request's method, path (never the query or headers, which can carry cursors and
/// cookies), status and latency.
pub async fn log(req: Request, next: Next) -> Response {
    let (method, path) = (req.method().clone(), req.uri().path().to_owned());
    let started = std::time::Instant::now();
    let response = next.run(req).await;
    tracing::info!(
        %method,
        path,
        status = response.status().as_u16(),
        ms = started.elapsed().as_secs_f64() * 1e3,
        "request"
    );
    response
}

/// Session routes: a valid cookie of a current member, then the origin and body-type checks.
/// Puts the [`knowledge_core::service::Principal`] into the request's extensions.
pub async fn member(
    State(app): State<SessionApi>, mut req: Request, next: Next,
) -> Result<Response, ApiError> {
    let claims = claims(&app, &req)?;
    let principal = (app.service)
        .authenticate(claims.user, claims.org, claims.issued_at)
        .await?;
    check_mutation(&app, req.method(), req.headers())?;
    req.extensions_mut().insert(principal);
    Ok(no_store(next.run(req).await))
}

/// The organisation switch and sign-out: a valid cookie (the switch checks membership of the
/// target; signing out needs none), then the origin and body-type checks. Puts the
/// [`crate::cookie::CookieClaims`] into the extensions.
pub async fn signed_in(
    State(app): State<SessionApi>, mut req: Request, next: Next,
) -> Result<Response, ApiError> {
    let claims = claims(&app, &req)?;
    check_mutation(&app, req.method(), req.headers())?;
    req.extensions_mut().insert(claims);
    Ok(no_store(next.run(req).await))
}

/// What the request's session cookie says. Errors: `Unauthenticated` without a valid one.
fn claims(app: &SessionApi, req: &Request) -> Result<CookieClaims, ApiError> {
    let claims = app.signer.from_headers(req.headers());
    Ok(claims.ok_or(CoreError::Unauthenticated)?)
}

fn no_store(mut response: Response) -> Response {
    response
        .headers_mut()
        .insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// POST and DELETE must come from the application's origin (the CSRF guard) and send any body
/// as JSON.
fn check_mutation(app: &SessionApi, method: &Method, headers: &HeaderMap) -> Result<(), ApiError> {
    if method != Method::POST && method != Method::DELETE {
        return Ok(());
    }
    let origin_ok = headers
        .get(ORIGIN)
        .and_then(|o| o.to_str().ok())
        .is_some_and(|o| o == app.config.app_origin);
    if !origin_ok {
        return Err(ApiError::OriginForbidden);
    }
    if has_body(headers) && !is_json(headers) {
        return Err(ApiError::UnsupportedMediaType);
    }
    Ok(())
}

fn has_body(headers: &HeaderMap) -> bool {
    headers.contains_key(TRANSFER_ENCODING)
        || headers
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim() != "0")
}
