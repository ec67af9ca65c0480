//! The HTTP layer's error types and their mapping to status codes and bodies: the session
//! endpoints' `{"error": {"code", "message"}}`, and SCIM's RFC 7644 §3.12 error shape. This is
//! the one place where errors become responses.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use knowledge_core::CoreError;
use knowledge_core::domain::micros_to_usd;
use knowledge_core::error::Chain;
use knowledge_core::scim::ScimError;
use knowledge_core::scim::schema::ERROR_SCHEMA;

use serde::Serialize;
use utoipa::ToSchema;

/// Failures of the request as sent, whatever its route: the same on the session routes and
/// SCIM, each answered in its route's error shape.
#[derive(Debug, thiserror::Error)]
pub enum EdgeError {
    #[error("the request body did not arrive in time")]
    RequestTimeout,
    #[error(
        "the request target is longer than {} bytes",
        crate::limits::URI_MAX_BYTES
    )]
    UriTooLong,
    #[error(
        "the request has more than {} header fields or more than {} bytes of them",
        crate::limits::HEADER_MAX_COUNT,
        crate::limits::HEADERS_MAX_BYTES
    )]
    HeadersTooLarge,
}

impl EdgeError {
    fn status_and_code(&self) -> (StatusCode, &'static str) {
        match self {
            EdgeError::RequestTimeout => (StatusCode::REQUEST_TIMEOUT, "request_timeout"),
            EdgeError::UriTooLong => (StatusCode::URI_TOO_LONG, "uri_too_long"),
            EdgeError::HeadersTooLarge => (
                StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
                "headers_too_large",
            ),
        }
    }
}

/// Every failure a request can end in.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error(transparent)]
    Core(#[from] CoreError),
    #[error("the request body is not valid JSON")]
    InvalidJson,
    #[error("the request body is not valid UTF-8")]
    InvalidEncoding,
    #[error("{0}")]
    MissingField(String),
    #[error("{0}")]
    InvalidField(String),
    #[error("the request body is larger than {limit} bytes")]
    PayloadTooLarge { limit: usize },
    #[error("the request body must be sent as application/json")]
    UnsupportedMediaType,
    /// An export over what a deployment that buffers responses sends at once.
    #[error(
        "the export would be larger than {limit} bytes, the most this deployment sends at once: \
         narrow the dates or filter by action or actor"
    )]
    ExportTooLarge { limit: usize },
    #[error("the Origin header is missing or not this application's origin")]
    OriginForbidden,
    #[error("no such route")]
    RouteNotFound,
    #[error("method not allowed on this route")]
    MethodNotAllowed,
    #[error(transparent)]
    Edge(#[from] EdgeError),
    /// A provider sent the browser to the shared callback all organisations used before each
    /// had its own; the organisation's own redirect URI, when known, must be registered.
    #[error("{}", callback_moved(.0.as_deref()))]
    CallbackMoved(Option<String>),
}

fn callback_moved(redirect_uri: Option<&str>) -> String {
    let uri = redirect_uri.unwrap_or("/api/auth/callback/<organisation id>");
    format!(
        "this sign-in came back to /api/auth/callback, which signs nobody in any more: \
         your administrator must register the redirect URI {uri} at the identity provider"
    )
}

impl ApiError {
    /// The stable code the error body carries (`not_provisioned`, ...).
    pub fn code(&self) -> &'static str {
        self.status_and_code().1
    }

    fn status_and_code(&self) -> (StatusCode, &'static str) {
        match self {
            ApiError::Core(e) => match e {
                CoreError::Unauthenticated => (StatusCode::UNAUTHORIZED, "unauthenticated"),
                CoreError::NotFound(_) => (StatusCode::NOT_FOUND, "not_found"),
                CoreError::InvalidInput { code, .. } => (StatusCode::BAD_REQUEST, code),
                CoreError::PlanForbidden => (StatusCode::FORBIDDEN, "plan_forbidden"),
                CoreError::RateLimited { .. } => (StatusCode::TOO_MANY_REQUESTS, "rate_limited"),
                CoreError::QuotaExhausted { .. } => {
                    (StatusCode::TOO_MANY_REQUESTS, "quota_exhausted")
                }
                CoreError::CostCapReached { .. } => {
                    (StatusCode::TOO_MANY_REQUESTS, "cost_cap_reached")
                }
                CoreError::MemberCapReached { .. } => {
                    (StatusCode::TOO_MANY_REQUESTS, "member_cap_reached")
                }
                CoreError::AdminOnly => (StatusCode::FORBIDDEN, "admin_only"),
                CoreError::LastAdmin => (StatusCode::CONFLICT, "last_admin"),
                CoreError::Conflict { code, .. } => (StatusCode::CONFLICT, code),
                CoreError::TooLarge { code, .. } => (StatusCode::PAYLOAD_TOO_LARGE, code),
                CoreError::UnsupportedFormat(_) => {
                    (StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_format")
                }
                CoreError::ProviderUnavailable => (StatusCode::BAD_GATEWAY, "provider_unavailable"),
                CoreError::IntegrationUnavailable => {
                    (StatusCode::BAD_GATEWAY, "integration_unavailable")
                }
                CoreError::SsoUnavailable => (StatusCode::NOT_FOUND, "sso_unavailable"),
                CoreError::NotProvisioned => (StatusCode::FORBIDDEN, "not_provisioned"),
                CoreError::SignInFailed => (StatusCode::BAD_REQUEST, "sign_in_failed"),
                CoreError::EmailUnverified => (StatusCode::FORBIDDEN, "email_unverified"),
                CoreError::ConnectFailed => (StatusCode::BAD_REQUEST, "connect_failed"),
                CoreError::AuthorizationServerUnavailable => {
                    (StatusCode::BAD_GATEWAY, "authorization_server_unavailable")
                }
                CoreError::IdentityProviderUnavailable => {
                    (StatusCode::BAD_GATEWAY, "identity_provider_unavailable")
                }
                CoreError::DestinationRefused(_) => {
                    (StatusCode::BAD_REQUEST, "destination_refused")
                }
                CoreError::Internal(_) => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
            },
            ApiError::InvalidJson => (StatusCode::BAD_REQUEST, "invalid_json"),
            ApiError::InvalidEncoding => (StatusCode::BAD_REQUEST, "invalid_encoding"),
            ApiError::MissingField(_) => (StatusCode::BAD_REQUEST, "missing_field"),
            ApiError::InvalidField(_) => (StatusCode::BAD_REQUEST, "invalid_field"),
            ApiError::PayloadTooLarge { .. } => {
                (StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large")
            }
            ApiError::UnsupportedMediaType => {
                (StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type")
            }
            ApiError::ExportTooLarge { .. } => (StatusCode::PAYLOAD_TOO_LARGE, "export_too_large"),
            ApiError::OriginForbidden => (StatusCode::FORBIDDEN, "origin_forbidden"),
            ApiError::RouteNotFound => (StatusCode::NOT_FOUND, "not_found"),
            ApiError::MethodNotAllowed => (StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed"),
            ApiError::Edge(e) => e.status_and_code(),
            ApiError::CallbackMoved(_) => (StatusCode::BAD_REQUEST, "redirect_uri_changed"),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, code) = self.status_and_code();
        let message = match &self {
            ApiError::Core(e @ CoreError::Internal(_)) => {
                tracing::error!(error = %Chain(e), "internal error");
                "internal error".to_owned()
            }
            other => other.to_string(),
        };
        let mut body = ErrorBody {
            error: ErrorDetail {
                code: code.to_owned(),
                message,
            },
            retry_after_seconds: None,
            month_to_date_usd: None,
            cap_usd: None,
            member_month_to_date_usd: None,
            member_cap_usd: None,
            member_month_to_date_questions: None,
            member_question_cap: None,
        };
        if let ApiError::Core(e) = &self {
            match e {
                CoreError::RateLimited { retry_after_secs }
                | CoreError::QuotaExhausted { retry_after_secs } => {
                    body.retry_after_seconds = Some(*retry_after_secs);
                }
                CoreError::CostCapReached {
                    retry_after_secs,
                    month_to_date_micros,
                    cap_micros,
                } => {
                    body.retry_after_seconds = Some(*retry_after_secs);
                    body.month_to_date_usd = Some(micros_to_usd(*month_to_date_micros));
                    body.cap_usd = Some(micros_to_usd(*cap_micros));
                }
                CoreError::MemberCapReached {
                    retry_after_secs,
                    member,
                    caps,
                    org,
                    org_cap_micros,
                } => {
                    body.retry_after_seconds = Some(*retry_after_secs);
                    body.month_to_date_usd = Some(micros_to_usd(org.cost_micros));
                    body.cap_usd = org_cap_micros.map(micros_to_usd);
                    body.member_month_to_date_usd = Some(micros_to_usd(member.cost_micros));
                    body.member_cap_usd = caps.cost_micros.map(micros_to_usd);
                    body.member_month_to_date_questions = Some(member.queries);
                    body.member_question_cap = caps.queries;
                }
                _ => {}
            }
        }
        let retry_after = body.retry_after_seconds;
        let mut response = (status, axum::Json(body)).into_response();
        if let Some(secs) = retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        close_if_unread(response)
    }
}

/// Answers that leave the request unread (its body, or a head too large to act on) close the
/// connection: what the client sends next cannot be told apart from the rest of this request.
fn close_if_unread(mut response: Response) -> Response {
    if matches!(
        response.status(),
        StatusCode::REQUEST_TIMEOUT
            | StatusCode::PAYLOAD_TOO_LARGE
            | StatusCode::URI_TOO_LONG
            | StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE
    ) {
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    response
}

/// Every failure a SCIM request can end in.
#[derive(Debug, thiserror::Error)]
pub enum ScimApiError {
    #[error(transparent)]
    Scim(#[from] ScimError),
    #[error(
        "the request body is larger than {} bytes",
        crate::limits::SCIM_BODY_LIMIT
    )]
    PayloadTooLarge,
    #[error("the request body must be application/scim+json or application/json")]
    UnsupportedMediaType,
    #[error(
        "searching several resource types at once is not supported; POST /Users/.search instead"
    )]
    SearchAcrossTypes,
    #[error("no such SCIM endpoint")]
    RouteNotFound,
    #[error("method not allowed on this SCIM endpoint")]
    MethodNotAllowed,
    #[error(transparent)]
    Edge(#[from] EdgeError),
}

impl ScimApiError {
    fn status(&self) -> StatusCode {
        match self {
            ScimApiError::Scim(e) => match e {
                ScimError::Unauthorized => StatusCode::UNAUTHORIZED,
                ScimError::Forbidden => StatusCode::FORBIDDEN,
                ScimError::NotFound(_) => StatusCode::NOT_FOUND,
                ScimError::Uniqueness(_) => StatusCode::CONFLICT,
                ScimError::InvalidFilter(_)
                | ScimError::InvalidSyntax(_)
                | ScimError::InvalidPath(_)
                | ScimError::NoTarget(_)
                | ScimError::InvalidValue(_)
                | ScimError::Mutability(_) => StatusCode::BAD_REQUEST,
                ScimError::RoleReadOnly => StatusCode::METHOD_NOT_ALLOWED,
                ScimError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
            },
            ScimApiError::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            ScimApiError::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ScimApiError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ScimApiError::SearchAcrossTypes => StatusCode::NOT_IMPLEMENTED,
            ScimApiError::RouteNotFound => StatusCode::NOT_FOUND,
            ScimApiError::Edge(e) => e.status_and_code().0,
        }
    }
}

impl IntoResponse for ScimApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        let detail = match &self {
            ScimApiError::Scim(e @ ScimError::Internal(_)) => {
                tracing::error!(error = %Chain(e), "internal error");
                "internal error".to_owned()
            }
            other => other.to_string(),
        };
        let scim_type = match &self {
            ScimApiError::Scim(e) => e.scim_type().map(str::to_owned),
            _ => None,
        };
        let body = ScimErrorBody {
            schemas: vec![ERROR_SCHEMA.to_owned()],
            status: status.as_u16().to_string(),
            detail,
            scim_type,
        };
        let mut response = (status, axum::Json(body)).into_response();
        match &self {
            ScimApiError::Scim(ScimError::Unauthorized) => {
                response.headers_mut().insert(
                    header::WWW_AUTHENTICATE,
                    HeaderValue::from_static("Bearer realm=\"scim\""),
                );
            }
            ScimApiError::Scim(ScimError::RoleReadOnly) => {
                // A role's resource takes reads only.
                response
                    .headers_mut()
                    .insert(header::ALLOW, HeaderValue::from_static("GET"));
            }
            _ => {}
        }
        close_if_unread(response)
    }
}

/// Every error of the session endpoints and the organisation switch.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ErrorBody {
    pub error: ErrorDetail,
    /// With 429: the seconds to wait, as `Retry-After` says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_after_seconds: Option<u64>,
    /// With `cost_cap_reached` and `member_cap_reached`: the organisation's spend this month, in
    /// US dollars.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub month_to_date_usd: Option<f64>,
    /// With `cost_cap_reached`: the organisation's monthly cap, in US dollars (with
    /// `member_cap_reached`, when it has one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cap_usd: Option<f64>,
    /// With `member_cap_reached`: the member's spend this month, in US dollars.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub member_month_to_date_usd: Option<f64>,
    /// With `member_cap_reached`: the member's monthly spending allowance, in US dollars, when
    /// they have one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub member_cap_usd: Option<f64>,
    /// With `member_cap_reached`: the questions the member asked this month.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub member_month_to_date_questions: Option<u64>,
    /// With `member_cap_reached`: the member's monthly question allowance, when they have one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub member_question_cap: Option<u64>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorDetail {
    /// Stable and machine-readable: `missing_field`, `rate_limited`, `not_found`, ...
    pub code: String,
    /// For people; never an internal detail.
    pub message: String,
}

/// SCIM's error shape (RFC 7644 §3.12).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScimErrorBody {
    pub schemas: Vec<String>,
    /// The HTTP status, as a string.
    pub status: String,
    pub detail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scim_type: Option<String>,
}
