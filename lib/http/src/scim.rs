//! The SCIM 2.0 routes under `/api/scim` and `/api/scim/v2`: the bearer-token guard, the body
//! rules (`application/scim+json` or `application/json`, at most [`SCIM_BODY_LIMIT`]), and
//! handlers that parse, call one [`Directory`] use case and render `application/scim+json`.

use axum::Extension;
use axum::body::Body;
use axum::extract::{FromRequest, OriginalUri, Path, RawQuery, Request, State};
use axum::http::header::{AUTHORIZATION, CACHE_CONTROL, CONTENT_TYPE, LOCATION};
use axum::http::{HeaderValue, StatusCode};
use axum::middleware::{Next, from_fn_with_state};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Router, middleware};
use knowledge_core::ids::OrgId;
use knowledge_core::scim::filter::{self, Filter};
use knowledge_core::scim::resource::{self, Page, Projection};
use knowledge_core::scim::schema;
use knowledge_core::scim::{self, Change, Group, ScimError};
use serde_json::Value;

use crate::ScimApi;
use crate::error::{EdgeError, ScimApiError};
use crate::guard::{BodyError, QueryParams, media_type, read_text};

/// SCIM request bodies larger than this are refused with 413; a user is a few KiB.
pub const SCIM_BODY_LIMIT: usize = 1024 * 1024;

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

/// The path prefixes the SCIM routes are served under, longest first.
const PREFIXES: [&str; 2] = ["/api/scim/v2", "/api/scim"];

type ScimResult = Result<Response, ScimApiError>;

/// The SCIM routes, nested under both prefixes.
pub fn routes(state: ScimApi) -> Router {
    PREFIXES
        .iter()
        .fold(Router::new(), |router, prefix| {
            router.nest(prefix, prefixed(&state, prefix))
        })
        .with_state(state)
}

fn prefixed(state: &ScimApi, prefix: &str) -> Router<ScimApi> {
    let base = Base(format!("{}{prefix}", state.config.app_origin));
    let read_only = || get(list_groups).fallback(groups_are_read_only);
    // Identity providers are configured by hand: the bare base URL and trailing slashes
    // (`/Users/?filter=…`) are accepted as typed.
    Router::new()
        .route("/", get(service_provider_config))
        .route("/Users", get(list_users).post(create_user))
        .route("/Users/", get(list_users).post(create_user))
        .route("/Users/.search", post(search_users))
        .route("/Groups/.search", post(search_groups))
        .route("/.search", post(search_everything))
        .route(
            "/Users/{id}",
            get(get_user)
                .put(replace_user)
                .patch(patch_user)
                .delete(delete_user),
        )
        .route("/Groups", read_only())
        .route("/Groups/", read_only())
        .route(
            "/Groups/{id}",
            get(get_group).fallback(groups_are_read_only),
        )
        .route("/ServiceProviderConfig", get(service_provider_config))
        .route("/ResourceTypes", get(resource_types))
        .route("/ResourceTypes/{id}", get(resource_type))
        .route("/Schemas", get(schemas))
        .route("/Schemas/{id}", get(schema_by_id))
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
    State((app, Base(base))): State<(ScimApi, Base)>,
    mut req: Request,
    next: Next,
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

async fn list_users(
    State(app): State<ScimApi>,
    Extension(Tenant { org, base }): Extension<Tenant>,
    RawQuery(q): RawQuery,
) -> ScimResult {
    let q = ListQuery::parse(q.as_deref(), filter::USER_FILTERS)?;
    users(&app, &org, &base, q).await
}

async fn search_users(
    State(app): State<ScimApi>,
    Extension(Tenant { org, base }): Extension<Tenant>,
    ScimBody(body): ScimBody,
) -> ScimResult {
    let q = ListQuery::from_search(&body, filter::USER_FILTERS)?;
    users(&app, &org, &base, q).await
}

/// POST `/.search` over every resource type at once is optional (RFC 7644 §3.4.3): 501.
async fn search_everything() -> ScimApiError {
    ScimApiError::SearchAcrossTypes
}

async fn users(app: &ScimApi, org: &OrgId, base: &str, q: ListQuery) -> ScimResult {
    let members = app.directory.list(org, &q.filter).await?;
    let body = q.page.list(&members, |m| {
        q.projection.apply(resource::user_json(m, base))
    });
    Ok(scim_json(StatusCode::OK, body))
}

async fn create_user(
    State(app): State<ScimApi>,
    Extension(Tenant { org, base }): Extension<Tenant>,
    ScimBody(body): ScimBody,
) -> ScimResult {
    let member = app.directory.create(&org, &body).await?;
    let location = format!("{base}/Users/{}", member.user);
    let body = resource::created_user_json(&member, &base);
    let mut response = scim_json(StatusCode::CREATED, body);
    // The id is the service's own, so the header carries nothing the client sent.
    let value = HeaderValue::from_str(&location).map_err(ScimError::internal)?;
    response.headers_mut().insert(LOCATION, value);
    Ok(response)
}

async fn get_user(
    State(app): State<ScimApi>,
    Extension(Tenant { org, base }): Extension<Tenant>,
    Path(id): Path<String>,
    RawQuery(q): RawQuery,
) -> ScimResult {
    let member = app.directory.get(&org, &id).await?;
    let projection = projection(&QueryParams::parse(q.as_deref()));
    Ok(scim_json(
        StatusCode::OK,
        projection.apply(resource::user_json(&member, &base)),
    ))
}

/// An update's answer: the user as it now reads, or 204 when it was deactivated (removed).
fn change_response(change: Change, base: &str) -> Response {
    match change {
        Change::Updated(member) => scim_json(StatusCode::OK, resource::user_json(&member, base)),
        Change::Removed => StatusCode::NO_CONTENT.into_response(),
    }
}

async fn replace_user(
    State(app): State<ScimApi>,
    Extension(Tenant { org, base }): Extension<Tenant>,
    Path(id): Path<String>,
    ScimBody(body): ScimBody,
) -> ScimResult {
    let change = app.directory.replace(&org, &id, &body).await?;
    Ok(change_response(change, &base))
}

async fn patch_user(
    State(app): State<ScimApi>,
    Extension(Tenant { org, base }): Extension<Tenant>,
    Path(id): Path<String>,
    ScimBody(body): ScimBody,
) -> ScimResult {
    let change = app.directory.patch(&org, &id, &body).await?;
    Ok(change_response(change, &base))
}

async fn delete_user(
    State(app): State<ScimApi>,
    Extension(Tenant { org, .. }): Extension<Tenant>,
    Path(id): Path<String>,
) -> ScimResult {
    app.directory.delete(&org, &id).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

fn group_values(g: &Group, path: &str) -> Vec<String> {
    match path {
        "displayName" | "id" => vec![g.role.as_str().to_owned()],
        _ => Vec::new(),
    }
}

async fn list_groups(
    State(app): State<ScimApi>,
    Extension(Tenant { org, base }): Extension<Tenant>,
    RawQuery(q): RawQuery,
) -> ScimResult {
    let q = ListQuery::parse(q.as_deref(), filter::GROUP_FILTERS)?;
    groups(&app, &org, &base, q).await
}

async fn search_groups(
    State(app): State<ScimApi>,
    Extension(Tenant { org, base }): Extension<Tenant>,
    ScimBody(body): ScimBody,
) -> ScimResult {
    let q = ListQuery::from_search(&body, filter::GROUP_FILTERS)?;
    groups(&app, &org, &base, q).await
}

async fn groups(app: &ScimApi, org: &OrgId, base: &str, q: ListQuery) -> ScimResult {
    let groups: Vec<Group> = app
        .directory
        .groups(org)
        .await?
        .into_iter()
        .filter(|g| q.filter.accepts(|path| group_values(g, path)))
        .collect();
    let body = q.page.list(&groups, |g| {
        q.projection.apply(resource::group_json(g, base))
    });
    Ok(scim_json(StatusCode::OK, body))
}

async fn get_group(
    State(app): State<ScimApi>,
    Extension(Tenant { org, base }): Extension<Tenant>,
    Path(id): Path<String>,
    RawQuery(q): RawQuery,
) -> ScimResult {
    let group = app
        .directory
        .groups(&org)
        .await?
        .into_iter()
        .find(|g| g.role.as_str() == id)
        .ok_or(ScimError::NotFound("group"))?;
    let projection = projection(&QueryParams::parse(q.as_deref()));
    Ok(scim_json(
        StatusCode::OK,
        projection.apply(resource::group_json(&group, &base)),
    ))
}

async fn groups_are_read_only() -> ScimApiError {
    ScimApiError::GroupsReadOnly
}

async fn service_provider_config(Extension(Base(base)): Extension<Base>) -> Response {
    scim_json(
        StatusCode::OK,
        resource::service_provider_config(&base, DOCS_URL),
    )
}

async fn resource_types(Extension(Base(base)): Extension<Base>) -> Response {
    let types = resource::resource_types(&base);
    scim_json(StatusCode::OK, Page::ALL.list(&types, Value::clone))
}

async fn resource_type(
    Extension(Base(base)): Extension<Base>,
    Path(id): Path<String>,
) -> ScimResult {
    let found = resource::resource_types(&base)
        .into_iter()
        .find(|r| r["id"] == id.as_str())
        .ok_or(ScimError::NotFound("resource type"))?;
    Ok(scim_json(StatusCode::OK, found))
}

async fn schemas(Extension(Base(base)): Extension<Base>) -> Response {
    let schemas = schema::schemas_json(&base);
    scim_json(StatusCode::OK, Page::ALL.list(&schemas, Value::clone))
}

async fn schema_by_id(
    Extension(Base(base)): Extension<Base>,
    Path(id): Path<String>,
) -> ScimResult {
    let found = schema::schemas_json(&base)
        .into_iter()
        .find(|s| s["id"] == id.as_str())
        .ok_or(ScimError::NotFound("schema"))?;
    Ok(scim_json(StatusCode::OK, found))
}

/// Unknown paths are 404, except the base URL typed with a trailing slash, which the nested
/// router's `/` route does not see.
async fn route_not_found(State(app): State<ScimApi>, OriginalUri(uri): OriginalUri) -> Response {
    let path = uri.path().trim_end_matches('/');
    match PREFIXES.iter().find(|p| **p == path) {
        Some(prefix) => {
            let base = Base(format!("{}{prefix}", app.config.app_origin));
            service_provider_config(Extension(base)).await
        }
        None => ScimApiError::RouteNotFound.into_response(),
    }
}

async fn method_not_allowed() -> ScimApiError {
    ScimApiError::MethodNotAllowed
}
