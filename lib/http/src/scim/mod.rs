//! The SCIM 2.0 routes under `/api/scim/v2` (and `/api/scim`, the same routes again): the
//! bearer-token guard, the body rules (`application/scim+json` or `application/json`, at most
//! [`SCIM_BODY_LIMIT`]), and handlers that parse, call one
//! [`Directory`](knowledge_core::scim::Directory) use case and render `application/scim+json`:
//! `users`, `groups` and `discovery`.

mod discovery;
mod groups;
mod users;

use axum::Extension;
use axum::body::Body;
use axum::extract::{FromRequest, FromRequestParts, OriginalUri, Request, State};
use axum::http::header::{AUTHORIZATION, CACHE_CONTROL, CONTENT_TYPE};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode};
use axum::middleware::{Next, from_fn_with_state};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Router, middleware};
use knowledge_core::ids::OrgId;
use knowledge_core::scim::filter::{self, Filter};
use knowledge_core::scim::resource::{Page, Projection};
use knowledge_core::scim::{self, ScimError};
use serde_json::Value;
use utoipa::openapi::OpenApi;
use utoipa::{IntoParams, IntoResponses};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::error::ScimErrorBody;
use crate::error::{EdgeError, ScimApiError};
use crate::extract::{BodyError, QueryParams, media_type, read_text};
use crate::limits::SCIM_BODY_LIMIT;
use crate::state::ScimApi;

/// The content type of every SCIM response (RFC 7644 §3.1).
pub const SCIM_CONTENT_TYPE: &str = "application/scim+json; charset=utf-8";

/// Where the operator documentation of the SCIM setup lives, for `/ServiceProviderConfig`.
const DOCS_URL: &str = "https://github.com/knowledge-service/knowledge/blob/main/docs/scim.md";

/// The absolute base URL of the SCIM routes a request came through; resources' `location`s
/// are built on it. Made from the configured application origin, never from request headers.
#[derive(Debug, Clone)]
struct Base(String);

/// Who a SCIM request acts for, put in its extensions by the guard: the token's organisation,
/// and the base URL its resources' `location`s are built on.
#[derive(Debug, Clone)]
struct Tenant {
    org: OrgId,
    base: String,
}

/// A SCIM request's caller: the organisation whose token the guard accepted, the base URL of
/// its resources, and the routes' state. Only behind the guard; elsewhere it refuses as
/// unauthorized.
struct Scim {
    app: ScimApi,
    org: OrgId,
    base: String,
}

impl FromRequestParts<ScimApi> for Scim {
    type Rejection = ScimApiError;

    async fn from_request_parts(parts: &mut Parts, app: &ScimApi) -> Result<Self, ScimApiError> {
        let tenant = parts.extensions.get::<Tenant>().cloned();
        let Tenant { org, base } = tenant.ok_or(ScimError::Unauthorized)?;
        Ok(Self {
            app: app.clone(),
            org,
            base,
        })
    }
}

/// The path prefixes the SCIM routes are served under, longest first. The document lists the
/// first; the second serves the same routes for identity providers configured without `/v2`.
const PREFIXES: [&str; 2] = ["/api/scim/v2", "/api/scim"];

type ScimResult = Result<Response, ScimApiError>;

/// The errors a SCIM request can end in, in SCIM's error shape.
#[derive(IntoResponses)]
#[allow(dead_code)]
pub enum ScimErrors {
    /// The request is malformed: bad JSON, an invalid filter, path or value.
    #[response(status = 400, content_type = "application/scim+json")]
    BadRequest(ScimErrorBody),
    /// A missing, malformed or superseded bearer token.
    #[response(status = 401, content_type = "application/scim+json")]
    Unauthorized(ScimErrorBody),
    /// The organisation's plan does not include SCIM, or its SSO is off.
    #[response(status = 403, content_type = "application/scim+json")]
    Forbidden(ScimErrorBody),
    /// No such user, group, resource type or schema in this organisation.
    #[response(status = 404, content_type = "application/scim+json")]
    NotFound(ScimErrorBody),
    /// A write to a role (`admin`, `viewer`), which is read-only, or a method the route does
    /// not take.
    #[response(status = 405, content_type = "application/scim+json")]
    MethodNotAllowed(ScimErrorBody),
    /// The body did not arrive in time.
    #[response(status = 408, content_type = "application/scim+json")]
    RequestTimeout(ScimErrorBody),
    /// The `userName` is another member's, or the `displayName` another group's (or a role's).
    #[response(status = 409, content_type = "application/scim+json")]
    Conflict(ScimErrorBody),
    /// The body is larger than 1 MiB.
    #[response(status = 413, content_type = "application/scim+json")]
    PayloadTooLarge(ScimErrorBody),
    /// The request target is longer than 8 KiB.
    #[response(status = 414, content_type = "application/scim+json")]
    UriTooLong(ScimErrorBody),
    /// A body that is neither `application/scim+json` nor `application/json`.
    #[response(status = 415, content_type = "application/scim+json")]
    UnsupportedMediaType(ScimErrorBody),
    /// More than 100 header fields, or more than 32 KiB of them.
    #[response(status = 431, content_type = "application/scim+json")]
    HeadersTooLarge(ScimErrorBody),
    /// Something failed inside the service; the cause is logged, never shown.
    #[response(status = 500, content_type = "application/scim+json")]
    Internal(ScimErrorBody),
    /// Searching several resource types at once.
    #[response(status = 501, content_type = "application/scim+json")]
    NotImplemented(ScimErrorBody),
}

/// A list's query parameters (RFC 7644 §3.4.2), names matched in any letter case.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct ListParams {
    /// A filter such as `userName eq "ada@example.com"`.
    filter: Option<String>,
    /// The 1-based index of the first result.
    #[param(rename = "startIndex")]
    start_index: Option<String>,
    /// Results per page at most.
    count: Option<String>,
    /// Attributes to return, comma-separated.
    attributes: Option<String>,
    /// Attributes to leave out, comma-separated.
    #[param(rename = "excludedAttributes")]
    excluded_attributes: Option<String>,
}

/// A resource's attribute selection (RFC 7644 §3.9).
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct AttributeParams {
    /// Attributes to return, comma-separated.
    attributes: Option<String>,
    /// Attributes to leave out, comma-separated.
    #[param(rename = "excludedAttributes")]
    excluded_attributes: Option<String>,
}

/// The SCIM operations, relative to a prefix, and their document. A write to a role's id
/// among the groups is 405 with `Allow: GET` (see `groups`).
fn declared() -> (Router<ScimApi>, OpenApi) {
    OpenApiRouter::new()
        .routes(routes!(users::list_users, users::create_user))
        .routes(routes!(users::search_users))
        .routes(routes!(
            users::get_user,
            users::replace_user,
            users::patch_user,
            users::delete_user
        ))
        .routes(routes!(users::search_everything))
        .routes(routes!(groups::list_groups, groups::create_group))
        .routes(routes!(groups::search_groups))
        .routes(routes!(
            groups::get_group,
            groups::replace_group,
            groups::patch_group,
            groups::delete_group
        ))
        .routes(routes!(discovery::service_provider_config))
        .routes(routes!(discovery::resource_types))
        .routes(routes!(discovery::resource_type))
        .routes(routes!(discovery::schemas))
        .routes(routes!(discovery::schema_by_id))
        .split_for_parts()
}

/// Identity providers are configured by hand: the bare base URL and the lists with a trailing
/// slash (`/Users/?filter=…`) are accepted as typed. They are the documented operations again,
/// under other spellings, so they are not listed in the document.
#[allow(clippy::disallowed_methods)]
fn with_spellings(router: Router<ScimApi>) -> Router<ScimApi> {
    router
        .route("/", get(discovery::service_provider_config))
        .route("/Users/", get(users::list_users).post(users::create_user))
        .route(
            "/Groups/",
            get(groups::list_groups).post(groups::create_group),
        )
}

/// The document of the SCIM operations, under `/api/scim/v2`.
pub(crate) fn document() -> OpenApi {
    OpenApi::default().nest(PREFIXES[0], declared().1)
}

/// The SCIM routes under both prefixes.
pub fn routes(state: ScimApi) -> Router {
    let (declared, _) = declared();
    PREFIXES
        .iter()
        .fold(Router::new(), |router, prefix| {
            router.nest(
                prefix,
                prefixed(&state, prefix, with_spellings(declared.clone())),
            )
        })
        .with_state(state)
}

/// `routes` behind the guard, answering in SCIM's shape and content type, with the base URL of
/// `prefix` for the resources' `location`s.
fn prefixed(state: &ScimApi, prefix: &str, routes: Router<ScimApi>) -> Router<ScimApi> {
    let base = Base(format!("{}{prefix}", state.config.app_origin));
    routes
        .fallback(route_not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(from_fn_with_state((state.clone(), base.clone()), guard))
        .layer(Extension(base))
        .layer(middleware::map_response(scim_headers))
}

/// Every SCIM response, errors included, is `application/scim+json` and never cached.
async fn scim_headers(mut response: Response) -> Response {
    let headers = response.headers_mut();
    if headers.contains_key(CONTENT_TYPE) {
        headers.insert(CONTENT_TYPE, HeaderValue::from_static(SCIM_CONTENT_TYPE));
    }
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// The bearer token (401), the organisation's plan (403), then the body's content type (415).
/// Puts the [`Tenant`] into the request's extensions.
async fn guard(
    State((app, Base(base))): State<(ScimApi, Base)>, mut req: Request, next: Next,
) -> Result<Response, ScimApiError> {
    let bearer = req
        .headers()
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, token)| token.trim());
    let org = app.directory.authenticate(bearer).await?;
    // Without a Content-Type the body is taken as JSON too.
    let content_type_ok = !req.headers().contains_key(CONTENT_TYPE)
        || media_type(req.headers()).is_some_and(|t| {
            t.eq_ignore_ascii_case("application/scim+json")
                || t.eq_ignore_ascii_case("application/json")
        });
    if !content_type_ok {
        return Err(ScimApiError::UnsupportedMediaType);
    }
    req.extensions_mut().insert(Tenant { org, base });
    Ok(next.run(req).await)
}

/// A request body that is JSON, at most [`SCIM_BODY_LIMIT`] bytes.
struct ScimBody(Value);

impl<S: Send + Sync> FromRequest<S> for ScimBody {
    type Rejection = ScimApiError;

    async fn from_request(req: Request<Body>, _: &S) -> Result<Self, ScimApiError> {
        let text = read_text(req.into_body(), SCIM_BODY_LIMIT)
            .await
            .map_err(|e| match e {
                Some(BodyError::TooLarge) => ScimApiError::PayloadTooLarge,
                Some(BodyError::TimedOut) => EdgeError::RequestTimeout.into(),
                Some(BodyError::Unreadable) => {
                    ScimError::InvalidSyntax("the request body could not be read".into()).into()
                }
                None => {
                    ScimError::InvalidSyntax("the request body is not valid UTF-8".into()).into()
                }
            })?;
        serde_json::from_str(&text).map(Self).map_err(|_| {
            ScimError::InvalidSyntax("the request body is not valid JSON".into()).into()
        })
    }
}

fn scim_json(status: StatusCode, body: Value) -> Response {
    (status, axum::Json(body)).into_response()
}

/// The query's filter, page and attribute selection.
struct ListQuery {
    filter: Filter,
    page: Page,
    projection: Projection,
}

impl ListQuery {
    fn parse(raw: Option<&str>, filters: &[filter::Filterable]) -> Result<Self, ScimError> {
        let q = QueryParams::parse(raw);
        let filter = match q.get_ci("filter") {
            None => Filter::default(),
            Some(f) => filter::parse(f, filters)?,
        };
        Ok(Self {
            filter,
            page: Page::parse(q.get_ci("startIndex"), q.get_ci("count"))?,
            projection: projection(&q),
        })
    }
}

impl ListQuery {
    /// From a SearchRequest body (RFC 7644 §3.4.3); its names are those of the query
    /// parameters, with `attributes` and `excludedAttributes` as arrays.
    fn from_search(body: &Value, filters: &[filter::Filterable]) -> Result<Self, ScimError> {
        let Value::Object(fields) = body else {
            return Err(ScimError::InvalidSyntax(
                "the body must be a SearchRequest object".into(),
            ));
        };
        let get = |name: &str| scim::field(fields, name).filter(|v| !v.is_null());
        let text = |name: &str| -> Result<Option<String>, ScimError> {
            match get(name) {
                None => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(Value::Number(n)) => Ok(Some(n.to_string())),
                Some(Value::Array(items)) => items
                    .iter()
                    .map(|i| i.as_str().map(str::to_owned))
                    .collect::<Option<Vec<_>>>()
                    .map(|names| Some(names.join(",")))
                    .ok_or_else(|| ScimError::InvalidValue(format!("{name} must list strings"))),
                Some(_) => Err(ScimError::InvalidValue(format!(
                    "{name} has the wrong type"
                ))),
            }
        };
        let filter = match text("filter")? {
            None => Filter::default(),
            Some(f) => filter::parse(&f, filters)?,
        };
        Ok(Self {
            filter,
            page: Page::parse(text("startIndex")?.as_deref(), text("count")?.as_deref())?,
            projection: Projection::parse(
                text("attributes")?.as_deref(),
                text("excludedAttributes")?.as_deref(),
            ),
        })
    }
}

fn projection(q: &QueryParams) -> Projection {
    Projection::parse(q.get_ci("attributes"), q.get_ci("excludedAttributes"))
}

/// Unknown paths are 404, except the base URL typed with a trailing slash, which the nested
/// router's `/` route does not see.
async fn route_not_found(State(app): State<ScimApi>, OriginalUri(uri): OriginalUri) -> Response {
    let path = uri.path().trim_end_matches('/');
    match PREFIXES.iter().find(|p| **p == path) {
        Some(prefix) => {
            let base = Base(format!("{}{prefix}", app.config.app_origin));
            discovery::service_provider_config(Extension(base)).await
        }
        None => ScimApiError::RouteNotFound.into_response(),
    }
}

async fn method_not_allowed() -> ScimApiError {
    ScimApiError::MethodNotAllowed
}
