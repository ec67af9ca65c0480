//! A member's answer to the calls their paused turn asks them about, and the sweep's expiry of
//! calls left unanswered. Either is one version-checked commit of the session that sets the
//! calls' states in the turn and rewrites their `tool_use` payloads to match; the commit that
//! leaves no call pending claims a new run, and the run resumes the turn.

use crate::clock::Timestamp;
use crate::domain::{
    ApprovalState, Decision, Event, EventBody, MemberDataKind, Session, allowed_tools,
};
use crate::error::CoreError;
use std::collections::BTreeSet;

use crate::ids::{EventId, OrgId, RunId, SessionId, SessionKey, UserId};
use crate::policy::limits::Action;
use crate::ports::{EventsAfter, Reads, StoreError};

use super::admission::{SignedIn, admit};
use super::stop::live;
use super::{MAX_COMMIT_ATTEMPTS, Principal, Service, new_run};

/// A paused session's calls with new states: the session to commit, the `tool_use` events
/// rewritten to match, and the run to start when no call is left pending.
struct Answering {
    next: Session,
    rewritten: Vec<Event>,
    started: Option<(RunId, String)>,
}

/// Sets the state of each call of `current`'s paused turn that `decide` answers, in the turn
/// and in its `tool_use` event among `events`; claims a new run when none is left pending.
fn answer(
    current: &Session, events: &[Event], now: Timestamp,
    decide: impl Fn(u64) -> Option<ApprovalState>,
) -> Answering {
    let mut next = current.clone();
    next.version += 1;
    let mut rewritten = vec![];
    let turn = next.turn.as_mut().expect("a paused session has a turn");
    for call in turn.approvals.iter_mut() {
        let Some(state) = decide(call.seq).filter(|_| call.state == ApprovalState::Pending) else {
            continue;
        };
        call.state = state;
        if let Some(mut e) = events.iter().find(|e| e.seq == call.seq).cloned() {
            if let EventBody::ToolUse {
                approval: Some(a), ..
            } = &mut e.body
            {
                a.state = state;
            }
            rewritten.push(e);
        }
    }
    let started = (!next.turn.as_ref().is_some_and(|t| t.asks())).then(|| {
        next.updated_at = now.max(next.updated_at);
        new_run(&mut next, now)
    });
    Answering {
        next,
        rewritten,
        started,
    }
}

impl Service {
    /// The member answers the call `tool_use` of their paused session: `approve`, `decline`,
    /// or `always` (approve, and always allow the tool for them from now on). One slot of
    /// their rate limit, then one version-checked commit of the call's state in the turn and
    /// in its `tool_use` payload; the answer that leaves no call of the step pending claims a
    /// run in the same commit and starts it. Returns the call's state.
    /// Errors: `Unauthenticated`; `NotFound` for another member's session, or a call that is
    /// not waiting in the session's turn (the turn ended, was cancelled, or never asked);
    /// `Conflict` `approval_answered` when the call was answered already, and
    /// `always_not_permitted` when the admin does not let members always allow the tool
    /// (nothing is changed by either); `RateLimited`.
    pub async fn answer_call(
        &self, who: &SignedIn, session: &SessionId, tool_use: EventId, decision: Decision,
    ) -> Result<ApprovalState, CoreError> {
        let key = who.key(session);
        let action = Action::Approve;
        let window = action.key(&who.user);
        let seq = tool_use.seq();
        let reads = Reads {
            rate_window: Some(&window),
            session: Some(session),
            events: Some(EventsAfter {
                after: seq.saturating_sub(1),
                limit: 1,
            }),
            ..who.reads()
        };
        for _ in 0..MAX_COMMIT_ATTEMPTS {
            let mut read = self.read_as(who, reads).await?;
            let current = live(read.session.take())?;
            let now = self.now();
            let slot = admit(action, &who.user, None, &read, now)?;
            let call = (current.turn.as_ref())
                .and_then(|t| t.approval(seq).copied())
                .ok_or(CoreError::NotFound("call"))?;
            let event = read.events.iter().find(|e| e.seq == seq);
            let Some(EventBody::ToolUse {
                tool,
                approval: Some(approval),
                ..
            }) = event.map(|e| &e.body)
            else {
                return Err(CoreError::NotFound("call"));
            };
            if call.state != ApprovalState::Pending {
                self.deps.store.put_rate_window(slot.update()).await?;
                return Err(CoreError::conflict(
                    "approval_answered",
                    format!("this call was {} already", call.state),
                ));
            }
            if decision == Decision::Always && !approval.may_always_allow {
                self.deps.store.put_rate_window(slot.update()).await?;
                return Err(CoreError::conflict(
                    "always_not_permitted",
                    "the organisation's admin does not let members always allow this tool",
                ));
            }
            let state = decision.state();
            let answering = answer(&current, &read.events, now, |s| (s == seq).then_some(state));
            // The rate window first: an answer refused by it changes nothing.
            match self.deps.store.put_rate_window(slot.update()).await {
                Ok(()) => {}
                Err(StoreError::Conflict) => continue,
                Err(e) => return Err(e.into()),
            }
            let (tool, integration) = (tool.clone(), approval.integration.clone());
            match (self.deps.store)
                .rewrite_events(&answering.next, current.version, &answering.rewritten)
                .await
            {
                Ok(()) => {
                    crate::fault::point("approve", "answered").await;
                    // The run first: the answer stands whatever follows.
                    if let Some((run, execution)) = &answering.started {
                        self.deps
                            .workflow
                            .start(&key, run, execution, answering.next.trace())
                            .await?;
                    }
                    if decision == Decision::Always
                        && let Some(integration) = &integration
                    {
                        self.always_allow(&key, integration, &tool).await?;
                    }
                    return Ok(state);
                }
                Err(StoreError::Conflict) => {}
                Err(StoreError::Gone) => return Err(CoreError::NotFound("session")),
                Err(e) => return Err(e.into()),
            }
        }
        Err(CoreError::internal("answering a call stayed contended"))
    }

    /// Adds `tool` to the tools of `integration` the member always allows. Idempotent.
    async fn always_allow(
        &self, key: &SessionKey, integration: &str, tool: &str,
    ) -> Result<(), CoreError> {
        let add = |tools: &mut BTreeSet<String>| tools.insert(tool.to_owned());
        self.change_allowed(&key.org, &key.user, integration, add)
            .await
            .map(drop)
    }

    /// The tools `p` always allows, as (integration, tool), by integration and tool.
    /// Errors: the store's.
    pub async fn allowed_tools(&self, p: &Principal) -> Result<Vec<(String, String)>, CoreError> {
        let items = self.deps.store.list_member_data(&p.org, &p.user).await?;
        Ok((items.into_iter())
            .filter(|d| d.kind == MemberDataKind::AllowedTool)
            .flat_map(|d| {
                let tools = allowed_tools(Some(&d.value));
                tools.into_iter().map(move |t| (d.name.clone(), t))
            })
            .collect())
    }

    /// Stops always allowing `tool` of `integration` for `p`: its next call asks again.
    /// Errors: `NotFound` when `p` does not always allow it; the store's.
    pub async fn forget_allowed_tool(
        &self, p: &Principal, integration: &str, tool: &str,
    ) -> Result<(), CoreError> {
        let remove = |tools: &mut BTreeSet<String>| tools.remove(tool);
        match self
            .change_allowed(&p.org, &p.user, integration, remove)
            .await?
        {
            true => Ok(()),
            false => Err(CoreError::NotFound("allowed tool")),
        }
    }

    /// Changes the tools of `integration` the member always allows with `change`, which says
    /// whether it changed them; the item goes when none is left. Swapped from the value read,
    /// so two changes at once both land. Returns whether anything changed.
    async fn change_allowed(
        &self, org: &OrgId, user: &UserId, integration: &str,
        change: impl Fn(&mut BTreeSet<String>) -> bool,
    ) -> Result<bool, CoreError> {
        let kind = MemberDataKind::AllowedTool;
        let store = &self.deps.store;
        for _ in 0..MAX_COMMIT_ATTEMPTS {
            let previous = store.get_member_data(org, user, kind, integration).await?;
            let mut tools = allowed_tools(previous.as_deref());
            if !change(&mut tools) {
                return Ok(false);
            }
            let next = (!tools.is_empty())
                .then(|| serde_json::to_string(&tools).expect("names serialise"));
            match store
                .swap_member_data(
                    org,
                    user,
                    kind,
                    integration,
                    previous.as_deref(),
                    next.as_deref(),
                )
                .await
            {
                Ok(()) => return Ok(true),
                Err(StoreError::Conflict) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Err(CoreError::internal(
            "changing the allowed tools stayed contended",
        ))
    }

    /// Expires every pending call of the paused session `current` once the first of them is
    /// past its time, and claims the run that resumes the turn (the agent is told). Returns
    /// whether it committed: `Ok(false)` when it is not yet time, or the session moved on.
    /// Errors: the store's.
    pub(super) async fn expire_calls(
        &self, key: &SessionKey, current: &Session, now: Timestamp,
    ) -> Result<bool, CoreError> {
        let (Some(at), Some(turn)) = (current.approval_expiry(), &current.turn) else {
            return Ok(false);
        };
        if now <= at {
            return Ok(false);
        }
        let first = turn.approvals.iter().map(|a| a.seq).min().unwrap_or(1);
        let limit = turn.approvals.len() + crate::steps::MAX_TOOL_CALLS_PER_STEP;
        let events = (self.deps.store)
            .list_events(key, first.saturating_sub(1), limit)
            .await?;
        let answering = answer(current, &events, now, |_| Some(ApprovalState::Expired));
        match (self.deps.store)
            .rewrite_events(&answering.next, current.version, &answering.rewritten)
            .await
        {
            Ok(()) => {
                if let Some((run, execution)) = &answering.started {
                    self.deps
                        .workflow
                        .start(key, run, execution, answering.next.trace())
                        .await?;
                }
                Ok(true)
            }
            Err(StoreError::Conflict | StoreError::Gone) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }
}
