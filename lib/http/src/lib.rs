//! The HTTP interface of the service: one axum [`Router`] that the local binary serves (over
//! its own bounded HTTP/1.1 server, `knowledge_local::server`), the routers of the Lambda
//! functions, one endpoint each, that `lambda_http::run` serves, and the OpenAPI document of
//! them all. Routes are declared once, with their handler's `#[utoipa::path]`, and both the
//! routers and the document are built from those declarations.

pub mod admin;
pub mod allowed;
pub mod auth;
pub mod connections;
pub mod cookie;
pub mod documents;
pub mod edge;
pub mod endpoints;
pub mod error;
pub mod extract;
pub mod guard;
pub mod limits;
pub mod memory;
pub mod openapi;
pub mod return_to;
pub mod routes;
pub mod scim;
pub mod sso;
mod state;
pub mod titles;
pub mod usage;
pub mod wire;

use axum::Router;
use axum::body::Bytes;
use axum::middleware::from_fn_with_state;
use axum::routing::any;
use utoipa_axum::router::{OpenApiRouter, UtoipaMethodRouter};

pub use crate::endpoints::Routes;
pub use crate::state::{HttpConfig, ScimApi, SessionApi};

/// Every route, as the local service serves them: the session, admin and guarded routes
/// of `endpoints` (every endpoint's), SCIM, the OpenAPI document (`document`, as JSON) and
/// `app` (the browser app's pages and assets), behind the same edge.
pub fn router(
    sessions: SessionApi, scim: ScimApi, document: Bytes, app: Router, endpoints: &[Routes],
) -> Router {
    let sessions = session_routes(sessions, endpoints);
    edge(
        sessions
            .merge(scim::routes(scim))
            .merge(openapi::routes(document))
            .merge(app),
        || patterns(crate::document(endpoints)),
    )
}

/// The paths of `doc`: the patterns of the routes it declares.
fn patterns(doc: utoipa::openapi::OpenApi) -> Vec<String> {
    doc.paths.paths.into_keys().collect()
}

/// The OpenAPI document of every route [`router`] serves with `endpoints`, built from the same
/// declarations.
pub fn document(endpoints: &[Routes]) -> utoipa::openapi::OpenApi {
    let sessions = session_parts(endpoints).doc;
    openapi::document([sessions, scim::document(), openapi::document_of_itself()])
}

/// A route as the document declares it: what `template.yaml` routes to each function derives
/// from these.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeclaredRoute {
    /// In upper case: `GET`, `POST`, ...
    pub method: &'static str,
    /// With its path parameters in braces: `/api/integrations/{name}/connect`.
    pub path: String,
    /// The operation's id in the document, unique in it.
    pub operation_id: String,
}

/// The routes of some endpoints, by path and then method.
pub fn declared_routes(endpoints: &[Routes]) -> Vec<DeclaredRoute> {
    let doc = session_parts(endpoints).doc;
    let mut routes = Vec::new();
    for (path, item) in doc.paths.paths {
        let methods = [
            ("GET", item.get),
            ("PUT", item.put),
            ("POST", item.post),
            ("DELETE", item.delete),
            ("PATCH", item.patch),
        ];
        for (method, operation) in methods {
            if let Some(operation) = operation {
                routes.push(DeclaredRoute {
                    method,
                    path: path.clone(),
                    operation_id: operation.operation_id.unwrap_or_default(),
                });
            }
        }
    }
    routes
}

/// The router of one Lambda function's session endpoint. Any other request is answered exactly
/// as the full router answers an unknown route (401 without a valid cookie, then 404 or 405):
/// every request under `/api/managed-agents/` passes the member guard first, unknown paths and
/// methods included.
pub fn session_function(sessions: SessionApi, routes: Routes) -> Router {
    edge(session_routes(sessions, &[routes]), || {
        patterns(session_parts(&[routes]).doc)
    })
}

/// The router of the SCIM function. It holds no cookie signer, so a request outside the SCIM
/// routes (which API Gateway never sends it) is a plain 404.
pub fn scim_function(scim: ScimApi) -> Router {
    edge(scim::routes(scim), || patterns(scim::document()))
}

/// The router of the function that serves the OpenAPI document (`document`, as JSON).
pub fn openapi_function(document: Bytes) -> Router {
    edge(openapi::routes(document), || {
        patterns(openapi::document_of_itself())
    })
}

/// The router of the function that serves the browser app's files (`app`), behind the same
/// edge as every route.
pub fn web_function(app: Router) -> Router {
    edge(app, Vec::new)
}

/// Where the session endpoints live.
const SESSION_PREFIX: &str = "/api/managed-agents";

/// Which guard an `/api/auth` route passes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum AuthGuard {
    /// A current member of the cookie's organisation ([`guard::member`]).
    Member,
    /// The same, for a route whose body is a file, not JSON ([`guard::FileGuard`]).
    MemberFile,
    /// A valid cookie ([`guard::signed_in`]).
    SignedIn,
    /// None: the route is how one signs in.
    Public,
}

/// The declared session routes of some endpoints, before their guards: those under
/// [`SESSION_PREFIX`], the routes at paths of their own by guard, and the document of their
/// operations.
struct SessionParts {
    /// At their full paths: see [`under_session_prefix`].
    under_prefix: Router<SessionApi>,
    /// The admin routes, relative to [`admin::PREFIX`], when the admin endpoint is among them.
    admin: Option<Router<SessionApi>>,
    /// The routes at paths of their own (`/api/auth`, `/api/memory`, ...), with their guards.
    guarded: Vec<(Router<SessionApi>, AuthGuard)>,
    doc: utoipa::openapi::OpenApi,
}

fn session_parts(endpoints: &[Routes]) -> SessionParts {
    let (under_prefix, prefixed) = endpoints
        .iter()
        .flat_map(|r| r.session)
        .map(|route| under_session_prefix(route()))
        .fold(OpenApiRouter::new(), OpenApiRouter::routes)
        .split_for_parts();
    let mut doc = utoipa::openapi::OpenApi::default();
    doc.merge(prefixed);
    let admin = endpoints
        .iter()
        .filter_map(|r| r.admin.map(|routes| routes()))
        .reduce(OpenApiRouter::merge)
        .map(|routes| {
            let (router, part) = routes.split_for_parts();
            doc = std::mem::take(&mut doc).nest(admin::PREFIX, part);
            router
        });
    let guarded = endpoints
        .iter()
        .flat_map(|r| r.guarded)
        .map(|&(route, guard)| {
            let (router, part) = OpenApiRouter::new().routes(route()).split_for_parts();
            doc.merge(part);
            (router, guard)
        })
        .collect();
    SessionParts {
        under_prefix,
        admin,
        guarded,
        doc,
    }
}

/// A session route, declared relative to [`SESSION_PREFIX`], at its full path. The session
/// routes are not a nested router: `Router::nest` rewrites every request's URI on its way in
/// (axum's `StripPrefix`), which cost a tail poll more than its membership check.
fn under_session_prefix(route: UtoipaMethodRouter<SessionApi>) -> UtoipaMethodRouter<SessionApi> {
    let (schemas, mut paths, handler) = route;
    paths.paths = std::mem::take(&mut paths.paths)
        .into_iter()
        .map(|(path, item)| (format!("{SESSION_PREFIX}{path}"), item))
        .collect();
    (schemas, paths, handler)
}

/// The session routes of `endpoints` behind the member guard, and the routes at paths of their
/// own behind theirs.
fn session_routes(state: SessionApi, endpoints: &[Routes]) -> Router {
    let parts = session_parts(endpoints);
    // Unknown routes under the prefix (the prefix itself, with or without its slash, and
    // anything below it) and unknown methods of known ones are answered behind the guard: a
    // non-member learns nothing of the routes (401).
    let unknown = any(routes::member_route_not_found);
    #[allow(clippy::disallowed_methods)]
    let under_prefix = parts
        .under_prefix
        .route(SESSION_PREFIX, unknown.clone())
        .route(&format!("{SESSION_PREFIX}/"), unknown.clone())
        .route(&format!("{SESSION_PREFIX}/{{*unknown}}"), unknown);
    let mut app = under_prefix
        .method_not_allowed_fallback(routes::member_method_not_allowed)
        .layer(guard::MemberGuard(state.clone()));
    if let Some(admin) = parts.admin {
        // The same guard, then the admin role ([`admin::Caller`]); unknown admin routes are
        // refused as unknown session routes are, after the guard.
        let admin = admin
            .fallback(routes::member_route_not_found)
            .method_not_allowed_fallback(routes::member_method_not_allowed)
            .layer(guard::MemberGuard(state.clone()));
        app = app.nest(admin::PREFIX, admin);
    }
    for (route, auth_guard) in parts.guarded {
        app = app.merge(match auth_guard {
            AuthGuard::Member => route.route_layer(guard::MemberGuard(state.clone())),
            AuthGuard::MemberFile => route.route_layer(guard::FileGuard(state.clone())),
            AuthGuard::SignedIn => {
                route.route_layer(from_fn_with_state(state.clone(), guard::signed_in))
            }
            AuthGuard::Public => route,
        });
    }
    app.with_state(state)
}

/// What every request passes, whatever its route: the request log (and, while traces are on,
/// its span, named after the route of `patterns` it matches), compression and the head limits,
/// in that order, before routing; and the answers to unknown routes outside the guarded
/// prefixes. The layers wrap the router once, not each route (`Router::layer` would box
/// them around every route, and clone each box on every request).
pub fn edge(app: Router, patterns: impl FnOnce() -> Vec<String>) -> Router {
    let routed = app
        .fallback(routes::route_not_found)
        .method_not_allowed_fallback(routes::method_not_allowed);
    let edged = tower::ServiceBuilder::new()
        .layer(edge::RequestLog::of(patterns))
        .layer(edge::compression())
        .layer(edge::HeadLimits)
        .service(routed);
    Router::new().fallback_service(edged)
}
