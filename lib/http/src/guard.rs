//! What every request passes before its handler: the cookie check (401), the membership
//! re-check, the `Origin` check on POST and DELETE (403), and the body rules (415, 413, 400).

use axum::body::Body;
use axum::extract::{FromRequest, Request, State};
use axum::http::header::{CACHE_CONTROL, CONTENT_LENGTH, CONTENT_TYPE, ORIGIN, TRANSFER_ENCODING};
use axum::http::{HeaderMap, HeaderValue, Method};
use axum::middleware::Next;
use axum::response::Response;
use knowledge_core::CoreError;
use knowledge_core::ids::SessionId;
use serde_json::{Map, Value};

use crate::SessionApi;
use crate::error::{ApiError, EdgeError};

/// Logs every request's method, path (never the query or headers, which can carry cursors and
/// cookies), status and latency.
pub async fn log(req: Request, next: Next) -> Response {
    let (method, path) = (req.method().clone(), req.uri().path().to_owned());
    let started = std::time::Instant::now();
    let response = next.run(req).await;
    tracing::info!(
        %method,
        path,
        status = response.status().as_u16(),
        ms = started.elapsed().as_secs_f64() * 1e3,
        "request"
    );
    response
}

/// Request bodies larger than this are refused with 413.
pub const BODY_LIMIT: usize = 256 * 1024;

/// Session routes: a valid cookie of a current member, then the origin and body-type checks.
/// Puts the [`knowledge_core::service::Principal`] into the request's extensions.
pub async fn member(
    State(app): State<SessionApi>,
    mut req: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let claims = app
        .signer
        .from_headers(req.headers())
        .ok_or(CoreError::Unauthenticated)?;
    let principal = app.service.authenticate(claims.user, claims.org).await?;
    check_mutation(&app, req.method(), req.headers())?;
    req.extensions_mut().insert(principal);
    Ok(no_store(next.run(req).await))
}

/// The organisation switch: a valid cookie (membership is checked against the target), then the
/// origin and body-type checks. Puts the [`crate::cookie::CookieClaims`] into the extensions.
pub async fn signed_in(
    State(app): State<SessionApi>,
    mut req: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let claims = app
        .signer
        .from_headers(req.headers())
        .ok_or(CoreError::Unauthenticated)?;
    check_mutation(&app, req.method(), req.headers())?;
    req.extensions_mut().insert(claims);
    Ok(no_store(next.run(req).await))
}

fn no_store(mut response: Response) -> Response {
    response
        .headers_mut()
        .insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// POST and DELETE must come from the application's origin (the CSRF guard) and send any body
/// as JSON.
fn check_mutation(app: &SessionApi, method: &Method, headers: &HeaderMap) -> Result<(), ApiError> {
    if method != Method::POST && method != Method::DELETE {
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

/// `application/json`, with or without parameters such as `charset=utf-8`.
fn is_json(headers: &HeaderMap) -> bool {
    media_type(headers).is_some_and(|t| t.eq_ignore_ascii_case("application/json"))
}

/// The request's media type without its parameters (`application/json` of
/// `application/json; charset=utf-8`); `None` without a readable `Content-Type`.
pub fn media_type(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(str::trim)
}

/// Why a request body could not be read.
pub enum BodyError {
    /// It is longer than the limit, or its `Content-Length` says it will be.
    TooLarge,
    /// It did not arrive within the server's body timeout.
    TimedOut,
    /// The connection failed while it was read.
    Unreadable,
}

/// The error a server's request body yields when the body did not arrive in time; the body
/// reader answers it with 408. The local server's bodies carry a deadline (see
/// `knowledge_local::server`); on Lambda the body has arrived before the handler runs.
#[derive(Debug, thiserror::Error)]
#[error("the request body did not arrive in time")]
pub struct BodyTimedOut;

/// The request body as text, at most `limit` bytes of UTF-8. A body whose declared length
/// (`Content-Length`) is over `limit` is refused before a byte of it is read.
/// Errors: `Err(None)` when it is not valid UTF-8.
pub async fn read_text(body: Body, limit: usize) -> Result<String, Option<BodyError>> {
    if http_body::Body::size_hint(&body).lower() > limit as u64 {
        return Err(Some(BodyError::TooLarge));
    }
    let bytes = axum::body::to_bytes(body, limit).await.map_err(|e| {
        Some(if caused_by::<http_body_util::LengthLimitError>(&e) {
            BodyError::TooLarge
        } else if caused_by::<BodyTimedOut>(&e) {
            BodyError::TimedOut
        } else {
            BodyError::Unreadable
        })
    })?;
    String::from_utf8(bytes.to_vec()).map_err(|_| None)
}

/// Whether `E` is in the chain of `error`'s causes: body errors arrive wrapped once per body
/// adapter they passed through.
fn caused_by<E: std::error::Error + 'static>(error: &(dyn std::error::Error + 'static)) -> bool {
    std::iter::successors(Some(error), |e| e.source()).any(|e| e.is::<E>())
}

/// A request body that is a JSON object of at most [`BODY_LIMIT`] bytes.
#[derive(Debug)]
pub struct JsonObject(pub Map<String, Value>);

impl<S: Send + Sync> FromRequest<S> for JsonObject {
    type Rejection = ApiError;

    async fn from_request(req: Request<Body>, _: &S) -> Result<Self, ApiError> {
        if !is_json(req.headers()) {
            return Err(ApiError::UnsupportedMediaType);
        }
        let text = read_text(req.into_body(), BODY_LIMIT)
            .await
            .map_err(|e| match e {
                Some(BodyError::TooLarge) => ApiError::PayloadTooLarge { limit: BODY_LIMIT },
                Some(BodyError::TimedOut) => EdgeError::RequestTimeout.into(),
                Some(BodyError::Unreadable) => ApiError::InvalidJson,
                None => ApiError::InvalidEncoding,
            })?;
        match serde_json::from_str(&text) {
            Ok(Value::Object(map)) => Ok(Self(map)),
            _ => Err(ApiError::InvalidJson),
        }
    }
}

impl JsonObject {
    /// The string field `name`. Errors: missing (or null), or not a string.
    pub fn string(&self, name: &str) -> Result<&str, ApiError> {
        match self.0.get(name) {
            None | Some(Value::Null) => Err(ApiError::MissingField(format!(
                "field '{name}' is required"
            ))),
            Some(Value::String(s)) => Ok(s),
            Some(_) => Err(ApiError::InvalidField(format!(
                "field '{name}' must be a string"
            ))),
        }
    }
}

/// The query string's parameters; the first occurrence of a name wins.
pub struct QueryParams(Vec<(String, String)>);

impl QueryParams {
    pub fn parse(raw: Option<&str>) -> Self {
        Self(
            form_urlencoded::parse(raw.unwrap_or("").as_bytes())
                .into_owned()
                .collect(),
        )
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Like [`QueryParams::get`], with the name matched in any letter case, as SCIM's names are.
    pub fn get_ci(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A `sessionId` given as `value`. Errors: missing, empty, or not of the session-id form.
pub fn session_id(value: Option<&str>) -> Result<SessionId, ApiError> {
    match value {
        None => Err(ApiError::MissingField("sessionId is required".into())),
        Some("") => Err(CoreError::invalid("empty_field", "sessionId must not be empty").into()),
        Some(s) => SessionId::parse(s).map_err(|e| ApiError::InvalidField(e.to_string())),
    }
}
