//! The HTTP client that speaks to authorization servers, identity providers and their metadata
//! for `oauth2` and `openidconnect` (its `AsyncHttpClient`): it follows no redirects, gives up
//! after a time limit and reads at most [`BODY_LIMIT`] bytes of an answer, so a slow,
//! redirecting or endless server cannot stall a sign-in or a connection, or fill memory. A
//! `5xx` answer is a failure of the exchange, as an unreachable server is: the server is down,
//! not refusing. Every request passes the deployment's [`Egress`] guard.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use knowledge_core::ports::{BackendError, DestinationRefused};
use knowledge_egress::Egress;
use oauth2::{AsyncHttpClient, HttpRequest, HttpResponse};

/// The most an answer may hold: metadata documents, key sets and tokens are a few KiB.
pub const BODY_LIMIT: usize = 1024 * 1024;
/// Time to connect to a server.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Time for a whole exchange with a server, the answer read included.
const TIMEOUT: Duration = Duration::from_secs(10);

/// Failures of one exchange with a server.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    #[error("the request could not be built")]
    Build(#[source] oauth2::http::Error),
    #[error("the server's address is refused")]
    Refused(#[source] DestinationRefused),
    #[error("the request's URL is not a URL")]
    Url(#[source] BackendError),
    #[error("the server could not be reached")]
    Transport(#[source] reqwest::Error),
    #[error("the server's answer is larger than {BODY_LIMIT} bytes")]
    TooLarge,
    #[error("the server failed: it answered {0}")]
    ServerError(reqwest::StatusCode),
}

/// A reqwest client bounded as the module says, under the deployment's [`Egress`].
#[derive(Clone)]
pub struct BoundedHttp {
    client: reqwest::Client,
    egress: Egress,
}

impl BoundedHttp {
    /// Errors: the TLS stack cannot be set up.
    pub fn new(egress: Egress) -> Result<Self, reqwest::Error> {
        Self::with_timeout(egress, TIMEOUT)
    }

    /// The same, giving up on a whole exchange after `timeout` (tests of a server that stalls).
    pub fn with_timeout(egress: Egress, timeout: Duration) -> Result<Self, reqwest::Error> {
        let client = egress
            .client_builder()
            .connect_timeout(CONNECT_TIMEOUT.min(timeout))
            .timeout(timeout)
            .build()?;
        Ok(Self { client, egress })
    }

    /// Sends `request` and returns the head of its answer, status and headers, without reading
    /// the body (it is dropped, and the connection with it): for an answer whose status is all
    /// that matters, which may be a stream that never ends. A `5xx` is not an error here.
    /// Errors: [`HttpError`].
    pub async fn head_of(
        &self, request: HttpRequest,
    ) -> Result<(oauth2::http::StatusCode, oauth2::http::HeaderMap), HttpError> {
        let resp = self.start(request).await?;
        Ok((resp.status(), resp.headers().clone()))
    }

    /// Sends `request` until the head of its answer.
    async fn start(&self, request: HttpRequest) -> Result<reqwest::Response, HttpError> {
        let (parts, body) = request.into_parts();
        let url =
            reqwest::Url::parse(&parts.uri.to_string()).map_err(|e| HttpError::Url(e.into()))?;
        let mut req = (self.egress)
            .request(&self.client, parts.method, url)
            .map_err(HttpError::Refused)?
            .body(body);
        for (name, value) in &parts.headers {
            req = req.header(name, value);
        }
        req.send().await.map_err(HttpError::Transport)
    }

    /// Sends `request` as the module says. Errors: [`HttpError`].
    pub async fn send(&self, request: HttpRequest) -> Result<HttpResponse, HttpError> {
        let mut resp = self.start(request).await?;
        if resp.status().is_server_error() {
            return Err(HttpError::ServerError(resp.status()));
        }
        if resp.content_length().is_some_and(|n| n > BODY_LIMIT as u64) {
            return Err(HttpError::TooLarge);
        }
        let mut out = oauth2::http::Response::builder().status(resp.status());
        for (name, value) in resp.headers() {
            out = out.header(name, value);
        }
        let mut body = Vec::new();
        while let Some(chunk) = resp.chunk().await.map_err(HttpError::Transport)? {
            if body.len() + chunk.len() > BODY_LIMIT {
                return Err(HttpError::TooLarge);
            }
            body.extend_from_slice(&chunk);
        }
        out.body(body).map_err(HttpError::Build)
    }
}

impl<'c> AsyncHttpClient<'c> for BoundedHttp {
    type Error = HttpError;
    type Future = Pin<Box<dyn Future<Output = Result<HttpResponse, HttpError>> + Send + 'c>>;

    fn call(&'c self, request: HttpRequest) -> Self::Future {
        Box::pin(self.send(request))
    }
}
