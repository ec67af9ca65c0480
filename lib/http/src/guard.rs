//! What every request passes before its handler: the cookie check (401), the `Origin` check on POST, PUT, PATCH and DELETE (403), and the body rules (415, 413, 400);
//! and after it, the renewal of a session cookie that is due for one.

use axum::extract::{Request, State};
use axum::http::header::{CACHE_CONTROL, CONTENT_LENGTH, ORIGIN, SET_COOKIE, TRANSFER_ENCODING};
use axum::http::{HeaderMap, HeaderValue, Method};
use axum::middleware::Next;
use axum::response::Response;
use knowledge_core::CoreError;
use knowledge_core::error::Chain;
use knowledge_core::service::SignedIn;

use crate::cookie::{CookieClaims, now_secs};
use crate::error::ApiError;
use crate::extract::is_json;
use crate::state::SessionApi;

/// Session routes: a valid session cookie, then the origin and body-type checks. Puts who the
/// cookie names, a [`SignedIn`], into the request's extensions; the membership is checked by
/// the handler, through the [`crate::extract::Member`] extractor or in the first read of the
/// use case it calls (so that a hot route reads it with what it needs, in one round trip).
/// A successful response renews a cookie that is due for it.
pub async fn member(
    State(app): State<SessionApi>, mut req: Request, next: Next,
) -> Result<Response, ApiError> {
    let claims = claims(&app, &req)?;
    check_mutation(&app, req.method(), req.headers())?;
    req.extensions_mut().insert(SignedIn {
        user: claims.user.clone(),
        org: claims.org.clone(),
        signed_in_at: claims.signed_in_at,
    });
    let response = no_store(next.run(req).await);
    // Only an answered request renews: a success is always a member's (every handler checks
    // the membership before it succeeds), whereas a 400 may be a removed member's.
    if !response.status().is_success() {
        return Ok(response);
    }
    Ok(renewed(&app, &claims, response))
}

/// `response` with a renewed session cookie when `claims` are due for one (see
/// [`crate::cookie::Lifetime::renewal`]) and the handler set no cookie of its own. A failure
/// to sign is logged: the current cookie still works.
fn renewed(app: &SessionApi, claims: &CookieClaims, mut response: Response) -> Response {
    let Some(expires_at) = app.config.lifetime.renewal(claims, now_secs()) else {
        return response;
    };
    if response.headers().contains_key(SET_COOKIE) {
        return response;
    }
    let renewed = app
        .session_cookie(&claims.user, &claims.org, claims.signed_in_at, expires_at)
        .map_err(CoreError::internal)
        .and_then(|cookie| HeaderValue::from_str(&cookie).map_err(CoreError::internal));
    match renewed {
        Ok(value) => {
            response.headers_mut().insert(SET_COOKIE, value);
        }
        Err(e) => tracing::error!(error = %Chain(&e), "could not renew the session cookie"),
    }
    response
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
    let claims = (app.signer).from_headers(req.headers(), app.config.cookie_name());
    Ok(claims.ok_or(CoreError::Unauthenticated)?)
}

fn no_store(mut response: Response) -> Response {
    response
        .headers_mut()
        .insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// POST, PUT, PATCH and DELETE must come from the application's origin (the CSRF guard) and
/// send any body as JSON.
fn check_mutation(app: &SessionApi, method: &Method, headers: &HeaderMap) -> Result<(), ApiError> {
    let writes = [Method::POST, Method::PUT, Method::PATCH, Method::DELETE];
    if !writes.contains(method) {
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
