//! The AWS SDK as every AWS client of the service loads it: its HTTP client for every AWS client of the service (DynamoDB, Secrets Manager,
//! Step Functions), and the SDK configuration loaded with it. HTTP/1.1 over rustls (`reqwest`,
//! built without HTTP/2): those services speak HTTP/1.1, and the SDK's default client links
//! HTTP/2 (`h2`, about half a megabyte of each Lambda binary) whether or not it is used. The
//! SDK's own defaults (`default-https-client`) are therefore off in the workspace, and every
//! configuration must be loaded through [`sdk_config_loader`].

use std::error::Error;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_config::{BehaviorVersion, ConfigLoader};
use aws_smithy_runtime_api::client::http::{
    HttpClient, HttpConnector, HttpConnectorFuture, HttpConnectorSettings, SharedHttpClient,
    SharedHttpConnector,
};
use aws_smithy_runtime_api::client::orchestrator::{HttpRequest, HttpResponse};
use aws_smithy_runtime_api::client::result::ConnectorError;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::body::SdkBody;
use aws_smithy_types::retry::ErrorKind;

/// How long an idle connection is kept for the next request, as the SDK's default client does.
const POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(90);

/// The AWS configuration loader of this service: the SDK's latest behaviour and
/// [`http_client`], with the standard chain for the region and credentials (the environment on
/// Lambda). Callers may set more (an endpoint, fixed credentials) before `load`.
pub fn sdk_config_loader() -> ConfigLoader {
    aws_config::defaults(BehaviorVersion::latest()).http_client(http_client())
}

/// The SDK's HTTP client: HTTP/1.1 over rustls, no proxy, no redirects, idle connections kept
/// 90 s. It applies the connect and read timeouts each SDK client asks for, with one pool per
/// distinct pair (in practice one for the whole process).
fn http_client() -> SharedHttpClient {
    SharedHttpClient::new(Http1Client::default())
}

/// Connectors by the timeouts they were built with.
#[derive(Debug, Default)]
struct Http1Client {
    connectors: Mutex<Vec<(Timeouts, SharedHttpConnector)>>,
}

type Timeouts = (Option<Duration>, Option<Duration>);

impl HttpClient for Http1Client {
    fn http_connector(
        &self, settings: &HttpConnectorSettings, _components: &RuntimeComponents,
    ) -> SharedHttpConnector {
        let timeouts = (settings.connect_timeout(), settings.read_timeout());
        let mut connectors = self.connectors.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, connector)) = connectors.iter().find(|(t, _)| *t == timeouts) {
            return connector.clone();
        }
        let connector = SharedHttpConnector::new(Http1Connector::new(timeouts));
        connectors.push((timeouts, connector.clone()));
        connector
    }
}

/// One pool of connections with fixed timeouts; a client that cannot be built (no TLS roots)
/// fails each request instead, as the SDK's own does.
#[derive(Debug, Clone)]
struct Http1Connector {
    client: Result<reqwest::Client, Arc<reqwest::Error>>,
}

impl Http1Connector {
    fn new((connect, read): Timeouts) -> Self {
        let mut builder = reqwest::Client::builder()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .pool_idle_timeout(POOL_IDLE_TIMEOUT);
        if let Some(connect) = connect {
            builder = builder.connect_timeout(connect);
        }
        if let Some(read) = read {
            builder = builder.read_timeout(read);
        }
        Self {
            client: builder.build().map_err(Arc::new),
        }
    }
}

impl HttpConnector for Http1Connector {
    fn call(&self, request: HttpRequest) -> HttpConnectorFuture {
        let client = match &self.client {
            Ok(client) => client.clone(),
            Err(e) => return ready(ConnectorError::other(e.clone().into(), None)),
        };
        let Some(body) = request.body().bytes().map(<[u8]>::to_vec) else {
            // The service's operations send their bodies whole; none streams one.
            return ready(ConnectorError::user("a streaming request body".into()));
        };
        let request = match request.try_into_http1x() {
            Ok(request) => request.map(|_| body),
            Err(e) => return ready(ConnectorError::user(e.into())),
        };
        let request = match reqwest::Request::try_from(request) {
            Ok(request) => request,
            Err(e) => return ready(ConnectorError::user(e.into())),
        };
        HttpConnectorFuture::new(async move {
            let response = client.execute(request).await.map_err(connector_error)?;
            // The body is streamed to the SDK as it arrives, as its own client does.
            let response = http::Response::<reqwest::Body>::from(response);
            HttpResponse::try_from(response.map(SdkBody::from_body_1_x))
                .map_err(|e| ConnectorError::other(e.into(), None))
        })
    }
}

fn ready(error: ConnectorError) -> HttpConnectorFuture {
    HttpConnectorFuture::ready(Err(error))
}

/// Classifies a failed request as the SDK's default client does, so that the SDK retries the
/// same failures: timeouts, failures to connect and broken or closed connections are transient.
fn connector_error(error: reqwest::Error) -> ConnectorError {
    if error.is_timeout() {
        return ConnectorError::timeout(error.into());
    }
    if error.is_builder() {
        return ConnectorError::user(error.into());
    }
    if error.is_connect() || source::<std::io::Error>(&error).is_some() {
        return ConnectorError::io(error.into());
    }
    if let Some(hyper) = source::<hyper::Error>(&error) {
        if hyper.is_closed() || hyper.is_canceled() {
            return ConnectorError::io(error.into());
        }
        if hyper.is_incomplete_message() {
            return ConnectorError::other(error.into(), Some(ErrorKind::TransientError));
        }
    }
    ConnectorError::other(error.into(), None)
}

/// The first error of type `E` in `error`'s chain of sources, `error` included.
fn source<'a, E: Error + 'static>(error: &'a (dyn Error + 'static)) -> Option<&'a E> {
    std::iter::successors(Some(error), |&e| e.source()).find_map(|e| e.downcast_ref::<E>())
}
