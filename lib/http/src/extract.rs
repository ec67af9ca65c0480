//! Reading what a request carries: its body (bounded in size and time, UTF-8), a JSON body
//! parsed straight into its request type, and the query string.

use axum::body::Body;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::HeaderMap;
use axum::http::header::CONTENT_TYPE;
use axum::http::request::Parts;
use knowledge_core::CoreError;
use knowledge_core::service::{Principal, SignedIn};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::{ApiError, EdgeError};
use crate::limits::BODY_LIMIT;
use crate::state::SessionApi;

/// `application/json`, with or without parameters such as `charset=utf-8`.
pub fn is_json(headers: &HeaderMap) -> bool {
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
    let bytes = read_bytes(body, limit).await.map_err(Some)?;
    String::from_utf8(bytes.to_vec()).map_err(|_| None)
}

/// The request body, at most `limit` bytes. A body whose declared length (`Content-Length`) is
/// over `limit` is refused before a byte of it is read.
pub async fn read_bytes(body: Body, limit: usize) -> Result<axum::body::Bytes, BodyError> {
    if http_body::Body::size_hint(&body).lower() > limit as u64 {
        return Err(BodyError::TooLarge);
    }
    axum::body::to_bytes(body, limit).await.map_err(|e| {
        if caused_by::<http_body_util::LengthLimitError>(&e) {
            BodyError::TooLarge
        } else if caused_by::<BodyTimedOut>(&e) {
            BodyError::TimedOut
        } else {
            BodyError::Unreadable
        }
    })
}

/// Whether `E` is in the chain of `error`'s causes: body errors arrive wrapped once per body
/// adapter they passed through.
fn caused_by<E: std::error::Error + 'static>(error: &(dyn std::error::Error + 'static)) -> bool {
    std::iter::successors(Some(error), |e| e.source()).any(|e| e.is::<E>())
}

/// A session request body: a JSON object of at most [`BODY_LIMIT`] bytes, sent as
/// `application/json`, parsed into `T`. A field set to `null` counts as missing; fields `T`
/// does not have are ignored. Errors, in this order: 415, 413 (or 408 when the body is late),
/// 400 `invalid_encoding`, 400 `invalid_json` (not JSON, or not an object), 400
/// `missing_field` and 400 `invalid_field` (a field of the wrong type), naming the field.
#[derive(Debug)]
pub struct JsonBody<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for JsonBody<T> {
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
        let Ok(Value::Object(mut fields)) = serde_json::from_str::<Value>(&text) else {
            return Err(ApiError::InvalidJson);
        };
        fields.retain(|_, v| !v.is_null());
        serde_path_to_error::deserialize(Value::Object(fields))
            .map(Self)
            .map_err(field_error)
    }
}

/// The error for a body field that is missing or of the wrong type, naming it.
fn field_error(e: serde_path_to_error::Error<serde_json::Error>) -> ApiError {
    let inner = e.inner().to_string();
    if let Some(rest) = inner.strip_prefix("missing field `") {
        let name = rest.split('`').next().unwrap_or_default();
        return ApiError::MissingField(format!("field '{name}' is required"));
    }
    let expected = inner
        .split_once(", expected ")
        .map_or("of another type", |(_, expected)| expected);
    ApiError::InvalidField(format!("field '{}' must be {expected}", e.path()))
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

/// A session route's caller as the cookie names them, not yet checked against the membership:
/// for the use cases that check it in their own first read. Only behind
/// [`crate::guard::MemberGuard`]; elsewhere it refuses as unauthenticated. Takes the guard's
/// [`SignedIn`] out of the request (a handler has one caller: this, [`Member`], or an
/// extractor built on them).
pub struct Claimant {
    pub app: SessionApi,
    pub who: SignedIn,
}

impl FromRequestParts<SessionApi> for Claimant {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, app: &SessionApi) -> Result<Self, ApiError> {
        let who = parts.extensions.remove::<SignedIn>();
        let who = who.ok_or(CoreError::Unauthenticated)?;
        Ok(Self {
            app: app.clone(),
            who,
        })
    }
}

/// A session route's caller: a current member of the cookie's organisation, checked with one
/// read of the membership. Only behind [`crate::guard::MemberGuard`]; elsewhere it refuses as
/// unauthenticated. Errors: `Unauthenticated` (removed, or signed out since).
pub struct Member {
    pub app: SessionApi,
    pub p: Principal,
}

impl FromRequestParts<SessionApi> for Member {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, app: &SessionApi) -> Result<Self, ApiError> {
        let Claimant { app, who } = Claimant::from_request_parts(parts, app).await?;
        let p = (app.service)
            .authenticate(who.user, who.org, who.signed_in_at)
            .await?;
        Ok(Self { app, p })
    }
}
