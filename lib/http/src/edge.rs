//! What every route passes before its own work: limits on a request's head (target and header
//! fields), checked before routing, so that an oversized head gets the documented JSON error
//! rather than the HTTP library's bare one (they sit below the server's own hard limits, see
//! `knowledge_local::server`, which answer only what cannot be parsed at all); the compression
//! of answers; and the request log. The head limits and the log are plain tower layers: every
//! request passes them, and `axum::middleware::from_fn` would box a clone of the router for
//! each.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use axum::extract::Request;
use axum::http::Method;
use axum::response::{IntoResponse, Response};
use futures_util::future::{Either, Ready, ready};
use tower::{Layer, Service};

use tower_http::compression::predicate::{DefaultPredicate, Predicate, SizeAbove};
use tower_http::compression::{CompressionLayer, CompressionLevel};

use crate::error::{ApiError, EdgeError, ScimApiError};
use crate::limits::{HEADER_MAX_COUNT, HEADERS_MAX_BYTES, URI_MAX_BYTES};

/// The answer to a request whose target or header fields are over the limits above, in the
/// error shape of the route it was meant for (SCIM's under `/api/scim`); `None` for the rest.
fn over_limits(req: &Request) -> Option<Response> {
    let target = req.uri().path_and_query().map_or(0, |pq| pq.as_str().len());
    let header_bytes: usize = req
        .headers()
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len() + 4)
        .sum();
    let too_long = target > URI_MAX_BYTES;
    let too_many = req.headers().len() > HEADER_MAX_COUNT || header_bytes > HEADERS_MAX_BYTES;
    if !too_long && !too_many {
        return None;
    }
    let refused = if too_long {
        EdgeError::UriTooLong
    } else {
        EdgeError::HeadersTooLarge
    };
    Some(if req.uri().path().starts_with("/api/scim") {
        ScimApiError::from(refused).into_response()
    } else {
        ApiError::from(refused).into_response()
    })
}

/// Refuses heads over the limits ([`over_limits`]) before the service they were meant for.
#[derive(Debug, Clone, Copy)]
pub struct HeadLimits;

impl<S> Layer<S> for HeadLimits {
    type Service = LimitHead<S>;

    fn layer(&self, inner: S) -> LimitHead<S> {
        LimitHead(inner)
    }
}

/// [`HeadLimits`]'s service.
#[derive(Debug, Clone)]
pub struct LimitHead<S>(S);

impl<S> Service<Request> for LimitHead<S>
where
    S: Service<Request, Response = Response, Error = Infallible>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Either<S::Future, Ready<Result<Response, Infallible>>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, req: Request) -> Self::Future {
        match over_limits(&req) {
            None => Either::Left(self.0.call(req)),
            Some(refused) => Either::Right(ready(Ok(refused))),
        }
    }
}

/// Logs every request's method, path (never the query or headers, which can carry cursors and
/// cookies), status and latency, once answered.
#[derive(Debug, Clone)]
pub struct RequestLog(Option<Arc<matchit::Router<String>>>);

impl RequestLog {
    /// The request log of a router whose routes' patterns (`/api/admin/groups/{groupId}`, as
    /// OpenAPI and axum write them) `patterns` gives: asked only while traces are on, to name
    /// each request's span after its route.
    pub fn of(patterns: impl FnOnce() -> Vec<String>) -> Self {
        Self(knowledge_core::trace::enabled().then(|| {
            let mut routes = matchit::Router::new();
            for pattern in patterns() {
                // A pattern that conflicts with one already in names nothing new.
                let _ = routes.insert(pattern.clone(), pattern);
            }
            Arc::new(routes)
        }))
    }
}

impl<S> Layer<S> for RequestLog {
    type Service = LogRequest<S>;

    fn layer(&self, inner: S) -> LogRequest<S> {
        LogRequest {
            inner,
            routes: self.0.clone(),
        }
    }
}

/// [`RequestLog`]'s service.
#[derive(Debug, Clone)]
pub struct LogRequest<S> {
    inner: S,
    /// The routes' patterns, while traces are on.
    routes: Option<Arc<matchit::Router<String>>>,
}

impl<S, B> Service<Request> for LogRequest<S>
where
    S: Service<Request, Response = axum::http::Response<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Logged<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request) -> Self::Future {
        // The path is copied only when the line may be written. `level_enabled!` asks the
        // level alone: `enabled!` would leave the per-layer filters' state of its check for the
        // next span or event of this thread to take as its own (and the span below would not
        // be exported).
        let seen = tracing::level_enabled!(tracing::Level::INFO).then(|| {
            (
                req.method().clone(),
                req.uri().path().to_owned(),
                Instant::now(),
            )
        });
        let span = (self.routes.as_deref())
            .and_then(|routes| request_span(routes, req.method(), req.uri().path()));
        let inner = match &span {
            Some(span) => span.in_scope(|| self.inner.call(req)),
            None => self.inner.call(req),
        };
        Logged { inner, seen, span }
    }
}

pin_project_lite::pin_project! {
    /// A response future that writes the request's log line when it resolves.
    pub struct Logged<F> {
        #[pin]
        inner: F,
        seen: Option<(Method, String, Instant)>,
        span: Option<tracing::Span>,
    }
}

/// A request's span: named after its method and the route of `routes` it matches (a request
/// none matches, the app's files, after its method alone), never its path, query or headers.
/// `None` when no layer takes it.
fn request_span(
    routes: &matchit::Router<String>, method: &Method, path: &str,
) -> Option<tracing::Span> {
    let route = routes.at(path).ok().map(|m| m.value.as_str());
    let name = match route {
        Some(route) => format!("{method} {route}"),
        None => method.to_string(),
    };
    let span = knowledge_core::trace_span!(
        "request",
        otel.name = name,
        otel.kind = "server",
        http.request.method = %method,
        http.route = route,
        http.response.status_code = tracing::field::Empty,
    );
    (!span.is_disabled()).then(|| knowledge_core::trace::identified(span))
}

impl<F, B, E> Future for Logged<F>
where
    F: Future<Output = Result<axum::http::Response<B>, E>>,
{
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        let out = {
            let _entered = this.span.as_ref().map(|s| s.enter());
            std::task::ready!(this.inner.poll(cx))
        };
        // The span ends with the answer (not when this future is dropped), so that a Lambda
        // function exports it before its invocation returns.
        let span = this.span.take();
        if let (Some(span), Ok(response)) = (&span, &out) {
            let status = response.status();
            span.record("http.response.status_code", i64::from(status.as_u16()));
            if status.is_server_error() {
                // As HTTP's conventions name a server's error: its status code.
                knowledge_core::trace::failed(span, status.as_str());
            }
        }
        if let (Some((method, path, started)), Ok(response)) = (this.seen.take(), &out) {
            // Within the span: the line names the request's trace.
            let _entered = span.as_ref().map(|s| s.enter());
            tracing::info!(
                %method,
                path,
                status = response.status().as_u16(),
                ms = started.elapsed().as_secs_f64() * 1e3,
                "request"
            );
        }
        Poll::Ready(out)
    }
}

/// Answers of at least this many bytes are compressed; below it the headers would cost about
/// what compression saves (a transcript tail poll with no new event is about 100 bytes).
pub const COMPRESS_FROM_BYTES: u16 = 1024;

/// Gzip, when the client's `Accept-Encoding` takes it, for answers of [`COMPRESS_FROM_BYTES`]
/// or more of any type but images, gRPC and event streams (tower-http's default predicate), at
/// level 4 (about as small as 6, and faster). An answer already compressed (the app's assets,
/// in brotli since the build) is left as it is. Brotli is not used here: its encoder would add
/// 1.1 MB to every function's binary.
///
/// The size is asked first: most answers are short (a tail poll's ~100 bytes), and the default
/// predicate compares the content type with three others before its own size check (about 650
/// instructions a tail poll). Both are plain tests of the response: the order changes nothing
/// but what is asked.
pub fn compression() -> CompressionLayer<impl Predicate> {
    CompressionLayer::new()
        .quality(CompressionLevel::Precise(4))
        .compress_when(SizeAbove::new(COMPRESS_FROM_BYTES).and(DefaultPredicate::new()))
}
