//! Consent to the agent's tool calls (`docs/design/approvals.md`): each tool's policy, from
//! the MCP server's hints, the admin's rule and the member's "always allow", and the approval
//! a call that asks carries in its `tool_use` event.

use serde::{Deserialize, Serialize};

use crate::clock::Timestamp;

/// What happens when the agent asks for a tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolPolicy {
    /// Offered to the model; a call runs.
    Allow,
    /// Offered; a call runs only after the member approves it.
    Ask,
    /// Never offered to the model.
    Block,
}

text_enum!(ToolPolicy {
    Allow => "allow",
    Ask => "ask",
    Block => "block",
});

/// What a tool's server says of it (MCP's tool annotations); `None` where it says nothing.
/// Hints are the server author's claims: only `read_only` changes a default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolHints {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world: Option<bool>,
}

impl ToolHints {
    /// A tool that only reads: the built-in tools' hints.
    pub const READ_ONLY: Self = Self {
        read_only: Some(true),
        destructive: Some(false),
        idempotent: Some(true),
        open_world: Some(false),
    };

    /// The policy without an admin's rule: `allow` for a tool that says it only reads, `ask`
    /// for any other, one that says nothing included.
    pub fn default_policy(self) -> ToolPolicy {
        if self.read_only == Some(true) {
            ToolPolicy::Allow
        } else {
            ToolPolicy::Ask
        }
    }
}

/// An admin's rule for one tool of an integration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolRule {
    pub policy: ToolPolicy,
    /// Whether a member may answer a call of it with "always allow this tool for me".
    pub member_may_always_allow: bool,
}

/// A call's policy for one member, and whether they may always allow the tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Effective {
    pub policy: ToolPolicy,
    pub may_always_allow: bool,
}

/// The policy of a call of a tool with `hints`, under the admin's `rule` (if any), for a
/// member who chose "always allow" for it (`always_allowed`): the admin's `block` first; then
/// the member's choice, while the admin permits it; then the admin's policy; then the hints'
/// default. A member may always allow any tool the admin does not forbid it for.
pub fn effective_policy(
    hints: ToolHints, rule: Option<ToolRule>, always_allowed: bool,
) -> Effective {
    let may_always_allow = rule.is_none_or(|r| r.member_may_always_allow);
    let policy = match rule.map(|r| r.policy) {
        Some(ToolPolicy::Block) => ToolPolicy::Block,
        _ if always_allowed && may_always_allow => ToolPolicy::Allow,
        Some(policy) => policy,
        None => hints.default_policy(),
    };
    Effective {
        policy,
        may_always_allow,
    }
}

/// Where a call that asks stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ApprovalState {
    /// Waiting for the member.
    Pending,
    Approved,
    Declined,
    /// Not answered in time.
    Expired,
}

text_enum!(ApprovalState {
    Pending => "pending",
    Approved => "approved",
    Declined => "declined",
    Expired => "expired",
});

/// The approval a call that asks carries in its `tool_use` event's payload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Approval {
    pub state: ApprovalState,
    /// The integration whose tool it is, for the member to read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub integration: Option<String>,
    /// When a pending call expires.
    #[serde(with = "crate::clock::iso8601")]
    pub expires_at: Timestamp,
    /// Whether the member may answer "always allow this tool for me".
    pub may_always_allow: bool,
}

/// Where one call of the step awaiting tools stands, as the turn's progress keeps it: the
/// `tool_use` event's sequence number, its state and when it expires while pending.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallApproval {
    pub seq: u64,
    pub state: ApprovalState,
    pub expires_at: Timestamp,
}

/// How a member answers a call that asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    Approve,
    Decline,
    /// Approve, and always allow the tool for this member from now on.
    Always,
}

impl Decision {
    /// The state the call takes.
    pub fn state(self) -> ApprovalState {
        match self {
            Self::Approve | Self::Always => ApprovalState::Approved,
            Self::Decline => ApprovalState::Declined,
        }
    }
}

/// How long a call waits for its member by default, in hours; a setting takes 1 to
/// [`APPROVAL_HOURS_MAX`].
pub const APPROVAL_HOURS: u32 = 24;
/// The longest wait a setting may give a call: a week.
pub const APPROVAL_HOURS_MAX: u32 = 168;

/// The tools of one integration a member always allows, as their member data item holds
/// them (kind `allowed_tool`, named after the integration): a JSON array of tool names.
pub fn allowed_tools(value: Option<&str>) -> std::collections::BTreeSet<String> {
    value
        .and_then(|v| serde_json::from_str(v).ok())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAYS_NOTHING: ToolHints = ToolHints {
        read_only: None,
        destructive: None,
        idempotent: None,
        open_world: None,
    };

    fn rule(policy: ToolPolicy, member_may_always_allow: bool) -> Option<ToolRule> {
        Some(ToolRule {
            policy,
            member_may_always_allow,
        })
    }

    #[test]
    fn a_tool_that_says_it_only_reads_runs_and_any_other_asks() {
        assert_eq!(ToolHints::READ_ONLY.default_policy(), ToolPolicy::Allow);
        assert_eq!(SAYS_NOTHING.default_policy(), ToolPolicy::Ask);
        let writes = ToolHints {
            read_only: Some(false),
            destructive: Some(false),
            ..SAYS_NOTHING
        };
        assert_eq!(writes.default_policy(), ToolPolicy::Ask);
    }

    #[test]
    fn the_admins_block_beats_the_members_choice_and_the_choice_beats_the_admins_ask() {
        let policy = |hints, rule, always| effective_policy(hints, rule, always).policy;
        let hints = SAYS_NOTHING;
        assert_eq!(
            policy(hints, rule(ToolPolicy::Block, true), true),
            ToolPolicy::Block
        );
        assert_eq!(
            policy(hints, rule(ToolPolicy::Ask, true), true),
            ToolPolicy::Allow
        );
        assert_eq!(
            policy(hints, rule(ToolPolicy::Ask, false), true),
            ToolPolicy::Ask
        );
        assert_eq!(policy(hints, None, true), ToolPolicy::Allow);
        assert_eq!(policy(hints, None, false), ToolPolicy::Ask);
        let read = ToolHints::READ_ONLY;
        assert_eq!(
            policy(read, rule(ToolPolicy::Ask, true), false),
            ToolPolicy::Ask
        );
        assert_eq!(policy(read, None, false), ToolPolicy::Allow);
        assert!(!effective_policy(hints, rule(ToolPolicy::Ask, false), false).may_always_allow);
        assert!(effective_policy(hints, None, false).may_always_allow);
    }

    #[test]
    fn an_approval_reads_back_from_its_payload_form() {
        let approval = Approval {
            state: ApprovalState::Pending,
            integration: Some("tracker".into()),
            expires_at: Timestamp(1_795_000_000_000),
            may_always_allow: true,
        };
        let payload = serde_json::to_value(&approval).unwrap();
        assert_eq!(payload["state"], "pending");
        assert_eq!(payload["mayAlwaysAllow"], true);
        assert_eq!(payload["integration"], "tracker");
        let back: Approval = serde_json::from_value(payload).unwrap();
        assert_eq!(back, approval);
    }
}
