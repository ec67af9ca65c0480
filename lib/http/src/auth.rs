//! The `/api/auth/` routes: who is signed in and where they belong, switching organisation, and
//! signing out. The cookie rules (`Secure`, lifetime) are in [`crate::cookie`].

use axum::extract::{RawQuery, State};
use axum::http::HeaderValue;
use axum::http::StatusCode;
use axum::http::header::SET_COOKIE;
use axum::http::header::{CACHE_CONTROL, LOCATION};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use knowledge_core::CoreError;
use knowledge_core::ids::OrgId;

use knowledge_core::clock::{Clock, SystemClock};
use knowledge_core::service::Principal;

use crate::cookie::{CookieClaims, clear_cookie_header, now_secs};
use crate::error::ApiError;
use crate::extract::QueryParams;
use crate::extract::{JsonBody, Member};
use crate::return_to::ReturnTo;
use crate::routes::ApiErrors;
use crate::state::SessionApi;
use crate::wire::{AccountView, Done, SwitchOrgRequest, SwitchedOrg};

/// `response` with `cookie` as a `Set-Cookie`. The value is the service's own, never the
/// client's.
pub(crate) fn with_cookie(mut response: Response, cookie: &str) -> Result<Response, ApiError> {
    let value = HeaderValue::from_str(cookie).map_err(CoreError::internal)?;
    response.headers_mut().append(SET_COOKIE, value);
    Ok(response)
}

/// The end of every sign-in: a `303 See Other` to `return_to` that sets a fresh session cookie
/// for `p`, signed in now.
pub(crate) fn signed_in_redirect(
    app: &SessionApi, p: &Principal, return_to: &ReturnTo,
) -> Result<Response, ApiError> {
    let now = now_secs();
    let expires_at = app.config.lifetime.expiry(now, now);
    let cookie = app
        .session_cookie(&p.user, &p.org, SystemClock.now(), expires_at)
        .map_err(CoreError::internal)?;
    with_cookie(see_other(return_to.as_str())?, &cookie)
}

/// A `303 See Other` to `location` (a path of this application, or an identity provider's URL
/// built from its configuration; never a value the client sent), never cached.
pub(crate) fn see_other(location: &str) -> Result<Response, ApiError> {
    let mut response = StatusCode::SEE_OTHER.into_response();
    let headers = response.headers_mut();
    let location = HeaderValue::from_str(location).map_err(CoreError::internal)?;
    headers.insert(LOCATION, location);
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(response)
}

/// Who is signed in, the organisation they act in, and every organisation they belong to.
#[utoipa::path(get, path = "/api/auth/me", operation_id = "me",
    responses((status = 200, description = "The signed-in member.", body = AccountView), ApiErrors))]
pub async fn me(Member { app, p }: Member) -> Result<Json<AccountView>, ApiError> {
    Ok(Json(app.service.account(&p).await?.into()))
}

/// Sign out everywhere: every cookie of the person, in every organisation and on every server,
/// stops working at once; this one is also cleared.
#[utoipa::path(post, path = "/api/auth/logout", operation_id = "logout",
    responses((status = 200, body = Done, description = "Signed out; `Set-Cookie` clears the cookie.",
        headers(("Set-Cookie" = String, description = "The cleared session cookie"))), ApiErrors))]
pub async fn logout(
    State(app): State<SessionApi>, Extension(claims): Extension<CookieClaims>,
) -> Result<Response, ApiError> {
    app.service.sign_out(&claims.user, &claims.org).await?;
    let cleared = clear_cookie_header(app.config.cookie_name(), app.config.secure_cookies());
    with_cookie(Json(Done::OK).into_response(), &cleared)
}

/// Act in another organisation the person belongs to. The new cookie keeps the sign-in time
/// and expires when the current one does, so switching never extends a sign-in.
#[utoipa::path(post, path = "/api/auth/switch-org", operation_id = "switchOrg",
    request_body = SwitchOrgRequest,
    responses((status = 200, body = SwitchedOrg,
        description = "The organisation is active; `Set-Cookie` carries the new cookie.",
        headers(("Set-Cookie" = String, description = "The session cookie for the organisation"))),
        ApiErrors))]
pub async fn switch_org(
    State(app): State<SessionApi>, Extension(claims): Extension<CookieClaims>,
    JsonBody(body): JsonBody<SwitchOrgRequest>,
) -> Result<Response, ApiError> {
    let org = OrgId::try_from(body)?;
    let p = (app.service)
        .switch_org(claims.user, org, claims.signed_in_at)
        .await?;
    let cookie = app
        .session_cookie(&p.user, &p.org, claims.signed_in_at, claims.expires_at)
        .map_err(CoreError::internal)?;
    let body = SwitchedOrg {
        ok: true,
        org_id: p.org.to_string(),
    };
    with_cookie(Json(body).into_response(), &cookie)
}

/// Sign in with a single-use link (printed by the local service): sets the session cookie
/// and sends the browser to `returnTo`, a path of this application (`/` by default). The link
/// is used up whatever the outcome, except for a refused `returnTo`, checked first.
#[utoipa::path(get, path = "/api/auth/link", operation_id = "signInWithLink",
    params(("token" = String, Query, description = "The single-use secret the link carries"),
        ("returnTo" = Option<String>, Query, description = "A path of this application to go to")),
    responses((status = 303, description = "Signed in; `Set-Cookie` carries the cookie.",
        headers(("Set-Cookie" = String, description = "The session cookie"),
            ("Location" = String, description = "`returnTo`, or `/`"))), ApiErrors))]
pub async fn sign_in_with_link(
    State(app): State<SessionApi>, RawQuery(q): RawQuery,
) -> Result<Response, ApiError> {
    let q = QueryParams::parse(q.as_deref());
    let return_to = ReturnTo::try_from(q.get("returnTo").unwrap_or("/"))?;
    let secret = q.get("token").ok_or(CoreError::Unauthenticated)?;
    let p = app.service.redeem_sign_in_link(secret).await?;
    signed_in_redirect(&app, &p, &return_to)
}
