//! The `/api/auth/` routes: who is signed in and where they belong, switching organisation, and
//! signing out. The cookie rules (`Secure`, lifetime) are in [`crate::cookie`].

use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::http::header::ACCEPT;
use axum::http::header::SET_COOKIE;
use axum::http::header::{CACHE_CONTROL, LOCATION};
use axum::http::{HeaderMap, HeaderValue};
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

/// `outcome` as its answer; a failure asked for by a browser page (`Accept: text/html`, a
/// navigation) becomes a `303` to the app's sign-in page with the error's code, which the page
/// turns into words: a person never lands on a JSON body. The code is the service's own.
pub(crate) fn for_the_browser(
    headers: &HeaderMap, outcome: Result<Response, ApiError>,
) -> Response {
    let e = match outcome {
        Ok(response) => return response,
        Err(e) => e,
    };
    let code = e.code();
    let answer = e.into_response(); // logs an internal error with its causes
    if !navigation(headers) {
        return answer;
    }
    see_other(&format!("/?signin={code}")).unwrap_or(answer)
}

/// Whether the request is a browser's navigation to a page (`Accept: text/html`).
pub(crate) fn navigation(headers: &HeaderMap) -> bool {
    (headers.get(ACCEPT).and_then(|a| a.to_str().ok())).is_some_and(|a| a.contains("text/html"))
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
        .switch_org(claims.user, claims.org, org, claims.signed_in_at)
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
/// is used up whatever the outcome, except for a refused `returnTo`, checked first. A browser
/// page (`Accept: text/html`) never lands on an error body: a used or expired link takes it to
/// `returnTo` when it is signed in already, else to `/?signin=link_expired`.
#[utoipa::path(get, path = "/api/auth/link", operation_id = "signInWithLink",
    params(("token" = String, Query, description = "The single-use secret the link carries"),
        ("returnTo" = Option<String>, Query, description = "A path of this application to go to")),
    responses((status = 303, description = "Signed in; `Set-Cookie` carries the cookie.",
        headers(("Set-Cookie" = String, description = "The session cookie"),
            ("Location" = String, description = "`returnTo`, or `/`"))), ApiErrors))]
pub async fn sign_in_with_link(
    State(app): State<SessionApi>, RawQuery(q): RawQuery, headers: HeaderMap,
) -> Response {
    let q = QueryParams::parse(q.as_deref());
    let return_to = match ReturnTo::try_from(q.get("returnTo").unwrap_or("/")) {
        Ok(return_to) => return_to,
        Err(e) => return for_the_browser(&headers, Err(e)),
    };
    match redeem(&app, q.get("token"), &return_to).await {
        Err(ApiError::Core(CoreError::Unauthenticated)) if navigation(&headers) => {
            let answer = match signed_in(&app, &headers).await {
                true => see_other(return_to.as_str()),
                false => see_other("/?signin=link_expired"),
            };
            answer.unwrap_or_else(IntoResponse::into_response)
        }
        outcome => for_the_browser(&headers, outcome),
    }
}

async fn redeem(
    app: &SessionApi, secret: Option<&str>, return_to: &ReturnTo,
) -> Result<Response, ApiError> {
    let secret = secret.ok_or(CoreError::Unauthenticated)?;
    let p = app.service.redeem_sign_in_link(secret).await?;
    signed_in_redirect(app, &p, return_to)
}

/// Whether the request's session cookie signs a current member in.
async fn signed_in(app: &SessionApi, headers: &HeaderMap) -> bool {
    let Some(claims) = (app.signer).from_headers(headers, app.config.cookie_name()) else {
        return false;
    };
    let (user, org) = (claims.user, claims.org);
    (app.service
        .authenticate(user, org, claims.signed_in_at)
        .await)
        .is_ok()
}
