//! The SCIM `/Groups` endpoints: the roles, listed and read-only (a write to a role's id is
//! 405 with `Allow: GET`), and the organisation's groups, which the identity provider creates,
//! renames, fills and deletes.

use axum::extract::{Path, RawQuery};
use axum::http::header::LOCATION;
use axum::http::{HeaderValue, StatusCode};
use axum::response::IntoResponse;
use knowledge_core::ids::OrgId;
use knowledge_core::scim::ScimError;
use knowledge_core::scim::filter;
use knowledge_core::scim::resource::{self, Projection};

use super::{AttributeParams, ListParams};
use super::{ListQuery, Scim, ScimBody, ScimErrors, ScimResult, projection, scim_json};
use crate::extract::QueryParams;
use crate::state::ScimApi;

#[utoipa::path(get, path = "/Groups", operation_id = "scimListGroups", params(ListParams),
    responses((status = 200, description = "A ListResponse of the roles and the groups.",
    body = Value, content_type = "application/scim+json"), ScimErrors))]
pub(super) async fn list_groups(
    Scim { app, org, base }: Scim, RawQuery(q): RawQuery,
) -> ScimResult {
    let q = ListQuery::parse(q.as_deref(), filter::GROUP_FILTERS)?;
    groups(&app, &org, &base, q).await
}

#[utoipa::path(post, path = "/Groups/.search", operation_id = "scimSearchGroups",
    request_body(content = Value, content_type = "application/scim+json"), responses((status = 200,
    description = "A ListResponse of the groups the SearchRequest selects.", body = Value,
    content_type = "application/scim+json"), ScimErrors))]
pub(super) async fn search_groups(
    Scim { app, org, base }: Scim, ScimBody(body): ScimBody,
) -> ScimResult {
    let q = ListQuery::from_search(&body, filter::GROUP_FILTERS)?;
    groups(&app, &org, &base, q).await
}

async fn groups(app: &ScimApi, org: &OrgId, base: &str, q: ListQuery) -> ScimResult {
    let with_members = q.projection.wants("members");
    let groups = app
        .directory
        .list_groups(org, &q.filter, with_members)
        .await?;
    let body = q.page.list(&groups, |g| {
        q.projection.apply(resource::group_json(g, base))
    });
    Ok(scim_json(StatusCode::OK, body))
}

fn rendered(
    group: &knowledge_core::scim::groups::ScimGroup, base: &str, p: &Projection,
) -> ScimResult {
    Ok(scim_json(
        StatusCode::OK,
        p.apply(resource::group_json(group, base)),
    ))
}

#[utoipa::path(get, path = "/Groups/{id}", operation_id = "scimGetGroup", params(("id" = String,
    Path, description = "The group's id, or a role: `admin` or `viewer`"), AttributeParams),
    responses((status = 200, description = "The group.", body = Value,
    content_type = "application/scim+json"), ScimErrors))]
pub(super) async fn get_group(
    Scim { app, org, base }: Scim, Path(id): Path<String>, RawQuery(q): RawQuery,
) -> ScimResult {
    let projection = projection(&QueryParams::parse(q.as_deref()));
    let with_members = projection.wants("members");
    let group = app.directory.get_group(&org, &id, with_members).await?;
    rendered(&group, &base, &projection)
}

#[utoipa::path(post, path = "/Groups", operation_id = "scimCreateGroup",
    request_body(content = Value, content_type = "application/scim+json"), responses((status = 201,
    description = "The group as created, with its members; `Location` is its URL.", body = Value,
    content_type = "application/scim+json", headers(("Location" = String,
    description = "The group's URL"))), ScimErrors))]
pub(super) async fn create_group(
    Scim { app, org, base }: Scim, ScimBody(body): ScimBody,
) -> ScimResult {
    let group = app.directory.create_group(&org, &body).await?;
    let location = format!("{base}/Groups/{}", group.id());
    let mut response = scim_json(StatusCode::CREATED, resource::group_json(&group, &base));
    // The id is the service's own, so the header carries nothing the client sent.
    let value = HeaderValue::from_str(&location).map_err(ScimError::internal)?;
    response.headers_mut().insert(LOCATION, value);
    Ok(response)
}

#[utoipa::path(put, path = "/Groups/{id}", operation_id = "scimReplaceGroup",
    request_body(content = Value, content_type = "application/scim+json"), params(("id" = String,
    Path, description = "The group's id")), responses((status = 200,
    description = "The group as replaced, with its members.", body = Value,
    content_type = "application/scim+json"), ScimErrors))]
pub(super) async fn replace_group(
    Scim { app, org, base }: Scim, Path(id): Path<String>, ScimBody(body): ScimBody,
) -> ScimResult {
    let group = app.directory.replace_group(&org, &id, &body).await?;
    rendered(&group, &base, &Projection::default())
}

#[utoipa::path(patch, path = "/Groups/{id}", operation_id = "scimPatchGroup",
    request_body(content = Value, content_type = "application/scim+json"), params(("id" = String,
    Path, description = "The group's id")), responses((status = 204,
    description = "The group is patched: each member added or removed is one membership written."),
    ScimErrors))]
pub(super) async fn patch_group(
    Scim { app, org, .. }: Scim, Path(id): Path<String>, ScimBody(body): ScimBody,
) -> ScimResult {
    app.directory.patch_group(&org, &id, &body).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

#[utoipa::path(delete, path = "/Groups/{id}", operation_id = "scimDeleteGroup",
    params(("id" = String, Path, description = "The group's id")), responses((status = 204,
    description = "The group is deleted with its memberships."), ScimErrors))]
pub(super) async fn delete_group(
    Scim { app, org, .. }: Scim, Path(id): Path<String>,
) -> ScimResult {
    app.directory.delete_group(&org, &id).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}
