//! Single sign-on's routes: `GET /api/auth/login` sends the browser to the organisation's
//! identity provider, `GET /api/auth/callback/{org}` takes it back and signs the member in.
//! What the callback needs to finish (the `state`, the `nonce`, the PKCE verifier, the
//! organisation and where to go) travels in a short-lived cookie signed with the session key,
//! so the sign-in is bound to the browser that started it (no login CSRF) and no server keeps
//! it. Each organisation has its own callback, and a browser that comes back to another
//! organisation's than the one its sign-in started at is refused: a code one organisation's
//! provider issued is never redeemed through another's sign-in (the mix-up attack). The
//! shared callback of old, `GET /api/auth/callback`, signs nobody in.

use axum::extract::{Path, RawQuery, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use jsonwebtoken::{Algorithm, Validation};
use knowledge_core::CoreError;
use knowledge_core::ids::OrgId;
use knowledge_core::sso::{AuthorizationResponse, SignInTarget, SingleSignOn};
use serde::{Deserialize, Serialize};

use crate::auth::{for_the_browser, navigation, see_other, signed_in_redirect, with_cookie};
use crate::cookie::{clear_cookie_header, cookie_value, now_secs, set_cookie_header};
use crate::error::ApiError;
use crate::extract::QueryParams;
use crate::return_to::ReturnTo;
use crate::routes::ApiErrors;
use crate::state::SessionApi;

/// How long a sign-in may take at the provider, in seconds: ten minutes.
const LOGIN_TTL_SECS: u64 = 10 * 60;
/// The issuer of sign-in-in-progress cookies: the session check refuses them.
const LOGIN_ISSUER: &str = "knowledge-service/login";

/// A sign-in in progress, as its cookie carries it.
#[derive(Serialize, Deserialize)]
struct LoginState {
    iss: String,
    exp: u64,
    org: String,
    state: String,
    nonce: String,
    verifier: String,
    return_to: String,
}

fn single_sign_on(app: &SessionApi) -> Result<&SingleSignOn, ApiError> {
    // The routers serve these routes only with single sign-on assembled.
    let sso = app.sso.as_ref();
    Ok(sso.ok_or_else(|| CoreError::internal("single sign-on is not assembled"))?)
}

/// Sign in through the organisation's identity provider: sends the browser there. Give the
/// person's work `email` (its domain leads to the organisation) or the `org`. An unknown
/// domain or organisation, or one without single sign-on, gets one answer (404
/// `sso_unavailable`), so organisations cannot be enumerated. A browser page
/// (`Accept: text/html`) is sent to `/?signin=<code>` instead of an error body.
#[utoipa::path(get, path = "/api/auth/login", operation_id = "signIn",
    params(("email" = Option<String>, Query, description = "The person's work e-mail address"),
        ("org" = Option<String>, Query, description = "The organisation's id, instead of `email`"),
        ("returnTo" = Option<String>, Query, description = "A path of this application to go to after")),
    responses((status = 303, description = "To the identity provider; `Set-Cookie` carries the sign-in in progress.",
        headers(("Set-Cookie" = String, description = "The sign-in in progress, for ten minutes"),
            ("Location" = String, description = "The provider's authorization endpoint"))), ApiErrors))]
pub async fn login(
    State(app): State<SessionApi>, RawQuery(q): RawQuery, headers: HeaderMap,
) -> Response {
    for_the_browser(&headers, start(&app, q.as_deref()).await)
}

async fn start(app: &SessionApi, q: Option<&str>) -> Result<Response, ApiError> {
    let q = QueryParams::parse(q);
    let return_to = ReturnTo::try_from(q.get("returnTo").unwrap_or("/"))?;
    let target = match (q.get("email"), q.get("org")) {
        (Some(email), None) => SignInTarget::Email(email.to_owned()),
        // A malformed id names no organisation: the same answer as an unknown one.
        (None, Some(org)) => {
            SignInTarget::Org(OrgId::parse(org).map_err(|_| CoreError::SsoUnavailable)?)
        }
        _ => {
            let message = "give exactly one of the query parameters email and org";
            return Err(CoreError::invalid("invalid_query", message).into());
        }
    };
    let (org, authorization) = single_sign_on(app)?.begin(&target).await?;
    let expires_at = now_secs() + LOGIN_TTL_SECS;
    let state = LoginState {
        iss: LOGIN_ISSUER.into(),
        exp: expires_at,
        org: org.to_string(),
        state: authorization.state,
        nonce: authorization.nonce,
        verifier: authorization.pkce_verifier,
        return_to: return_to.as_str().to_owned(),
    };
    let token = app.signer.sign_other(&state).map_err(CoreError::internal)?;
    let config = &app.config;
    let name = config.login_cookie_name();
    let cookie = set_cookie_header(name, &token, expires_at, config.secure_cookies());
    with_cookie(see_other(&authorization.url)?, &cookie)
}

/// Where the organisation's identity provider sends the browser back (the redirect URI
/// registered there): checks that this browser's sign-in in progress started at this same
/// organisation, its `state`, and the RFC 9207 `iss` when the provider sends one; has the
/// provider's code exchanged and its ID token verified, and signs the member in (`Set-Cookie`,
/// then `returnTo`). A person the organisation has not provisioned gets 403
/// `not_provisioned`, one whose e-mail the provider calls unverified 403 `email_unverified`,
/// and nothing is created. Either way the sign-in in progress is used up. A browser page
/// (`Accept: text/html`) is sent to `/?signin=<code>` instead of an error body.
#[utoipa::path(get, path = "/api/auth/callback/{org}", operation_id = "signInCallback",
    params(("org" = String, Path, description = "The organisation whose provider sends the browser back"),
        ("state" = String, Query, description = "What the login gave the provider"),
        ("code" = Option<String>, Query, description = "The provider's authorization code"),
        ("iss" = Option<String>, Query, description = "The provider's issuer identifier (RFC 9207)"),
        ("error" = Option<String>, Query, description = "The provider's refusal, instead of `code`")),
    responses((status = 303, description = "Signed in; `Set-Cookie` carries the session cookie.",
        headers(("Set-Cookie" = String, description = "The session cookie, and the cleared sign-in in progress"),
            ("Location" = String, description = "The login's `returnTo`, or `/`"))), ApiErrors))]
pub async fn callback(
    State(app): State<SessionApi>, Path(org): Path<String>, RawQuery(q): RawQuery,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let config = &app.config;
    let cleared = clear_cookie_header(config.login_cookie_name(), config.secure_cookies());
    let outcome = finish(&app, &org, q.as_deref(), &headers).await;
    let response = for_the_browser(&headers, outcome);
    with_cookie(response, &cleared)
}

/// The callback all organisations shared before each had its own: it signs nobody in, and
/// redeems no code. It answers 400 `redirect_uri_changed`, naming the organisation's own
/// redirect URI (from this browser's sign-in in progress) that its administrator must register
/// at the provider; a browser page goes to `/?signin=redirect_uri_changed&org=<org>`, where
/// the sign-in page says so. The sign-in in progress is cleared.
#[utoipa::path(get, path = "/api/auth/callback", operation_id = "signInCallbackRetired",
    responses((status = 400, description = "Never signs in: the organisation's provider must send browsers to `/api/auth/callback/{org}`.",
        body = crate::error::ErrorBody),
        (status = 303, description = "A browser's page with a sign-in in progress: on to the sign-in page, which names the redirect URI to register.",
        headers(("Location" = String, description = "`/?signin=redirect_uri_changed&org=<org>`")))), )]
pub async fn retired_callback(State(app): State<SessionApi>, headers: HeaderMap) -> Response {
    let config = &app.config;
    let cleared = clear_cookie_header(config.login_cookie_name(), config.secure_cookies());
    let org = login_state(&app, &headers).and_then(|l| OrgId::parse(&l.org).ok());
    tracing::warn!(
        org = org.as_ref().map(OrgId::as_str),
        "a provider sent a browser to the retired shared callback; its organisation must register its own"
    );
    let redirect_uri = org.as_ref().map(|o| config.callback_url(o));
    let answer = ApiError::CallbackMoved(redirect_uri);
    let response = match (navigation(&headers), &org) {
        (true, Some(org)) => {
            let code = answer.code();
            see_other(&format!("/?signin={code}&org={org}")).unwrap_or(answer.into_response())
        }
        (true, None) => for_the_browser(&headers, Err(answer)),
        (false, _) => answer.into_response(),
    };
    with_cookie(response, &cleared).unwrap_or_else(IntoResponse::into_response)
}

async fn finish(
    app: &SessionApi, path_org: &str, q: Option<&str>, headers: &HeaderMap,
) -> Result<Response, ApiError> {
    let q = QueryParams::parse(q);
    let Some(login) = login_state(app, headers) else {
        tracing::info!(
            "sign-in callback without a sign-in in progress (expired or another browser)"
        );
        return Err(CoreError::SignInFailed.into());
    };
    let state_ok = q.get("state").is_some_and(|s| {
        use subtle::ConstantTimeEq;
        bool::from(s.as_bytes().ct_eq(login.state.as_bytes()))
    });
    if !state_ok {
        tracing::warn!("sign-in callback whose state is not this browser's");
        return Err(CoreError::SignInFailed.into());
    }
    if let Some(error) = q.get("error") {
        // The provider's error code, cut to what an OAuth error code can be.
        let error: String = (error.chars())
            .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
            .take(64)
            .collect();
        tracing::warn!(error, "the identity provider refused the sign-in");
        return Err(CoreError::SignInFailed.into());
    }
    if path_org != login.org {
        // A code for one organisation's sign-in arriving with another's sign-in in progress:
        // a provider (or an attacker's) sent it to the wrong organisation's callback.
        tracing::warn!(
            started_at = login.org,
            "sign-in callback of another organisation than the one this browser's sign-in started at"
        );
        return Err(CoreError::SignInFailed.into());
    }
    let code = q.get("code").ok_or(CoreError::SignInFailed)?;
    let org = OrgId::parse(&login.org).map_err(|_| CoreError::SignInFailed)?;
    let return_to = ReturnTo::try_from(login.return_to.as_str())?;
    let response = AuthorizationResponse {
        code,
        iss: q.get("iss"),
    };
    let p = (single_sign_on(app)?)
        .finish(&org, response, &login.verifier, &login.nonce)
        .await?;
    signed_in_redirect(app, &p, &return_to)
}

/// The sign-in in progress this browser's cookie carries, if it is valid and not expired.
fn login_state(app: &SessionApi, headers: &HeaderMap) -> Option<LoginState> {
    let value = cookie_value(headers, app.config.login_cookie_name())?;
    let mut validation = Validation::new(Algorithm::HS256);
    validation.leeway = 0;
    validation.set_issuer(&[LOGIN_ISSUER]);
    validation.set_required_spec_claims(&["exp", "iss"]);
    app.signer.verify_other(value, &validation)
}
