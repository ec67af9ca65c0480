//! The local HTTP server: accepts TCP connections and serves the router over HTTP/1.1, with
//! every read from a client bounded in time and size, so that connections which send nothing,
//! half a request or half a body cannot pile up and lock other clients out.
//!
//! - **Headers** must arrive within [`ServerLimits::header_timeout`], counted from the moment
//!   the connection is ready for a request: its start, or the end of the previous response on
//!   a kept-alive connection. So the same bound closes idle keep-alive connections. A
//!   connection past it is closed without an answer (hyper has no request to answer).
//! - **A body** must arrive whole within [`ServerLimits::body_timeout`] of its request's head;
//!   the body reader then answers 408 and the connection closes.
//! - **Writes**: a write to the client that makes no progress for
//!   [`ServerLimits::write_timeout`] (a client that stopped reading its answers) closes the
//!   connection.
//! - **Connections**: at most [`ServerLimits::max_connections`] at once; past that, new ones
//!   wait in the listen queue until one closes, rather than the process running out of file
//!   descriptors. Only HTTP/1.1 is served (browsers speak it to a plain-HTTP origin).
//! - **Sizes**: the router refuses heads over `knowledge_http::limits` and bodies over
//!   the route's limit (413, from `Content-Length` alone when it declares too much), in the
//!   documented JSON. Only what hyper cannot parse at all, or a head over its own hard limits
//!   ([`HARD_MAX_HEADERS`] fields, about 400 KiB), gets hyper's bare 400, 414 or 431.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use http_body::{Body, Frame, SizeHint};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use knowledge_http::extract::BodyTimedOut;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio::time::{Instant, Sleep};
use tokio_io_timeout::TimeoutStream;

/// Header fields hyper parses at most; the router refuses more than
/// `knowledge_http::limits::HEADER_MAX_COUNT` (100) in JSON before this. Kept near it: hyper
/// sets aside and zeroes room for this many fields on every request (at 1,000 that was about a
/// tenth of a tail poll's time in the server).
pub const HARD_MAX_HEADERS: usize = 200;

/// How long in-flight requests get to finish once shutdown begins.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// Time bounds on what a client sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerLimits {
    /// For a request's head to arrive, from when the connection is ready for one; also the
    /// idle keep-alive timeout.
    pub header_timeout: Duration,
    /// For a request's whole body to arrive, from its head.
    pub body_timeout: Duration,
    /// For one write to the client to make progress.
    pub write_timeout: Duration,
    /// Connections served at once.
    pub max_connections: usize,
}

impl Default for ServerLimits {
    fn default() -> Self {
        Self {
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            write_timeout: Duration::from_secs(30),
            max_connections: 512,
        }
    }
}

/// Serves `router` on `listener` until `shutdown` resolves, then lets requests in flight finish
/// (closing idle connections at once) for at most [`SHUTDOWN_GRACE`].
pub async fn serve(
    listener: TcpListener, router: Router, limits: ServerLimits, shutdown: impl Future<Output = ()>,
) {
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .max_headers(HARD_MAX_HEADERS)
        .keep_alive(true);
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => slot.expect("the semaphore is never closed"),
            () = shutdown.as_mut() => break,
        };
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of file descriptors, say: wait for connections to close rather than
                    // spin.
                    tracing::warn!(error = %e, "could not accept a connection");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = shutdown.as_mut() => break,
        };
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!(error = %e, "could not set TCP_NODELAY");
        }
        let router = router.clone();
        let service = hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
            let req = req.map(|body| DeadlineBody::new(body, limits.body_timeout));
            tower::ServiceExt::oneshot(router.clone(), req)
        });
        let mut stream = TimeoutStream::new(stream);
        stream.set_write_timeout(Some(limits.write_timeout));
        let io = TokioIo::new(Box::pin(stream));
        let connection = graceful.watch(builder.serve_connection(io, service));
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, "connection closed");
            }
            drop(slot);
        });
    }
    drop(listener);
    if tokio::time::timeout(SHUTDOWN_GRACE, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("requests still in flight after the shutdown grace period were dropped");
    }
}

pin_project_lite::pin_project! {
    /// A request body that fails with [`BodyTimedOut`] once its deadline passes: the whole body
    /// must have arrived by then, however slowly it trickles in.
    pub struct DeadlineBody<B> {
        #[pin]
        inner: B,
        deadline: Instant,
        // The timer, made the first time the body has to wait for data: most requests (every
        // `GET`) have none, and a timer made and dropped cost each of them about 300
        // instructions. The deadline is the same either way, counted from the head.
        timer: Option<Pin<Box<Sleep>>>,
    }
}

impl<B> DeadlineBody<B> {
    pub fn new(inner: B, within: Duration) -> Self {
        Self {
            inner,
            deadline: Instant::now() + within,
            timer: None,
        }
    }
}

impl<B> Body for DeadlineBody<B>
where
    B: Body<Data = Bytes>,
    B::Error: Into<axum::BoxError>,
{
    type Data = Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        self: Pin<&mut Self>, cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::BoxError>>> {
        let this = self.project();
        if let Poll::Ready(frame) = this.inner.poll_frame(cx) {
            return Poll::Ready(frame.map(|f| f.map_err(Into::into)));
        }
        let deadline = *this.deadline;
        let timer = this
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
        match timer.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Some(Err(BodyTimedOut.into()))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
