//! The SCIM `/Groups` endpoints: the organisation's roles, read-only.

use axum::extract::{Path, RawQuery};
use axum::http::StatusCode;
use knowledge_core::ids::OrgId;
use knowledge_core::scim::filter;
use knowledge_core::scim::resource::{self};
use knowledge_core::scim::{Group, ScimError};

use super::{AttributeParams, ListParams};
use super::{ListQuery, Scim, ScimBody, ScimErrors, ScimResult, projection, scim_json};
use crate::error::ScimApiError;
use crate::extract::QueryParams;
use crate::state::ScimApi;

fn group_values(g: &Group, path: &str) -> Vec<String> {
    match path {
        "displayName" | "id" => vec![g.role.as_str().to_owned()],
        _ => Vec::new(),
    }
}

#[utoipa::path(get, path = "/Groups", operation_id = "scimListGroups", params(ListParams),
    responses((status = 200, description = "A ListResponse of the roles, as groups.", body = Value,
    content_type = "application/scim+json"), ScimErrors))]
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

#[utoipa::path(get, path = "/Groups/{id}", operation_id = "scimGetGroup", params(("id" = String,
    Path, description = "The role: `admin` or `viewer`"), AttributeParams), responses((status = 200,
    description = "The group.", body = Value, content_type = "application/scim+json"), ScimErrors))]
pub(super) async fn get_group(
    Scim { app, org, base }: Scim, Path(id): Path<String>, RawQuery(q): RawQuery,
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

pub(super) async fn groups_are_read_only() -> ScimApiError {
    ScimApiError::GroupsReadOnly
}
