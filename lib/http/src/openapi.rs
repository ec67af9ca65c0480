//! The OpenAPI 3.1 document of the HTTP interface: its header (title, version, security schemes,
//! tags), and the route that serves it at `GET /api/openapi.json`. The operations come from the
//! handlers' declarations, through [`crate::document`] (of the endpoints it is given); `docs/openapi.json` is this document as
//! committed, and a test fails when the two differ.

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderValue;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::response::{IntoResponse, Response};
use utoipa::openapi::OpenApi as Document;
use utoipa::openapi::security::{
    ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme,
};
use utoipa::{Modify, OpenApi};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::cookie::COOKIE_NAME;
use crate::error::{ErrorBody, ErrorDetail, ScimErrorBody};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Knowledge service",
        description = "Members of an organisation ask questions in sessions; an agent answers in \
                       the background, and every event goes to a log that clients poll. \
                       Identity providers provision members over SCIM 2.0.\n\nThe SCIM \
                       operations are also served under `/api/scim` without `/v2`, and the \
                       lists with a trailing slash (`/Users/`, `/Groups/`).",
        license(name = "Apache-2.0", identifier = "Apache-2.0")
    ),
    components(schemas(ErrorBody, ErrorDetail, ScimErrorBody)),
    modifiers(&Security),
    tags(
        (name = "sessions", description = "Asking, following an answer, stopping and deleting."),
        (name = "auth", description = "The signed-in person's organisations."),
        (name = "connections", description = "The member's connections to OAuth-protected integrations."),
        (name = "oauth", description = "Where integrations' authorization servers send the browser back, and the service's client metadata."),
        (name = "admin", description = "An organisation's administration, for its admins: \
                                        members and roles, single sign-on, the SCIM token, \
                                        integrations, usage limits and the audit log."),
        (name = "scim", description = "SCIM 2.0 provisioning, for the identity provider."),
        (name = "meta", description = "This document."),
    )
)]
struct Header;

/// The security schemes: the session cookie of a signed-in member, and an organisation's SCIM
/// bearer token.
struct Security;

impl Modify for Security {
    fn modify(&self, doc: &mut Document) {
        let components = doc.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "cookie",
            SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::with_description(
                COOKIE_NAME,
                "The session cookie set at sign-in.",
            ))),
        );
        components.add_security_scheme(
            "scimToken",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some("The organisation's SCIM token, from the admin area."))
                    .build(),
            ),
        );
    }
}

/// Each family of routes: its path prefix, its tag, and the security scheme that admits a
/// request (`None`: no credentials).
const FAMILIES: [(&str, &str, Option<&str>); 11] = [
    ("/api/managed-agents/", "sessions", Some("cookie")),
    ("/api/auth/", "auth", Some("cookie")),
    ("/api/integrations", "connections", Some("cookie")),
    ("/api/memory", "memory", Some("cookie")),
    ("/api/usage", "usage", Some("cookie")),
    ("/api/search", "documents", Some("cookie")),
    ("/api/documents/", "documents", Some("cookie")),
    ("/api/oauth/", "oauth", None),
    ("/api/admin/", "admin", Some("cookie")),
    ("/api/scim/", "scim", Some("scimToken")),
    ("/api/openapi.json", "meta", None),
];

/// The document with the operations of `parts`, each tagged and secured as its family is.
pub(crate) fn document(parts: impl IntoIterator<Item = Document>) -> Document {
    let mut doc = Header::openapi();
    doc.info.version = env!("CARGO_PKG_VERSION").to_owned();
    for part in parts {
        doc.merge(part);
    }
    for (path, item) in doc.paths.paths.iter_mut() {
        let (_, tag, scheme) = FAMILIES
            .iter()
            .find(|(prefix, ..)| path.starts_with(prefix))
            .expect("every route belongs to a family");
        let operations = [
            &mut item.get,
            &mut item.put,
            &mut item.post,
            &mut item.delete,
            &mut item.patch,
        ];
        for operation in operations.into_iter().flatten() {
            operation.tags = Some(vec![tag.to_string()]);
            operation.security = Some(vec![match scheme {
                Some(name) => SecurityRequirement::new(*name, Vec::<String>::new()),
                None => SecurityRequirement::default(),
            }]);
        }
    }
    doc
}

/// The document as served and committed: pretty JSON with a final newline.
pub fn to_json(doc: &Document) -> String {
    let mut json = doc.to_pretty_json().expect("the document serialises");
    json.push('\n');
    json
}

/// The OpenAPI document of this interface.
#[utoipa::path(get, path = "/api/openapi.json", operation_id = "openApiDocument",
    responses((status = 200, description = "This document, OpenAPI 3.1.", body = Value)))]
async fn serve(State(json): State<Bytes>) -> Response {
    let mut response = json.into_response();
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

fn declared() -> (Router<Bytes>, Document) {
    OpenApiRouter::new()
        .routes(routes!(serve))
        .split_for_parts()
}

/// The document's own route, serving `json` ([`to_json`] of the document).
pub(crate) fn routes(json: Bytes) -> Router {
    declared().0.with_state(json)
}

/// The document of the document's own route.
pub(crate) fn document_of_itself() -> Document {
    declared().1
}
