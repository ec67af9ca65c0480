//! The audit log on the wire: its query (a page before a cursor, of one action) and its
//! entries.

use knowledge_core::CoreError;
use knowledge_core::admin::{AuditPage, AuditQuery};
use knowledge_core::domain::{AuditAction, AuditCursor, AuditEntry};
use serde::Serialize;
use utoipa::{IntoParams, ToSchema};

use super::{invalid, page_limit};
use crate::error::ApiError;
use crate::extract::QueryParams;

/// `GET /audit`'s query.
#[derive(Debug, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AuditListQuery {
    /// The `next` of the previous page.
    #[param(pattern = "^[0-9]+\\.[0-9a-f]{1,64}$")]
    pub before: Option<String>,
    /// Only entries of this action, such as `member.removed`.
    pub action: Option<String>,
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<usize>,
}

impl AuditListQuery {
    /// Errors: 400 for a malformed `before` or `limit`, or an unknown action.
    pub fn parse(raw: Option<&str>) -> Result<AuditQuery, ApiError> {
        let q = QueryParams::parse(raw);
        let before = match q.get("before") {
            None => None,
            Some(b) => Some(
                AuditCursor::decode(b)
                    .ok_or_else(|| invalid("before must be the next of a previous page"))?,
            ),
        };
        let action = match q.get("action") {
            None | Some("") => None,
            Some(a) => Some(a.parse::<AuditAction>().map_err(|_| {
                ApiError::from(CoreError::invalid(
                    "invalid_field",
                    "action must be one of the audit log's actions, such as member.removed",
                ))
            })?),
        };
        Ok(AuditQuery {
            before,
            action,
            limit: page_limit(&q)?,
        })
    }
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuditEntryView {
    pub at: String,
    /// `admin` (a member in the admin API, named by `actorId`), `command-line` (an operator,
    /// with the admin commands), `scim` (the identity provider) or `member` (the member
    /// themselves).
    pub actor: String,
    /// The member who acted, for changes made in the admin API and a member's own.
    pub actor_id: Option<String>,
    /// That member's `userName` when the entry was written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actor_name: Option<String>,
    /// Such as `member.role_changed`.
    pub action: String,
    /// The member's user id, the integration's name, or the organisation's id.
    pub target: String,
    /// The target member's `userName` when the entry was written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_name: Option<String>,
    /// What changed from, such as the role before a role change.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// What it changed to: a role, a new `userName`, limits.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
}

impl From<&AuditEntry> for AuditEntryView {
    fn from(e: &AuditEntry) -> Self {
        let actor = if e.from_command_line() {
            "command-line"
        } else {
            e.actor.as_str()
        };
        Self {
            at: e.at.to_iso8601(),
            actor: actor.to_owned(),
            actor_id: e.by.as_ref().map(|u| u.to_string()),
            actor_name: e.detail.by_name.clone(),
            action: e.action.as_str().to_owned(),
            target: e.target.clone(),
            target_name: e.detail.target_name.clone(),
            from: e.detail.from.clone(),
            to: e.detail.to.clone(),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AuditList {
    pub entries: Vec<AuditEntryView>,
    /// Where the next page starts (`before`); absent on the last page.
    pub next: Option<String>,
}

impl From<AuditPage> for AuditList {
    fn from(p: AuditPage) -> Self {
        Self {
            entries: p.entries.iter().map(AuditEntryView::from).collect(),
            next: p.next.map(|c| c.encode()),
        }
    }
}
