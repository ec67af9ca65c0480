//! What every request passes before its handler: the cookie check (401), the `Origin` check on POST, PUT, PATCH and DELETE (403), and the body rules (415, 413, 400);
//! and after it, the renewal of a session cookie that is due for one.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::extract::{Request, State};
use axum::http::header::{CACHE_CONTROL, CONTENT_LENGTH, ORIGIN, SET_COOKIE, TRANSFER_ENCODING};
use axum::http::{HeaderMap, HeaderValue, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures_util::future::{Either, Ready, ready};
use knowledge_core::CoreError;
use knowledge_core::error::Chain;
use knowledge_core::service::SignedIn;

use crate::cookie::{CookieClaims, now_secs};
use crate::error::ApiError;
use crate::extract::is_json;
use crate::state::SessionApi;
use tower::{Layer, Service};

/// Session routes: a valid session cookie, then the origin and body-type checks. Puts who the
/// cookie names, a [`SignedIn`], into the request's extensions; the membership is checked by
/// the handler, through the [`crate::extract::Member`] extractor or in the first read of the
/// use case it calls (so that a hot route reads it with what it needs, in one round trip).
/// A successful response renews a cookie that is due for it. A plain tower layer, not
/// `axum::middleware::from_fn`: every session request passes it, and `from_fn` boxes a clone
/// of the inner router and its future for each.
#[derive(Clone)]
pub struct MemberGuard(pub SessionApi);

impl<S> Layer<S> for MemberGuard {
    type Service = GuardMember<S>;

    fn layer(&self, inner: S) -> GuardMember<S> {
        GuardMember {
            app: self.0.clone(),
            inner,
            files: false,
        }
    }
}

/// [`MemberGuard`] for the one route that takes a file as its body (a document's original,
/// where the local service takes uploads): any body type, the handler bounding its size.
#[derive(Clone)]
pub struct FileGuard(pub SessionApi);

impl<S> Layer<S> for FileGuard {
    type Service = GuardMember<S>;

    fn layer(&self, inner: S) -> GuardMember<S> {
        GuardMember {
            app: self.0.clone(),
            inner,
            files: true,
        }
    }
}

/// [`MemberGuard`]'s service.
#[derive(Clone)]
pub struct GuardMember<S> {
    app: SessionApi,
    inner: S,
    /// Whether a write's body may be a file rather than JSON.
    files: bool,
}

impl<S> Service<Request> for GuardMember<S>
where
    S: Service<Request, Response = Response, Error = Infallible>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Either<Answered<S::Future>, Ready<Result<Response, Infallible>>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: Request) -> Self::Future {
        let admitted = claims(&self.app, &req).and_then(|claims| {
            check_origin(&self.app, req.method(), req.headers())?;
            if !self.files {
                check_body(req.method(), req.headers())?;
            }
            Ok(claims)
        });
        let claims = match admitted {
            Ok(claims) => claims,
            Err(refused) => return Either::Right(ready(Ok(no_store(refused.into_response())))),
        };
        // The renewed cookie, when one is due, is made now: the answer's future holds no
        // state of the service, and a cookie is due about once a day per member.
        let renewal = renewal(&self.app, &claims);
        req.extensions_mut().insert(SignedIn {
            user: claims.user,
            org: claims.org,
            signed_in_at: claims.signed_in_at,
        });
        Either::Left(Answered {
            inner: self.inner.call(req),
            renewal,
        })
    }
}

pin_project_lite::pin_project! {
    /// A guarded route's answer: marked `no-store`, with the renewed cookie when one was due
    /// and the route succeeded.
    pub struct Answered<F> {
        #[pin]
        inner: F,
        renewal: Option<HeaderValue>,
    }
}

impl<F> Future for Answered<F>
where
    F: Future<Output = Result<Response, Infallible>>,
{
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        let Ok(response) = std::task::ready!(this.inner.poll(cx));
        let mut response = no_store(response);
        // Only an answered request renews: a success is always a member's (every handler
        // checks the membership before it succeeds), whereas a 400 may be a removed member's;
        // and a route that set a cookie of its own keeps it.
        if let Some(renewed) = this.renewal.take()
            && response.status().is_success()
            && !response.headers().contains_key(SET_COOKIE)
        {
            response.headers_mut().insert(SET_COOKIE, renewed);
        }
        Poll::Ready(Ok(response))
    }
}

/// A renewed session cookie when `claims` are due for one (see
/// [`crate::cookie::Lifetime::renewal`]). A failure to sign is logged: the current cookie
/// still works.
fn renewal(app: &SessionApi, claims: &CookieClaims) -> Option<HeaderValue> {
    let expires_at = app.config.lifetime.renewal(claims, now_secs())?;
    let renewed = app
        .session_cookie(&claims.user, &claims.org, claims.signed_in_at, expires_at)
        .map_err(CoreError::internal)
        .and_then(|cookie| HeaderValue::from_str(&cookie).map_err(CoreError::internal));
    match renewed {
        Ok(value) => Some(value),
        Err(e) => {
            tracing::error!(error = %Chain(&e), "could not renew the session cookie");
            None
        }
    }
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
    check_origin(app, method, headers)?;
    check_body(method, headers)
}

fn writes(method: &Method) -> bool {
    [Method::POST, Method::PUT, Method::PATCH, Method::DELETE].contains(method)
}

/// A write must come from the application's origin (the CSRF guard).
fn check_origin(app: &SessionApi, method: &Method, headers: &HeaderMap) -> Result<(), ApiError> {
    if !writes(method) {
        return Ok(());
    }
    let origin_ok = headers
        .get(ORIGIN)
        .and_then(|o| o.to_str().ok())
        .is_some_and(|o| o == app.config.app_origin);
    if !origin_ok {
        return Err(ApiError::OriginForbidden);
    }
    Ok(())
}

/// A write's body, if any, must be JSON.
fn check_body(method: &Method, headers: &HeaderMap) -> Result<(), ApiError> {
    if writes(method) && has_body(headers) && !is_json(headers) {
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
