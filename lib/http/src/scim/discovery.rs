//! SCIM's discovery endpoints: the service provider's configuration, resource types, schemas.

use axum::Extension;
use axum::extract::Path;
use axum::http::StatusCode;
use axum::response::Response;
use knowledge_core::scim::ScimError;
use knowledge_core::scim::resource::{self, Page};
use serde_json::Value;

use super::{ScimErrors, ScimResult, scim_json};
use knowledge_core::scim::schema;

use super::{Base, DOCS_URL};

#[utoipa::path(get, path = "/ServiceProviderConfig", operation_id = "scimServiceProviderConfig",
    responses((status = 200, description = "What this SCIM service supports.", body = Value,
    content_type = "application/scim+json"), ScimErrors))]
pub(super) async fn service_provider_config(Extension(Base(base)): Extension<Base>) -> Response {
    scim_json(
        StatusCode::OK,
        resource::service_provider_config(&base, DOCS_URL),
    )
}

#[utoipa::path(get, path = "/ResourceTypes", operation_id = "scimResourceTypes",
    responses((status = 200, description = "A ListResponse of the resource types.", body = Value,
    content_type = "application/scim+json"), ScimErrors))]
pub(super) async fn resource_types(Extension(Base(base)): Extension<Base>) -> Response {
    let types = resource::resource_types(&base);
    scim_json(StatusCode::OK, Page::ALL.list(&types, Value::clone))
}

#[utoipa::path(get, path = "/ResourceTypes/{id}", operation_id = "scimResourceType",
    params(("id" = String, Path, description = "`User` or `Group`")), responses((status = 200,
    description = "The resource type.", body = Value, content_type = "application/scim+json"),
    ScimErrors))]
pub(super) async fn resource_type(
    Extension(Base(base)): Extension<Base>, Path(id): Path<String>,
) -> ScimResult {
    let found = resource::resource_types(&base)
        .into_iter()
        .find(|r| r["id"] == id.as_str())
        .ok_or(ScimError::NotFound("resource type"))?;
    Ok(scim_json(StatusCode::OK, found))
}

#[utoipa::path(get, path = "/Schemas", operation_id = "scimSchemas", responses((status = 200,
    description = "A ListResponse of the schemas.", body = Value,
    content_type = "application/scim+json"), ScimErrors))]
pub(super) async fn schemas(Extension(Base(base)): Extension<Base>) -> Response {
    let schemas = schema::schemas_json(&base);
    scim_json(StatusCode::OK, Page::ALL.list(&schemas, Value::clone))
}

#[utoipa::path(get, path = "/Schemas/{id}", operation_id = "scimSchema", params(("id" = String,
    Path, description = "The schema's URN")), responses((status = 200, description = "The schema.",
    body = Value, content_type = "application/scim+json"), ScimErrors))]
pub(super) async fn schema_by_id(
    Extension(Base(base)): Extension<Base>, Path(id): Path<String>,
) -> ScimResult {
    let found = schema::schemas_json(&base)
        .into_iter()
        .find(|s| s["id"] == id.as_str())
        .ok_or(ScimError::NotFound("schema"))?;
    Ok(scim_json(StatusCode::OK, found))
}
