//! The members on the wire: the list and its query, a member as an admin sees them, an
//! invitation, a role change and a removal.

use knowledge_core::admin::{MemberPage, MemberQuery};
use knowledge_core::domain::{Member, MemberCaps, Role, micros_to_usd};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::{invalid, page_limit, user_id};
use crate::error::ApiError;
use crate::extract::QueryParams;

/// `GET /members`'s query.
#[derive(Debug, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct MemberListQuery {
    /// Matched without case within the `userName`, the display name and the user id.
    #[param(max_length = 256)]
    pub q: Option<String>,
    /// The `next` of the previous page.
    #[param(pattern = "^[A-Za-z0-9_-]{1,64}$")]
    pub after: Option<String>,
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<usize>,
}

impl MemberListQuery {
    /// The members asked for. Errors: 400 for a malformed `after` or `limit`, or a search
    /// longer than 256 characters.
    pub fn parse(raw: Option<&str>) -> Result<MemberQuery, ApiError> {
        let q = QueryParams::parse(raw);
        let search = q.get("q").map(str::to_owned);
        if search.as_ref().is_some_and(|s| s.chars().count() > 256) {
            return Err(invalid("q must be at most 256 characters"));
        }
        Ok(MemberQuery {
            search,
            after: q.get("after").map(user_id).transpose()?,
            limit: page_limit(&q)?,
        })
    }
}

/// A member as an admin sees them.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemberView {
    pub user_id: String,
    /// The identity provider's `userName`; absent for a member an operator added.
    pub user_name: Option<String>,
    pub display_name: Option<String>,
    /// `admin` or `viewer`.
    pub role: String,
    pub created_at: String,
    /// Whether single sign-on has bound a provider identity to the member.
    pub identity_bound: bool,
    /// The member's own monthly allowance; absent when they have the organisation's.
    pub caps: Option<MemberCapsView>,
}

/// A member's own monthly allowance; a field absent is unlimited.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemberCapsView {
    pub question_cap: Option<u64>,
    pub cap_usd: Option<f64>,
}

impl From<MemberCaps> for MemberCapsView {
    fn from(c: MemberCaps) -> Self {
        Self {
            question_cap: c.queries,
            cap_usd: c.cost_micros.map(micros_to_usd),
        }
    }
}

impl From<&Member> for MemberView {
    fn from(m: &Member) -> Self {
        let profile = m.profile.as_ref();
        Self {
            user_id: m.user.to_string(),
            user_name: profile.map(|p| p.user_name.clone()),
            display_name: profile.and_then(|p| p.display_name()).map(str::to_owned),
            role: m.role.as_str().to_owned(),
            created_at: m.created_at.to_iso8601(),
            identity_bound: m.identity.is_some(),
            caps: m.caps.map(MemberCapsView::from),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct MemberList {
    pub members: Vec<MemberView>,
    /// Where the next page starts (`after`); absent on the last page.
    pub next: Option<String>,
}

impl From<MemberPage> for MemberList {
    fn from(p: MemberPage) -> Self {
        Self {
            members: p.members.iter().map(MemberView::from).collect(),
            next: p.next.map(|u| u.to_string()),
        }
    }
}

/// `POST /members`: a new member, by the name single sign-on will match.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct InviteRequest {
    /// Matched without case against the provider's claim (`email` by default).
    #[schema(min_length = 1, max_length = 256)]
    pub user_name: String,
    /// `viewer` (the default) or `admin`.
    #[serde(default = "viewer")]
    #[schema(value_type = Option<String>, pattern = "^(admin|viewer)$")]
    pub role: Role,
}

fn viewer() -> Role {
    Role::Viewer
}

/// `PATCH /members/{userId}`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct RoleRequest {
    #[schema(value_type = String, pattern = "^(admin|viewer)$")]
    pub role: Role,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Removed {
    pub ok: bool,
    /// How many of the member's turns in flight were cancelled.
    pub cancelled_turns: usize,
}
