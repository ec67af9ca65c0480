//! Groups on the wire: a group as an admin sees it, the list, a name sent to create or rename
//! one, a group's id from the path, the page of its members and the answers of a member added
//! or removed.

use knowledge_core::domain::Group;
use knowledge_core::ids::{GroupId, UserId};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::{invalid, page_limit, user_id};
use crate::error::ApiError;
use crate::extract::QueryParams;

/// A group's id from the path. Errors: 400 for one not of the group-id form.
pub fn group_id(raw: &str) -> Result<GroupId, ApiError> {
    GroupId::parse(raw).map_err(|e| invalid(e.to_string()))
}

/// A group as an admin sees it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct GroupView {
    pub id: String,
    pub display_name: String,
    /// `scim` (the identity provider pushed it: read-only here) or `admin` (an admin made it).
    pub source: String,
    /// The identity provider's own id of a group it pushed, when it sent one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub external_id: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

impl From<&Group> for GroupView {
    fn from(g: &Group) -> Self {
        Self {
            id: g.id.to_string(),
            display_name: g.display_name.clone(),
            source: g.source.as_str().to_owned(),
            external_id: g.external_id.clone(),
            created_at: g.created_at.to_iso8601(),
            updated_at: g.updated_at.to_iso8601(),
        }
    }
}

/// `GET /groups`: every group of the organisation, by name.
#[derive(Debug, Serialize, ToSchema)]
pub struct GroupList {
    pub groups: Vec<GroupView>,
}

/// `POST /groups` and `PATCH /groups/{groupId}`: the group's name, unique in the organisation
/// in any letter case, and never a role's (`admin`, `viewer`).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct GroupRequest {
    /// One line of text; trimmed.
    #[schema(min_length = 1, max_length = 256)]
    pub display_name: String,
}

/// `GET /groups/{groupId}/members`'s query.
#[derive(Debug, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct GroupMembersQuery {
    /// The `next` of the previous page.
    #[param(pattern = "^[A-Za-z0-9_-]{1,64}$")]
    pub after: Option<String>,
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<usize>,
}

impl GroupMembersQuery {
    /// Where the page starts and how many it holds at most. Errors: 400 for a malformed
    /// `after` or `limit`.
    pub fn parse(raw: Option<&str>) -> Result<(Option<UserId>, usize), ApiError> {
        let q = QueryParams::parse(raw);
        let after = q.get("after").map(user_id).transpose()?;
        Ok((after, page_limit(&q)?))
    }
}

/// `PUT /groups/{groupId}/members/{userId}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct GroupMemberAdded {
    pub ok: bool,
    /// `false` when the member was in the group already.
    pub added: bool,
}

/// `DELETE /groups/{groupId}/members/{userId}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct GroupMemberRemoved {
    pub ok: bool,
    /// `false` when the member was not in the group.
    pub removed: bool,
}
