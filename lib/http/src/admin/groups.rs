//! The organisation's groups (`/api/admin/groups`): listed, made, renamed and deleted, and
//! their members seen, added and removed. Collections of documents will be opened to groups.
//! A group the identity provider pushed over SCIM is listed here but read-only: every change
//! to it is 409 `group_pushed_by_scim`. Every change is audited (`group.*`).

use axum::Json;
use axum::extract::{Path, RawQuery};
use axum::http::StatusCode;
use knowledge_core::policy::limits::Action;

use super::wire::{
    GroupList, GroupMemberAdded, GroupMemberRemoved, GroupMembersQuery, GroupRequest, GroupView,
    MemberList, group_id, user_id,
};
use super::{AdminErrors, Caller};
use crate::error::ApiError;
use crate::extract::JsonBody;
use crate::wire::Done;

/// The organisation's groups by name, those the identity provider pushed (`source: scim`)
/// with those admins made (`source: admin`).
#[utoipa::path(get, path = "/groups", operation_id = "adminListGroups",
    responses((status = 200, description = "Every group.", body = GroupList), AdminErrors))]
pub async fn list_groups(c: Caller) -> Result<Json<GroupList>, ApiError> {
    let groups = c.administration()?.groups(&c.admin).await?;
    Ok(Json(GroupList {
        groups: groups.iter().map(GroupView::from).collect(),
    }))
}

/// Make a group. 409 `group_name_taken` when another group has the name in any letter case,
/// or it is a role's (`admin`, `viewer`).
#[utoipa::path(post, path = "/groups", operation_id = "adminCreateGroup",
    request_body = GroupRequest,
    responses((status = 201, description = "The new group.", body = GroupView), AdminErrors))]
pub async fn create_group(
    c: Caller, JsonBody(body): JsonBody<GroupRequest>,
) -> Result<(StatusCode, Json<GroupView>), ApiError> {
    let uc = c.admitted(Action::AdminWrite).await?;
    let group = uc.create_group(&c.admin, &body.display_name).await?;
    Ok((StatusCode::CREATED, Json((&group).into())))
}

/// Rename a group an admin made; the same name again changes nothing. 409 `group_name_taken`
/// as for a new group, 409 `group_pushed_by_scim` for one the identity provider pushed.
#[utoipa::path(patch, path = "/groups/{groupId}", operation_id = "adminRenameGroup",
    params(("groupId" = String, Path, description = "The group's id")),
    request_body = GroupRequest,
    responses((status = 200, description = "The group as now stored.", body = GroupView),
        AdminErrors))]
pub async fn rename_group(
    c: Caller, Path(group): Path<String>, JsonBody(body): JsonBody<GroupRequest>,
) -> Result<Json<GroupView>, ApiError> {
    let group = group_id(&group)?;
    let uc = c.admitted(Action::AdminWrite).await?;
    let group = uc
        .rename_group(&c.admin, &group, &body.display_name)
        .await?;
    Ok(Json((&group).into()))
}

/// Delete a group an admin made, and every membership in it. 409 `group_pushed_by_scim` for
/// one the identity provider pushed.
#[utoipa::path(delete, path = "/groups/{groupId}", operation_id = "adminDeleteGroup",
    params(("groupId" = String, Path, description = "The group's id")),
    responses((status = 200, description = "The group is gone.", body = Done), AdminErrors))]
pub async fn delete_group(c: Caller, Path(group): Path<String>) -> Result<Json<Done>, ApiError> {
    let group = group_id(&group)?;
    let uc = c.admitted(Action::AdminWrite).await?;
    uc.delete_group(&c.admin, &group).await?;
    Ok(Json(Done::OK))
}

/// A page of a group's members by user id (of any group, a pushed one too).
#[utoipa::path(get, path = "/groups/{groupId}/members", operation_id = "adminListGroupMembers",
    params(("groupId" = String, Path, description = "The group's id"), GroupMembersQuery),
    responses((status = 200, description = "One page of the group's members.", body = MemberList),
        AdminErrors))]
pub async fn group_members(
    c: Caller, Path(group): Path<String>, RawQuery(q): RawQuery,
) -> Result<Json<MemberList>, ApiError> {
    let group = group_id(&group)?;
    let (after, limit) = GroupMembersQuery::parse(q.as_deref())?;
    let page = (c.administration()?)
        .group_members(&c.admin, &group, after.as_ref(), limit)
        .await?;
    Ok(Json(page.into()))
}

/// Put a member into a group an admin made; `added` is `false` when they were in it already.
/// 409 `group_pushed_by_scim` for a pushed group, 409 `too_many_groups` when the member is in
/// as many groups as a member may be.
#[utoipa::path(put, path = "/groups/{groupId}/members/{userId}",
    operation_id = "adminAddGroupMember",
    params(("groupId" = String, Path, description = "The group's id"),
        ("userId" = String, Path, description = "The member's user id")),
    responses((status = 200, description = "The member is in the group.", body = GroupMemberAdded),
        AdminErrors))]
pub async fn add_group_member(
    c: Caller, Path((group, user)): Path<(String, String)>,
) -> Result<Json<GroupMemberAdded>, ApiError> {
    let (group, user) = (group_id(&group)?, user_id(&user)?);
    let uc = c.admitted(Action::AdminWrite).await?;
    let added = uc.add_group_member(&c.admin, &group, &user).await?;
    Ok(Json(GroupMemberAdded { ok: true, added }))
}

/// Take a member out of a group an admin made; `removed` is `false` when they were not in it.
/// 409 `group_pushed_by_scim` for a pushed group.
#[utoipa::path(delete, path = "/groups/{groupId}/members/{userId}",
    operation_id = "adminRemoveGroupMember",
    params(("groupId" = String, Path, description = "The group's id"),
        ("userId" = String, Path, description = "The member's user id")),
    responses((status = 200, description = "The member is not in the group.",
        body = GroupMemberRemoved), AdminErrors))]
pub async fn remove_group_member(
    c: Caller, Path((group, user)): Path<(String, String)>,
) -> Result<Json<GroupMemberRemoved>, ApiError> {
    let (group, user) = (group_id(&group)?, user_id(&user)?);
    let uc = c.admitted(Action::AdminWrite).await?;
    let removed = uc.remove_group_member(&c.admin, &group, &user).await?;
    Ok(Json(GroupMemberRemoved { ok: true, removed }))
}
