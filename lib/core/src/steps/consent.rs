//! Consent in the steps: which calls `CallAgent` commits as asking the member (with a pending
//! approval in their `tool_use` events), and what `RunTool` tells the agent of a call the
//! member declined, let expire, or approved and whose outcome a crash made unknown.

use std::collections::{BTreeSet, HashMap};

use crate::domain::{
    Approval, ApprovalState, CallApproval, MemberDataKind, NewEvent, ToolHints, ToolPolicy,
    ToolRule, allowed_tools, effective_policy,
};
use crate::ids::SessionKey;
use crate::ports::{ToolCall, ToolSpec};

use super::Steps;
use super::wire::StepError;

/// What the agent is told of a call the member declined.
pub const DECLINED: &str = "the member declined this call, so it did not run";
/// What the agent is told of a call the member did not answer in time.
pub const EXPIRED: &str = "the member did not answer in time, so this call did not run";
/// What the agent is told of an approved call whose step stopped while calling it.
pub const UNKNOWN: &str = "the call was interrupted, so whether it ran is unknown; it was not \
                           run again";

/// The integrations' tools offered in a step, by name: whose each is, what its server says of
/// it and the admin's rule for it.
#[derive(Default)]
pub(super) struct Offered {
    tools: HashMap<String, OfferedTool>,
}

struct OfferedTool {
    integration: String,
    hints: ToolHints,
    rule: Option<ToolRule>,
}

impl Offered {
    pub(super) fn add(&mut self, tool: &ToolSpec, integration: String, rule: Option<ToolRule>) {
        let offered = OfferedTool {
            integration,
            hints: tool.hints,
            rule,
        };
        self.tools.insert(tool.name.clone(), offered);
    }
}

impl Steps {
    /// The approval each of `calls` carries: `None` for a call that runs (its policy allows
    /// it, a memory tool, or a name no integration offered, which gets its error result), a
    /// pending approval, expiring after the steps' approval wait, for one that asks. Reads the
    /// member's "always allow" of an integration (one read) only when a call of it would ask.
    /// Errors: the store's.
    pub(super) async fn approvals(
        &self, key: &SessionKey, calls: &[ToolCall], offered: &Offered,
    ) -> Result<Vec<Option<Approval>>, StepError> {
        let expires_at = (self.clock.now()).plus_millis(self.approval_wait.as_millis() as i64);
        let mut always: HashMap<&str, BTreeSet<String>> = HashMap::new();
        let mut out = Vec::with_capacity(calls.len());
        for call in calls {
            let Some(t) = offered.tools.get(&call.tool) else {
                out.push(None);
                continue;
            };
            let mut effective = effective_policy(t.hints, t.rule, false);
            if effective.policy == ToolPolicy::Ask && effective.may_always_allow {
                if !always.contains_key(t.integration.as_str()) {
                    let kind = MemberDataKind::AllowedTool;
                    let value = (self.directory)
                        .get_member_data(&key.org, &key.user, kind, &t.integration)
                        .await?;
                    always.insert(&t.integration, allowed_tools(value.as_deref()));
                }
                let chosen = always[t.integration.as_str()].contains(&call.tool);
                effective = effective_policy(t.hints, t.rule, chosen);
            }
            out.push((effective.policy == ToolPolicy::Ask).then(|| Approval {
                state: ApprovalState::Pending,
                integration: Some(t.integration.clone()),
                expires_at,
                may_always_allow: effective.may_always_allow,
            }));
        }
        Ok(out)
    }
}

/// The calls among `events`, placed from sequence number `first` on, that ask the member, as
/// the turn's progress keeps them.
pub(super) fn asked(events: &[NewEvent], first: u64) -> Vec<CallApproval> {
    (events.iter().zip(first..))
        .filter_map(|(e, seq)| match e {
            NewEvent::ToolUse {
                approval: Some(a), ..
            } => Some(CallApproval {
                seq,
                state: a.state,
                expires_at: a.expires_at,
            }),
            _ => None,
        })
        .collect()
}
