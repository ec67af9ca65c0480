//! Sessions and their event log.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Approval, ApprovalState, CallApproval, ExecClaim, TITLE_CHARS};
use crate::clock::Timestamp;
use crate::ids::{EventId, RunId, SessionKey};
use crate::trace::TraceParent;

/// The kinds of event in a session's log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    UserMessage,
    AgentMessage,
    ToolUse,
    ToolResult,
    StatusIdle,
    StatusTerminated,
    Error,
}

text_enum!(EventKind {
    UserMessage => "user_message",
    AgentMessage => "agent_message",
    ToolUse => "tool_use",
    ToolResult => "tool_result",
    StatusIdle => "status_idle",
    StatusTerminated => "status_terminated",
    Error => "error",
});

/// What an event says, by its type: the interface's `type` and `payload`, as a client reads
/// them in a transcript and as the log stores them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", content = "payload", rename_all = "snake_case")]
pub enum EventBody {
    /// A question or follow-up the user sent.
    UserMessage { text: String },
    /// The agent's answer, in Markdown.
    AgentMessage { text: String },
    /// A tool call the agent asked for; with `approval` when it asks the member first. The
    /// one payload the log rewrites: when the member answers, or the call expires, its state.
    ToolUse {
        tool: String,
        input: Value,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        approval: Option<Approval>,
    },
    /// A tool call's result, or `{"error": ...}` when the tool refused its input (or did not
    /// run); with `approval`, the final state of a call that asked the member.
    ToolResult {
        tool: String,
        output: Value,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        approval: Option<ApprovalState>,
    },
    /// The turn is over; the session waits for the next message.
    StatusIdle {},
    /// The run ended early: `cancelled` or `failed`.
    StatusTerminated { reason: String },
    /// A failure the client should show: a stable `code` and a message for people.
    Error { code: String, message: String },
}

/// An event not yet given its place in the log.
pub type NewEvent = EventBody;

impl EventBody {
    pub fn user_message(text: &str) -> Self {
        Self::UserMessage { text: text.into() }
    }
    pub fn agent_message(text: &str) -> Self {
        Self::AgentMessage { text: text.into() }
    }
    pub fn status_idle() -> Self {
        Self::StatusIdle {}
    }
    pub fn status_terminated(reason: &str) -> Self {
        Self::StatusTerminated {
            reason: reason.into(),
        }
    }
    pub fn tool_use(tool: &str, input: &Value) -> Self {
        Self::ToolUse {
            tool: tool.into(),
            input: input.clone(),
            approval: None,
        }
    }
    pub fn tool_result(tool: &str, output: &Value) -> Self {
        Self::ToolResult {
            tool: tool.into(),
            output: output.clone(),
            approval: None,
        }
    }
    pub fn error(code: &str, message: &str) -> Self {
        Self::Error {
            code: code.into(),
            message: message.into(),
        }
    }

    pub fn kind(&self) -> EventKind {
        match self {
            Self::UserMessage { .. } => EventKind::UserMessage,
            Self::AgentMessage { .. } => EventKind::AgentMessage,
            Self::ToolUse { .. } => EventKind::ToolUse,
            Self::ToolResult { .. } => EventKind::ToolResult,
            Self::StatusIdle {} => EventKind::StatusIdle,
            Self::StatusTerminated { .. } => EventKind::StatusTerminated,
            Self::Error { .. } => EventKind::Error,
        }
    }

    /// The payload as the log stores it and the interface shows it.
    pub fn payload(&self) -> Value {
        match serde_json::to_value(self) {
            Ok(Value::Object(mut tagged)) => tagged.remove("payload").unwrap_or_default(),
            _ => unreachable!("an event body serialises as its type and payload"),
        }
    }

    /// The body of a stored event of `kind`. Errors: `payload` lacks a field of its kind, or
    /// has one of the wrong type.
    pub fn from_stored(kind: EventKind, payload: Value) -> Result<Self, serde_json::Error> {
        serde_json::from_value(serde_json::json!({ "type": kind.as_str(), "payload": payload }))
    }

    /// The text of a user or agent message.
    pub fn text(&self) -> Option<&str> {
        match self {
            Self::UserMessage { text } | Self::AgentMessage { text } => Some(text),
            _ => None,
        }
    }
}

/// One entry of a session's log. `seq` numbers the log from 1 without gaps.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub seq: u64,
    pub body: EventBody,
    pub occurred_at: Timestamp,
}

impl Event {
    pub fn id(&self) -> EventId {
        EventId::from_seq(self.seq)
    }

    pub fn kind(&self) -> EventKind {
        self.body.kind()
    }
}

/// The session record. Every change goes through [`crate::ports::SessionStore::commit_session`], which
/// checks `version`, so concurrent writers (the message endpoint and the workflow) never lose an
/// update and the log stays gap-free.
#[derive(Debug, Clone, PartialEq)]
pub struct Session {
    pub key: SessionKey,
    pub title: String,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    /// Stamped by cancel (and by delete of a running session); cleared when a new run starts.
    pub cancelled_at: Option<Timestamp>,
    /// The active workflow run, if any.
    pub run_id: Option<RunId>,
    /// Which execution of the run may advance it; set with `run_id`, cleared with it. `None`
    /// on a run started before claims existed, which any execution may advance.
    pub exec: Option<ExecClaim>,
    /// Set by delete before it removes anything; from then on the session is gone to everyone.
    pub deleting: bool,
    /// Sequence numbers of user messages waiting for their turn, oldest first. The first is the
    /// turn in progress while a run is active.
    pub pending: Vec<u64>,
    /// How far the turn at the head of `pending` has gone; `None` before its first step commits.
    pub turn: Option<TurnProgress>,
    /// Sequence number the next appended event gets.
    pub next_seq: u64,
    /// Incremented by every commit; the optimistic-concurrency token.
    pub version: u64,
}

impl Session {
    /// A new session with an empty log, no run and nothing pending, at version 1.
    pub fn new(key: SessionKey, title: String, now: Timestamp) -> Self {
        Self {
            key,
            title,
            created_at: now,
            updated_at: now,
            cancelled_at: None,
            run_id: None,
            exec: None,
            deleting: false,
            pending: vec![],
            turn: None,
            next_seq: 1,
            version: 1,
        }
    }

    /// Whether a turn is in flight: a run owns the session and has a message to answer. A run
    /// whose last turn has ended (`status_idle` written) with nothing pending is only waiting
    /// to end quietly; it is not in flight, so a cancel then changes nothing.
    pub fn in_flight(&self) -> bool {
        self.run_id.is_some() && !self.pending.is_empty()
    }

    /// Whether the turn in flight waits for its member to answer a call: no run holds the
    /// session, and a call of the step awaiting tools is pending.
    pub fn awaits_member(&self) -> bool {
        self.run_id.is_none() && self.turn.as_ref().is_some_and(TurnProgress::asks)
    }

    /// When the first pending call of a paused turn expires.
    pub fn approval_expiry(&self) -> Option<Timestamp> {
        let turn = self.turn.as_ref().filter(|_| self.run_id.is_none())?;
        (turn.approvals.iter())
            .filter(|a| a.state == ApprovalState::Pending)
            .map(|a| a.expires_at)
            .min()
    }

    /// Gives the session to a new run `run`, whose first execution is named after it.
    pub fn start_run(&mut self, run: RunId, now: Timestamp, trace: Option<TraceParent>) {
        self.exec = Some(ExecClaim::first(&run, now, trace));
        self.run_id = Some(run);
    }

    /// The trace the active run joins: its starting request's, kept on the claim.
    pub fn trace(&self) -> Option<&TraceParent> {
        self.exec.as_ref()?.trace.as_ref()
    }

    /// Ends the active run: no run, no claim, no turn in progress.
    pub fn end_run(&mut self) {
        self.run_id = None;
        self.exec = None;
        self.turn = None;
    }

    /// When the active run's executions are all dead (its claim is stale; a run from before
    /// claims counts from the session's last change), names a new execution to take the run
    /// and returns that name. `None` while an execution may still be alive, or with no run.
    pub fn revive(&mut self, now: Timestamp) -> Option<String> {
        if self.run_dead(now) {
            self.reassign(now)
        } else {
            None
        }
    }

    /// Whether the session has a run that no living execution holds.
    pub fn run_dead(&self, now: Timestamp) -> bool {
        self.run_stale_at().is_some_and(|at| now > at)
    }

    /// When the sweeper must look at the session unless a commit comes first: what the store
    /// indexes a session by. With a run, when its executions are all dead
    /// ([`Session::run_stale_at`]); paused for its member, when the first pending call expires.
    /// `None` otherwise, and while the session is being deleted (its delete ends the run).
    pub fn stale_at(&self) -> Option<Timestamp> {
        if self.deleting {
            return None;
        }
        self.run_stale_at().or_else(|| self.approval_expiry())
    }

    /// When the active run's executions are all dead unless a step commit comes first. `None`
    /// without a run, or while the session is being deleted.
    pub fn run_stale_at(&self) -> Option<Timestamp> {
        if self.run_id.is_none() || self.deleting {
            return None;
        }
        Some(match &self.exec {
            Some(claim) => claim.stale_at(),
            None => self.updated_at.plus_millis(super::CLAIM_LIFETIME_MS),
        })
    }

    /// Names a new execution to take the active run, whatever the claim says, and returns
    /// that name; for when every execution is known to be dead (the process that ran them
    /// stopped). `None` with no run.
    pub fn reassign(&mut self, now: Timestamp) -> Option<String> {
        let run = self.run_id.as_ref()?;
        let claim = match &self.exec {
            Some(claim) => claim.transfer(run, now, None),
            None => ExecClaim::first(run, now, None).transfer(run, now, None),
        };
        let name = claim.name.clone();
        self.exec = Some(claim);
        Some(name)
    }

    /// The title for an opening message: its first [`TITLE_CHARS`] Unicode scalar values.
    pub fn title_for(text: &str) -> String {
        text.chars().take(TITLE_CHARS).collect()
    }

    /// Gives `new` their places after the existing log: consecutive sequence numbers and
    /// timestamps that never go backwards, so the log is ordered by both. Moves `updated_at`.
    pub fn place(&mut self, now: Timestamp, new: Vec<NewEvent>) -> Vec<Event> {
        let at = now.max(self.updated_at);
        self.updated_at = at;
        new.into_iter()
            .map(|e| {
                let seq = self.next_seq;
                self.next_seq += 1;
                Event {
                    seq,
                    body: e,
                    occurred_at: at,
                }
            })
            .collect()
    }
}

/// Progress of the turn in flight, committed with every step's events. `step` is the step
/// marker: a step commits only if the marker is still the one it started from, so a step that
/// runs twice commits once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnProgress {
    /// Steps committed in this turn.
    pub step: u32,
    /// Agent calls committed in this turn.
    pub agent_calls: u32,
    /// Sequence number of the turn's first own event; earlier ones are its history.
    pub from_seq: u64,
    pub awaiting: Awaiting,
    /// The calls of the step awaiting tools that asked the member, in call order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub approvals: Vec<CallApproval>,
    /// The approved call `RunTool` is calling: committed before the call and cleared with its
    /// result, so a step that finds it set knows the call may have run, and runs it no more.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calling: Option<u64>,
}

impl TurnProgress {
    /// Whether a call of the step awaiting tools is still pending.
    pub fn asks(&self) -> bool {
        self.approvals
            .iter()
            .any(|a| a.state == ApprovalState::Pending)
    }

    /// Where the call `seq` stands, when it asked the member.
    pub fn approval(&self, seq: u64) -> Option<&CallApproval> {
        self.approvals.iter().find(|a| a.seq == seq)
    }
}

/// What the turn in flight needs next.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "kind", content = "toolUses")]
pub enum Awaiting {
    /// The agent, to answer or to ask for tools.
    Agent,
    /// The results of these `tool_use` events (sequence numbers, in call order).
    Tools(Vec<u64>),
    /// Its `status_idle`: the answer is written.
    Finish,
}

/// A line of the session list.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionSummary {
    pub id: crate::ids::SessionId,
    pub title: String,
    pub updated_at: Timestamp,
    /// Whether the session waits for its member to answer a call ([`Session::awaits_member`]).
    pub awaits_member: bool,
}

impl SessionSummary {
    /// The line of the session list `s` makes.
    pub fn of(s: &Session) -> Self {
        Self {
            id: s.key.session.clone(),
            title: s.title.clone(),
            updated_at: s.updated_at,
            awaits_member: s.awaits_member(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{OrgId, UserId};

    #[test]
    fn title_keeps_sixty_characters_without_splitting_any() {
        let text = "é".repeat(70);
        let title = Session::title_for(&text);
        assert_eq!(title.chars().count(), 60);
        assert_eq!(title, "é".repeat(60));
        assert_eq!(Session::title_for("short"), "short");
    }

    #[test]
    fn placed_events_are_consecutive_and_never_go_back_in_time() {
        let mut s = Session {
            key: SessionKey {
                user: UserId::generate(),
                org: OrgId::generate(),
                session: crate::ids::SessionId::generate(),
            },
            title: String::new(),
            created_at: Timestamp(100),
            updated_at: Timestamp(500),
            cancelled_at: None,
            run_id: None,
            exec: None,
            deleting: false,
            pending: vec![],
            turn: None,
            next_seq: 4,
            version: 1,
        };
        let placed = s.place(
            Timestamp(300),
            vec![NewEvent::status_idle(), NewEvent::status_idle()],
        );
        assert_eq!(placed.iter().map(|e| e.seq).collect::<Vec<_>>(), vec![4, 5]);
        assert!(placed.iter().all(|e| e.occurred_at == Timestamp(500)));
        assert_eq!(s.next_seq, 6);
    }

    #[test]
    fn an_event_body_is_stored_as_its_kind_and_payload_and_read_back_whole() {
        let bodies = [
            NewEvent::user_message("q"),
            NewEvent::agent_message("a"),
            NewEvent::tool_use("search", &serde_json::json!({ "query": "q" })),
            NewEvent::tool_result("search", &serde_json::json!([1, 2])),
            NewEvent::status_idle(),
            NewEvent::status_terminated("cancelled"),
            NewEvent::error("agent_failed", "no answer"),
        ];
        for body in bodies {
            let back = EventBody::from_stored(body.kind(), body.payload()).unwrap();
            assert_eq!(back, body);
        }
        assert_eq!(NewEvent::status_idle().payload(), serde_json::json!({}));
        assert_eq!(
            NewEvent::user_message("q").payload(),
            serde_json::json!({ "text": "q" })
        );
    }

    #[test]
    fn a_stored_payload_without_its_kinds_fields_is_refused() {
        let wrong = EventBody::from_stored(EventKind::ToolUse, serde_json::json!({ "text": "x" }));
        assert!(wrong.is_err());
        let typed =
            EventBody::from_stored(EventKind::UserMessage, serde_json::json!({ "text": 7 }));
        assert!(typed.is_err());
    }
}
