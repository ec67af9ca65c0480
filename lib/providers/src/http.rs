//! HTTP plumbing both adapters share: the client, the classification of a provider's answers
//! into [`AgentError`]s, and the cached health probe. Bodies are read with [`crate::body`].

use std::fmt;
use std::time::{Duration, SystemTime};

use knowledge_core::policy::pricing::Price;
use knowledge_core::ports::{AgentError, TokenUsage};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use reqwest::{Client, Response, StatusCode};
use serde_json::Value;

use crate::body::{chain, read_bounded, unreachable};
use crate::error::ConfigError;
use crate::health::{HealthCache, HealthPolicy};
use crate::sse::{self, Streamed};

/// Time allowed to open a connection to the provider.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Time allowed for a whole provider call unless configured otherwise.
pub(crate) const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// The largest response body read; a provider's reply to one step is far smaller.
const MAX_BODY: usize = 4 * 1024 * 1024;
/// The largest error body read, for its error type and code.
const MAX_ERROR_BODY: usize = 64 * 1024;

/// A provider API key. Its `Debug` output never shows it, and it is only ever sent in a
/// header marked sensitive.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

/// An API key that is empty or holds characters other than visible ASCII.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the API key is empty or holds characters other than visible ASCII")]
pub struct InvalidApiKey;

impl ApiKey {
    /// Errors: [`InvalidApiKey`] unless the key is non-empty visible ASCII, which every
    /// provider's keys are and which an HTTP header can carry.
    pub fn new(key: impl Into<String>) -> Result<Self, InvalidApiKey> {
        let key = key.into();
        if key.is_empty() || !key.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(InvalidApiKey);
        }
        Ok(Self(key))
    }

    /// The header value `{prefix}{key}`, marked sensitive so that it is never logged.
    pub(crate) fn header(&self, prefix: &str) -> HeaderValue {
        let mut value = HeaderValue::try_from(format!("{prefix}{}", self.0))
            .expect("ApiKey::new admits only visible ASCII");
        value.set_sensitive(true);
        value
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

/// `url` without trailing slashes, if it is an absolute http(s) URL; else why not.
pub(crate) fn base_url(url: &str) -> Result<String, String> {
    let trimmed = url.trim().trim_end_matches('/');
    match reqwest::Url::parse(trimmed) {
        // Credentials in the URL would be logged with it; keys have their own variables.
        Ok(parsed) if !parsed.username().is_empty() || parsed.password().is_some() => {
            Err("holds credentials; give the key in the provider's API key variable".into())
        }
        Ok(parsed) if matches!(parsed.scheme(), "http" | "https") && parsed.has_host() => {
            Ok(trimmed.to_owned())
        }
        Ok(_) => Err(format!("{trimmed:?} is not an http or https URL")),
        Err(_) => Err("is not a URL".into()),
    }
}

/// One adapter's connection to its provider.
pub(crate) struct Transport {
    client: Client,
    health_url: String,
    health: HealthCache,
    price: Price,
}

impl Transport {
    /// A client sending `headers` (authentication, versions) with every request.
    /// Errors: `Client` when the TLS stack cannot be set up.
    pub(crate) fn new(
        headers: HeaderMap, timeout: Duration, health_url: String, health: HealthPolicy,
        price: Price,
    ) -> Result<Self, ConfigError> {
        let client = Client::builder()
            .default_headers(headers)
            .connect_timeout(CONNECT_TIMEOUT)
            .timeout(timeout)
            // Redirects are not followed: a provider API does not redirect, and following one
            // would send the key to wherever it points.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| ConfigError::Client(chain(&e)))?;
        Ok(Self {
            client,
            health_url,
            health: HealthCache::new(health),
            price,
        })
    }

    /// What `usage` costs at the configured price, in micro-dollars.
    pub(crate) fn cost_micros(&self, usage: TokenUsage) -> u64 {
        self.price.cost_micros(usage)
    }

    /// POSTs `body` (which asks for a stream) as JSON to `url`: the events of a 2xx reply, or
    /// its JSON body when the server answered without streaming. Dropping the future, or the
    /// events, aborts the request. Errors: see [`classify`].
    pub(crate) async fn post_streaming(
        &self, url: &str, body: &Value,
    ) -> Result<Streamed, AgentError> {
        let response = self
            .client
            .post(url)
            .json(body)
            .send()
            .await
            .map_err(unreachable)?;
        if !response.status().is_success() {
            return Err(classify(response).await);
        }
        sse::streamed(response, MAX_BODY).await
    }

    /// Whether the provider answers on `health_url`, cached per the [`HealthPolicy`].
    /// Errors: `Unreachable` (transport error or timeout), `Failed` (5xx), `Rejected` (401,
    /// 403: the key is refused). Any other status counts as healthy: a local server may not
    /// have the route (404), and a rate limit (429) is not an outage.
    pub(crate) async fn health(&self) -> Result<(), AgentError> {
        self.health.check(|| self.probe()).await
    }

    async fn probe(&self) -> Result<(), AgentError> {
        let response = self
            .client
            .get(&self.health_url)
            .timeout(self.health.policy().timeout)
            .send()
            .await
            .map_err(unreachable)?;
        let status = response.status();
        if status.is_server_error() {
            Err(AgentError::Failed(describe(
                status,
                request_id(&response).as_deref(),
                None,
            )))
        } else if matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN) {
            Err(AgentError::Rejected(describe(
                status,
                request_id(&response).as_deref(),
                None,
            )))
        } else {
            Ok(())
        }
    }
}

/// The classification of a non-2xx reply: 429 is `RateLimited` with the provider's hint;
/// 408 and 5xx (Anthropic's 529 "overloaded" included) are `Failed`, worth retrying; any
/// other status is `Rejected`, as retrying the same request cannot help. The error text holds
/// the status, the provider's error type and code, and its request id, never the body.
async fn classify(response: Response) -> AgentError {
    let status = response.status();
    let request_id = request_id(&response);
    if status == StatusCode::TOO_MANY_REQUESTS {
        let retry_after = retry_after(response.headers(), SystemTime::now());
        tracing::info!(
            error = %describe(status, request_id.as_deref(), None),
            retry_after_ms = retry_after.map(|d| d.as_millis() as u64),
            "agent provider rate limit"
        );
        return AgentError::RateLimited { retry_after };
    }
    let body = read_bounded(response, MAX_ERROR_BODY)
        .await
        .ok()
        .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok());
    let text = describe(status, request_id.as_deref(), body.as_ref());
    if status == StatusCode::REQUEST_TIMEOUT || status.is_server_error() {
        AgentError::Failed(text)
    } else {
        AgentError::Rejected(text)
    }
}

/// The provider's id of the request (OpenAI's `x-request-id`, Anthropic's `request-id`).
fn request_id(response: &Response) -> Option<String> {
    ["x-request-id", "request-id"]
        .iter()
        .find_map(|h| response.headers().get(*h)?.to_str().ok())
        .filter(|id| is_label(id))
        .map(str::to_owned)
}

/// `HTTP 401 Unauthorized (type authentication_error, code invalid_api_key, request id …)`.
/// Only short identifier-like fields are quoted: a provider's error *message* may echo part of
/// the key or of the request, so it is left out.
fn describe(status: StatusCode, request_id: Option<&str>, body: Option<&Value>) -> String {
    let error = body.map(|b| &b["error"]);
    let field = |name: &str| {
        error
            .and_then(|e| match &e[name] {
                Value::String(s) => Some(s.clone()),
                Value::Number(n) => Some(n.to_string()),
                _ => None,
            })
            .filter(|s| is_label(s))
    };
    let details: Vec<String> = [
        field("type").map(|t| format!("type {t}")),
        field("code").map(|c| format!("code {c}")),
        request_id.map(|id| format!("request id {id}")),
    ]
    .into_iter()
    .flatten()
    .collect();
    if details.is_empty() {
        format!("HTTP {status}")
    } else {
        format!("HTTP {status} ({})", details.join(", "))
    }
}

fn is_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 100
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-.:".contains(&b))
}

/// The provider's wait hint: `retry-after-ms` (OpenAI) if present, else `retry-after` as
/// seconds or an HTTP-date (a date in the past is no wait).
pub(crate) fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let header = |name: &'static str| {
        headers
            .get(HeaderName::from_static(name))?
            .to_str()
            .ok()
            .map(str::trim)
    };
    let seconds = |s: &str, scale: f64| {
        s.parse::<f64>()
            .ok()
            .filter(|n| n.is_finite() && *n >= 0.0)
            .and_then(|n| Duration::try_from_secs_f64(n / scale).ok())
    };
    if let Some(ms) = header("retry-after-ms").and_then(|v| seconds(v, 1000.0)) {
        return Some(ms);
    }
    let value = header("retry-after")?;
    seconds(value, 1.0).or_else(|| {
        let at = httpdate::parse_http_date(value).ok()?;
        Some(at.duration_since(now).unwrap_or(Duration::ZERO))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        pairs
            .iter()
            .map(|(k, v)| {
                (
                    HeaderName::from_static(k),
                    HeaderValue::from_str(v).unwrap(),
                )
            })
            .collect()
    }

    #[test]
    fn retry_after_is_read_as_milliseconds_seconds_or_an_http_date() {
        let now = httpdate::parse_http_date("Sun, 06 Nov 1994 08:49:30 GMT").unwrap();
        let wait = |pairs| retry_after(&headers(pairs), now);
        assert_eq!(
            wait(&[("retry-after-ms", "250"), ("retry-after", "9")]),
            Some(Duration::from_millis(250))
        );
        assert_eq!(wait(&[("retry-after", "2")]), Some(Duration::from_secs(2)));
        assert_eq!(
            wait(&[("retry-after", "Sun, 06 Nov 1994 08:49:37 GMT")]),
            Some(Duration::from_secs(7))
        );
        assert_eq!(
            wait(&[("retry-after", "Sun, 06 Nov 1994 08:49:00 GMT")]),
            Some(Duration::ZERO)
        );
        assert_eq!(wait(&[("retry-after", "soon")]), None);
        assert_eq!(wait(&[("retry-after", "-1")]), None);
        assert_eq!(wait(&[]), None);
    }

    #[test]
    fn error_texts_name_the_status_type_and_code_but_never_the_message() {
        let body = json!({"error": {"message": "Incorrect API key provided: sk-abc…xyz",
            "type": "invalid_request_error", "code": "invalid_api_key"}});
        let text = describe(StatusCode::UNAUTHORIZED, Some("req_1"), Some(&body));
        assert_eq!(
            text,
            "HTTP 401 Unauthorized (type invalid_request_error, code invalid_api_key, \
             request id req_1)"
        );
        let odd = json!({"error": {"type": "has spaces and sk-secret"}});
        assert_eq!(
            describe(StatusCode::BAD_REQUEST, None, Some(&odd)),
            "HTTP 400 Bad Request"
        );
    }

    #[test]
    fn api_keys_are_validated_and_hidden_from_debug_output() {
        assert_eq!(ApiKey::new(""), Err(InvalidApiKey));
        assert_eq!(ApiKey::new("sk-a b"), Err(InvalidApiKey));
        assert_eq!(ApiKey::new("sk-a\n"), Err(InvalidApiKey));
        let key = ApiKey::new("sk-secret").unwrap();
        assert!(!format!("{key:?}").contains("secret"));
        assert!(key.header("Bearer ").is_sensitive());
    }

    #[test]
    fn base_urls_must_be_absolute_http_urls_and_lose_trailing_slashes() {
        assert_eq!(
            base_url("http://127.0.0.1:8080/v1/").unwrap(),
            "http://127.0.0.1:8080/v1"
        );
        assert!(base_url("localhost:8080").is_err());
        assert!(base_url("ftp://example.com").is_err());
        assert!(base_url("/v1").is_err());
    }
}
