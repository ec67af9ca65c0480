//! The audit log: who changed what in an organisation, named as they were named when it
//! happened, and what changed.

use serde::{Deserialize, Serialize};

use crate::clock::Timestamp;
use crate::ids::{OrgId, UserId};

text_enum!(Actor { Scim => "scim", Admin => "admin", Member => "member" });
text_enum!(AuditAction {
    UserProvisioned => "user.provisioned",
    UserUpdated => "user.updated",
    UserDeactivated => "user.deactivated",
    UserDeleted => "user.deleted",
    MemberAdded => "member.added",
    MemberRoleChanged => "member.role_changed",
    MemberCapsChanged => "member.caps_changed",
    MemberRemoved => "member.removed",
    MemberSignedOut => "member.signed_out",
    MemberIdentityBound => "member.identity_bound",
    MemberDataStored => "member.data_stored",
    SsoConfigured => "sso.configured",
    ScimTokenGenerated => "scim_token.generated",
    IntegrationConnected => "integration.connected",
    IntegrationDisconnected => "integration.disconnected",
    ToolPolicyChanged => "integration.tool_policy_changed",
    AccountConnected => "account.connected",
    AccountDisconnected => "account.disconnected",
    OrgLimitsChanged => "org.limits_changed",
    OrgMemoryChanged => "org.memory_changed",
    OrgChanged => "org.changed",
    GroupCreated => "group.created",
    GroupRenamed => "group.renamed",
    GroupDeleted => "group.deleted",
    GroupMemberAdded => "group.member_added",
    GroupMemberRemoved => "group.member_removed",
    CollectionCreated => "collection.created",
    CollectionChanged => "collection.changed",
    CollectionDeleted => "collection.deleted",
    DocumentAdded => "document.added",
    DocumentReplaced => "document.replaced",
    DocumentDeleted => "document.deleted",
});

/// Who did something recorded in the audit log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Actor {
    /// The organisation's identity provider, through the SCIM interface.
    Scim,
    /// An admin: a member in the admin API (the entry's `by` names them), or an operator at
    /// the command line (no `by`: [`AuditEntry::from_command_line`]).
    Admin,
    /// The member themselves (signing out, connecting an account).
    Member,
}

/// What an audit entry records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum AuditAction {
    UserProvisioned,
    UserUpdated,
    UserDeactivated,
    UserDeleted,
    MemberAdded,
    MemberRoleChanged,
    /// A member's own monthly allowance was set, or given back to the organisation's.
    MemberCapsChanged,
    MemberRemoved,
    MemberSignedOut,
    /// A provider identity was bound at the member's first single sign-on.
    MemberIdentityBound,
    /// A member's data item (a credential for an integration, say) was stored; the target is
    /// the member, never the value.
    MemberDataStored,
    /// The organisation's single sign-on was configured, switched on or off.
    SsoConfigured,
    ScimTokenGenerated,
    IntegrationConnected,
    IntegrationDisconnected,
    /// An admin set (or cleared) the policy of one tool of an integration.
    ToolPolicyChanged,
    /// An account was connected to an OAuth integration: a member's own (the target is the
    /// integration's name, `by` the member) or the organisation's (`by` the admin).
    AccountConnected,
    /// A connection to an OAuth integration was removed and its tokens revoked.
    AccountDisconnected,
    /// The organisation's monthly query quota or cost cap, or each member's allowance, was set.
    OrgLimitsChanged,
    /// The agent's memory was switched on or off for the organisation.
    OrgMemoryChanged,
    /// The operator changed the organisation's plan, status or limits at the command line.
    OrgChanged,
    /// A group was created (the target is its id, `to` its name).
    GroupCreated,
    /// A group's name (or its identity provider's id of it) changed: `from` and `to` its names.
    GroupRenamed,
    /// A group was deleted with its memberships (`from` its name).
    GroupDeleted,
    /// A member joined a group: the target is the member, `to` the group's name.
    GroupMemberAdded,
    /// A member left a group: the target is the member, `from` the group's name.
    GroupMemberRemoved,
    /// A collection was created (the target is its id, `to` its name).
    CollectionCreated,
    /// A collection's name, description or access changed: `from` and `to` say which.
    CollectionChanged,
    /// A collection was deleted with its documents (`from` its name).
    CollectionDeleted,
    /// A document was uploaded into a collection (the target is its id, `to` its name).
    DocumentAdded,
    /// A document's original was replaced by a new upload (`to` its name).
    DocumentReplaced,
    /// A document was deleted with its original and passages (`from` its name).
    DocumentDeleted,
}

/// One entry of an organisation's audit log. Written in the same transaction as the change it
/// records, so the log never misses a change nor records one that did not happen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditEntry {
    pub org: OrgId,
    pub at: Timestamp,
    /// Orders the entries one process writes in the same millisecond (a process-wide counter)
    /// and keeps all entries' keys apart (random digits).
    pub id: String,
    pub actor: Actor,
    pub action: AuditAction,
    /// The member's user id, the integration's name, or the organisation's id for the
    /// organisation's own settings.
    pub target: String,
    /// The member who acted, for changes an admin made in the admin API; `None` for the
    /// identity provider, an operator at the command line, and a member's own sign-out.
    pub by: Option<UserId>,
    /// Names and the change, as they were when the entry was written.
    pub detail: AuditDetail,
}

/// Characters of a name an entry keeps at most.
pub const AUDIT_NAME_CHARS: usize = 256;

/// What makes an entry readable without looking ids up, which may no longer resolve (a removed
/// member): the people's names as they were when it was written, and what changed. Every part
/// is optional; entries written before it have none.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditDetail {
    /// The target member's `userName`, when the target is a member who has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_name: Option<String>,
    /// The `userName` of the member who acted (`by`), when they have one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by_name: Option<String>,
    /// The value before the change, such as the role before a role change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// The value after it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
}

impl AuditDetail {
    /// The stored form: JSON, or `None` when there is nothing to store.
    pub fn to_text(&self) -> Option<String> {
        (*self != Self::default()).then(|| serde_json::to_string(self).expect("plain strings"))
    }

    /// Reads [`AuditDetail::to_text`]'s form. Errors: the text is not that form.
    pub fn from_text(text: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(text)
    }
}

fn name(text: &str) -> String {
    text.chars().take(AUDIT_NAME_CHARS).collect()
}

/// Where a page of the audit log ends: the next page holds the entries strictly older.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditCursor {
    pub at: Timestamp,
    pub id: String,
}

impl AuditCursor {
    /// The text form clients send back: `<at millis>.<id>`.
    pub fn encode(&self) -> String {
        format!("{}.{}", self.at.millis(), self.id)
    }

    /// Reads [`AuditCursor::encode`]'s form; `None` for anything else.
    pub fn decode(text: &str) -> Option<Self> {
        let (at, id) = text.split_once('.')?;
        let at = at.parse::<i64>().ok().filter(|at| *at >= 0)?;
        let valid_id =
            !id.is_empty() && id.len() <= 64 && id.bytes().all(|b| b.is_ascii_hexdigit());
        valid_id.then(|| Self {
            at: Timestamp(at),
            id: id.to_owned(),
        })
    }
}

impl AuditEntry {
    pub fn new(
        org: &OrgId, at: Timestamp, actor: Actor, action: AuditAction, target: &str,
    ) -> Self {
        Self {
            org: org.clone(),
            at,
            id: {
                static WRITTEN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
                let n = WRITTEN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let random = uuid::Uuid::new_v4().simple().to_string();
                format!("{n:012x}{}", &random[..20])
            },
            actor,
            action,
            target: target.to_owned(),
            by: None,
            detail: AuditDetail::default(),
        }
    }

    /// The same entry, naming the member who acted.
    pub fn by(mut self, user: &UserId) -> Self {
        self.by = Some(user.clone());
        self
    }

    /// The same entry, with the `userName` of the member who acted (cut to
    /// [`AUDIT_NAME_CHARS`]); `None` changes nothing.
    pub fn by_named(mut self, user_name: Option<&str>) -> Self {
        self.detail.by_name = user_name.map(name).or(self.detail.by_name);
        self
    }

    /// The same entry, with the target member's `userName` (cut to [`AUDIT_NAME_CHARS`]);
    /// `None` changes nothing.
    pub fn target_named(mut self, user_name: Option<&str>) -> Self {
        self.detail.target_name = user_name.map(name).or(self.detail.target_name);
        self
    }

    /// The same entry, saying what changed from what (`None`: from nothing).
    pub fn changed(mut self, from: Option<&str>, to: &str) -> Self {
        self.detail.from = from.map(name);
        self.detail.to = Some(name(to));
        self
    }

    /// The same entry, saying what the target was before it went (`from` alone).
    pub fn was(mut self, from: &str) -> Self {
        self.detail.from = Some(name(from));
        self
    }

    /// The same entry, saying what the target became (a new member's role).
    pub fn became(self, to: &str) -> Self {
        self.changed(None, to)
    }

    /// Whether an operator wrote it at the command line, not a member nor the identity
    /// provider.
    pub fn from_command_line(&self) -> bool {
        self.actor == Actor::Admin && self.by.is_none()
    }

    /// Where a page that ends with this entry ends.
    pub fn cursor(&self) -> AuditCursor {
        AuditCursor {
            at: self.at,
            id: self.id.clone(),
        }
    }
}
