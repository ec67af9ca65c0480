//! The SCIM `/Users` endpoints: list, search, create, read, replace, patch, delete.

use axum::extract::{Path, RawQuery};
use axum::http::header::LOCATION;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use knowledge_core::ids::OrgId;
use knowledge_core::scim::filter;
use knowledge_core::scim::resource::{self};
use knowledge_core::scim::{Change, ScimError};

use super::{AttributeParams, ListParams};
use super::{ListQuery, Scim, ScimBody, ScimErrors, ScimResult, projection, scim_json};
use crate::error::ScimApiError;
use crate::extract::QueryParams;
use crate::state::ScimApi;

#[utoipa::path(get, path = "/Users", operation_id = "scimListUsers", params(ListParams),
    responses((status = 200, description = "A ListResponse of the organisation's users.",
    body = Value, content_type = "application/scim+json"), ScimErrors))]
pub(super) async fn list_users(Scim { app, org, base }: Scim, RawQuery(q): RawQuery) -> ScimResult {
    let q = ListQuery::parse(q.as_deref(), filter::USER_FILTERS)?;
    users(&app, &org, &base, q).await
}

#[utoipa::path(post, path = "/Users/.search", operation_id = "scimSearchUsers",
    request_body(content = Value, content_type = "application/scim+json"), responses((status = 200,
    description = "A ListResponse of the users the SearchRequest selects.", body = Value,
    content_type = "application/scim+json"), ScimErrors))]
pub(super) async fn search_users(
    Scim { app, org, base }: Scim, ScimBody(body): ScimBody,
) -> ScimResult {
    let q = ListQuery::from_search(&body, filter::USER_FILTERS)?;
    users(&app, &org, &base, q).await
}

/// POST `/.search` over every resource type at once is optional (RFC 7644 §3.4.3): 501.
#[utoipa::path(post, path = "/.search", operation_id = "scimSearchAll",
    request_body(content = Value, content_type = "application/scim+json"), responses((status = 200,
    description = "Never: searching across types is not implemented (501).", body = Value,
    content_type = "application/scim+json"), ScimErrors))]
pub(super) async fn search_everything() -> ScimApiError {
    ScimApiError::SearchAcrossTypes
}

async fn users(app: &ScimApi, org: &OrgId, base: &str, q: ListQuery) -> ScimResult {
    let members = app.directory.list(org, &q.filter).await?;
    let body = q.page.list(&members, |m| {
        q.projection.apply(resource::user_json(m, base))
    });
    Ok(scim_json(StatusCode::OK, body))
}

#[utoipa::path(post, path = "/Users", operation_id = "scimCreateUser", request_body(content = Value,
    content_type = "application/scim+json"), responses( (status = 201,
    description = "The user as created; `Location` is its URL.", body = Value,
    content_type = "application/scim+json", headers(("Location" = String,
    description = "The user's URL")), links( ("read" = (operation_id = "scimGetUser",
    parameters(("id" = "$response.body#/id")))), ("replace" = (operation_id = "scimReplaceUser",
    parameters(("id" = "$response.body#/id")))), ("patch" = (operation_id = "scimPatchUser",
    parameters(("id" = "$response.body#/id")))), ("delete" = (operation_id = "scimDeleteUser",
    parameters(("id" = "$response.body#/id")))), )), ScimErrors, ))]
pub(super) async fn create_user(
    Scim { app, org, base }: Scim, ScimBody(body): ScimBody,
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

#[utoipa::path(get, path = "/Users/{id}", operation_id = "scimGetUser", params(("id" = String, Path,
    description = "The user's id"), AttributeParams), responses((status = 200,
    description = "The user.", body = Value, content_type = "application/scim+json"), ScimErrors))]
pub(super) async fn get_user(
    Scim { app, org, base }: Scim, Path(id): Path<String>, RawQuery(q): RawQuery,
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

#[utoipa::path(put, path = "/Users/{id}", operation_id = "scimReplaceUser",
    request_body(content = Value, content_type = "application/scim+json"), params(("id" = String,
    Path, description = "The user's id")), responses((status = 200,
    description = "The user as replaced.", body = Value, content_type = "application/scim+json"),
    (status = 204, description = "The user was deactivated, which removes the membership."),
    ScimErrors))]
pub(super) async fn replace_user(
    Scim { app, org, base }: Scim, Path(id): Path<String>, ScimBody(body): ScimBody,
) -> ScimResult {
    let change = app.directory.replace(&org, &id, &body).await?;
    Ok(change_response(change, &base))
}

#[utoipa::path(patch, path = "/Users/{id}", operation_id = "scimPatchUser",
    request_body(content = Value, content_type = "application/scim+json"), params(("id" = String,
    Path, description = "The user's id")), responses((status = 200,
    description = "The user as patched.", body = Value, content_type = "application/scim+json"),
    (status = 204, description = "The user was deactivated, which removes the membership."),
    ScimErrors))]
pub(super) async fn patch_user(
    Scim { app, org, base }: Scim, Path(id): Path<String>, ScimBody(body): ScimBody,
) -> ScimResult {
    let change = app.directory.patch(&org, &id, &body).await?;
    Ok(change_response(change, &base))
}

#[utoipa::path(delete, path = "/Users/{id}", operation_id = "scimDeleteUser", params(("id" = String,
    Path, description = "The user's id")), responses((status = 204,
    description = "The membership is removed, with the member's data; their running turns are cancelled."), ScimErrors))]
pub(super) async fn delete_user(Scim { app, org, .. }: Scim, Path(id): Path<String>) -> ScimResult {
    app.directory.delete(&org, &id).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}
