//! Groups of an organisation's members: pushed by the identity provider over SCIM, or made by
//! an admin where there is no SCIM. The roles (`admin`, `viewer`) are not groups.

use serde::{Deserialize, Serialize};

use crate::clock::Timestamp;
use crate::ids::{GroupId, OrgId};

/// Who made a group, and so who may change it: a group the identity provider pushed is
/// read-only in the admin API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GroupSource {
    Scim,
    Admin,
}

text_enum!(GroupSource { Scim => "scim", Admin => "admin" });

/// Characters of a group's `displayName` at most, as of a `userName`.
pub const GROUP_NAME_MAX_CHARS: usize = 256;

/// Groups one member may be in at most. Removing a member removes their memberships in the
/// same transaction as the rest of them, and a DynamoDB transaction holds 100 items: the
/// member, two claims, [`super::MEMBER_DATA_LIMIT`] data items, the audit entry and a keeper's
/// check leave 31, two a membership.
pub const GROUPS_PER_MEMBER: usize = 15;

/// A group. Its members are stored apart, one item each, so that a large group changes member
/// by member and is never rewritten whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    pub org: OrgId,
    pub id: GroupId,
    /// Unique in the organisation, compared as [`group_name_key`] does; never a role's name.
    pub display_name: String,
    /// The identity provider's own id of the group, kept as sent.
    pub external_id: Option<String>,
    pub source: GroupSource,
    /// 1 when created; one more at each rename or change of `external_id`.
    pub version: u64,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

impl Group {
    /// A new group at version 1.
    pub fn new(org: OrgId, display_name: String, source: GroupSource, now: Timestamp) -> Self {
        Self {
            org,
            id: GroupId::generate(),
            display_name,
            external_id: None,
            source,
            version: 1,
            created_at: now,
            updated_at: now,
        }
    }

    /// The key under which its name is unique in its organisation.
    pub fn name_key(&self) -> String {
        group_name_key(&self.display_name)
    }
}

/// A group name as compared for uniqueness: lowercased, as a `userName` is.
pub fn group_name_key(name: &str) -> String {
    name.to_lowercase()
}

/// Whether `name` is a role's name in any case, which no group may take: the roles appear
/// among SCIM's groups under their names.
pub fn is_role_name(name: &str) -> bool {
    let key = group_name_key(name.trim());
    key == "admin" || key == "viewer"
}
