//! The steps' wire format: the JSON each Task state passes in and out, the error names the
//! state machine's Retry and Catch match, and the `error` event a caught failure becomes.

use serde::{Deserialize, Serialize};

use crate::clock::Timestamp;
use crate::domain::{Awaiting, Execution, NewEvent, Session};
use crate::error::Chain;
use crate::ids::{OrgId, RunId, SessionId, SessionKey, UserId};
use crate::ports::StoreError;
use crate::trace::TraceParent;

use super::Handler;

/// Error names a step fails with, as Step Functions sees them (`ErrorEquals`).
pub mod errors {
    /// The agent provider could not be reached or failed; retried, then the turn fails.
    pub const AGENT: &str = "AgentFailed";
    /// The agent provider refused the request (key, model, request shape); not retried.
    pub const AGENT_REJECTED: &str = "AgentRejected";
    /// An integration could not be reached; retried, then the turn fails.
    pub const TOOL: &str = "ToolUnavailable";
    /// The store failed; retried.
    pub const STORE: &str = "StoreUnavailable";
    /// The step's input is not what the state machine sends; never retried.
    pub const INPUT: &str = "InvalidStepInput";

    /// `error` as a metric's label: one of the names above, `Timeout` for a Task that ran out
    /// of time (`States.Timeout`), or `Other` (a runtime's own error), so that the label keeps
    /// few values whatever the workflow reports.
    pub fn reason(error: &str) -> &'static str {
        match error {
            AGENT => AGENT,
            AGENT_REJECTED => AGENT_REJECTED,
            TOOL => TOOL,
            STORE => STORE,
            INPUT => INPUT,
            "States.Timeout" => "Timeout",
            _ => "Other",
        }
    }
}

/// The session a run works on, as it travels in the execution's JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionRef {
    pub user: UserId,
    pub org: OrgId,
    pub session: SessionId,
}

impl From<&SessionKey> for SessionRef {
    fn from(k: &SessionKey) -> Self {
        Self {
            user: k.user.clone(),
            org: k.org.clone(),
            session: k.session.clone(),
        }
    }
}

impl SessionRef {
    pub fn key(&self) -> SessionKey {
        SessionKey {
            user: self.user.clone(),
            org: self.org.clone(),
            session: self.session.clone(),
        }
    }
}

/// Where a step expects the turn to be: the user message it answers and the step marker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnRef {
    pub user_seq: u64,
    pub step: u32,
}

/// A caught failure, as a Catch with `ResultPath` hands it on (`Error`, `Cause`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failure {
    #[serde(rename = "Error")]
    pub error: String,
    #[serde(rename = "Cause", default)]
    pub cause: Option<String>,
}

/// The execution a step runs in, from the context object (`$$.Execution`): its id, its name
/// and when it started (RFC 3339, as Step Functions and the local engine write it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecRef {
    pub id: String,
    pub name: String,
    #[serde(with = "crate::clock::iso8601")]
    pub started_at: Timestamp,
}

impl From<&ExecRef> for Execution {
    fn from(e: &ExecRef) -> Self {
        Self {
            id: e.id.clone(),
            name: e.name.clone(),
            started_at: e.started_at,
        }
    }
}

/// Every step's input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StepInput {
    pub session: SessionRef,
    pub run_id: RunId,
    #[serde(default)]
    pub turn: Option<TurnRef>,
    #[serde(default)]
    pub failure: Option<Failure>,
    /// `None` only from an execution of a definition without it (a Standard execution still in
    /// flight from before the Express machine was deployed); such a step skips the claim.
    #[serde(default)]
    pub execution: Option<ExecRef>,
    /// The run's trace, which the step's span joins. Always present in an execution's input
    /// (`null` when traces are off), since each Task's `Parameters` reads it by path.
    #[serde(default, deserialize_with = "crate::trace::lenient")]
    pub trace: Option<TraceParent>,
}

impl StepInput {
    /// The input of a run's first state.
    pub fn start(key: &SessionKey, run: &RunId, trace: Option<&TraceParent>) -> Self {
        Self {
            session: key.into(),
            run_id: run.clone(),
            turn: None,
            failure: None,
            execution: None,
            trace: trace.cloned(),
        }
    }

    /// The execution this step runs in, if the input says.
    pub(super) fn me(&self) -> Option<Execution> {
        self.execution.as_ref().map(Execution::from)
    }
}

/// Which state the workflow goes to next; the Choice states route on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Next {
    /// Load the next turn (or end the run).
    Load,
    Agent,
    Tool,
    Finish,
    /// The run was cancelled: terminate it.
    Terminate,
    /// The run is over, or no longer owns the session (ended, replaced, or deleted), or
    /// another execution owns it.
    Done,
    /// This execution is near its time limit: start the execution named in
    /// [`StepOutput::handover`] and end this one.
    Handover,
}

impl Next {
    /// The step the state machine's Choice states route to, `None` when the run is over.
    pub fn handler(self) -> Option<Handler> {
        Some(match self {
            Self::Load => Handler::LoadTurn,
            Self::Agent => Handler::CallAgent,
            Self::Tool => Handler::RunTool,
            Self::Finish => Handler::FinishTurn,
            Self::Terminate => Handler::Terminate,
            Self::Done | Self::Handover => return None,
        })
    }
}

/// Every step's output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StepOutput {
    pub cancelled: bool,
    pub next: Next,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<TurnRef>,
    /// With [`Next::Handover`]: the name of the execution to start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handover: Option<String>,
}

impl StepOutput {
    pub(super) fn to(next: Next) -> Self {
        Self {
            cancelled: false,
            next,
            turn: None,
            handover: None,
        }
    }

    pub fn cancelled() -> Self {
        Self {
            cancelled: true,
            ..Self::to(Next::Terminate)
        }
    }

    /// Hand the run over to the execution `name`.
    pub(super) fn handover(name: String) -> Self {
        Self {
            handover: Some(name),
            ..Self::to(Next::Handover)
        }
    }

    /// Where the run of `s` stands, for a step that the run owns.
    pub(super) fn of(s: &Session) -> Self {
        if s.cancelled_at.is_some() {
            return Self::cancelled();
        }
        // Paused for the member: no run is left to go on.
        if s.awaits_member() {
            return Self::to(Next::Done);
        }
        let Some(&user_seq) = s.pending.first() else {
            return Self::to(Next::Load);
        };
        let next = match s.turn.as_ref().map(|t| &t.awaiting) {
            None | Some(Awaiting::Agent) => Next::Agent,
            Some(Awaiting::Tools(_)) => Next::Tool,
            Some(Awaiting::Finish) => Next::Finish,
        };
        Self {
            turn: Some(TurnRef {
                user_seq,
                step: s.turn.as_ref().map_or(0, |t| t.step),
            }),
            ..Self::to(next)
        }
    }
}

/// A step's failure: `name` is the error name the state machine's Retry and Catch match.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{name}: {message}")]
pub struct StepError {
    pub name: &'static str,
    /// For logs; never shown to clients.
    pub message: String,
}

impl StepError {
    pub(super) fn new(name: &'static str, message: impl Into<String>) -> Self {
        Self {
            name,
            message: message.into(),
        }
    }
}

impl From<StoreError> for StepError {
    fn from(e: StoreError) -> Self {
        Self::new(errors::STORE, Chain(&e).to_string())
    }
}

/// The client-facing `error` event for a failure the state machine caught: a stable code and a
/// fixed message chosen by the error name. The cause is logged, never shown.
pub(super) fn error_event(failure: &Failure, turn: bool) -> NewEvent {
    let (code, message) = match failure.error.as_str() {
        _ if !turn => (
            "workflow_failed",
            "The workflow answering this session failed and has stopped.",
        ),
        errors::AGENT => ("agent_failed", "The agent could not answer this message."),
        errors::AGENT_REJECTED => (
            "agent_rejected",
            "The AI provider refused the request. An administrator should check the service's \
             provider settings.",
        ),
        errors::TOOL => (
            "tool_unavailable",
            "A tool the agent needed could not be reached.",
        ),
        "States.Timeout" => ("step_timeout", "Answering this message took too long."),
        _ => (
            "step_failed",
            "Something went wrong while answering this message.",
        ),
    };
    NewEvent::error(code, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lease_renewed_at_any_commit_outlasts_the_longest_step_that_can_follow() {
        use crate::domain::{LEASE_MS, RENEW_BELOW_MS};
        let longest = (super::Handler::ALL.iter())
            .map(|h| h.timeout().as_millis() as i64)
            .max()
            .unwrap();
        assert!(
            RENEW_BELOW_MS >= longest + 30_000,
            "{RENEW_BELOW_MS} < {longest} + 30 s"
        );
        const { assert!(LEASE_MS > RENEW_BELOW_MS) };
        // The bound the docs state: the lease and a sweep a minute after it, within the longest
        // step and two minutes.
        assert!(LEASE_MS + 60_000 <= longest + 120_000);
    }

    #[test]
    fn an_execution_start_reads_as_step_functions_and_moto_write_it_to_the_millisecond() {
        let read = |at: &str| {
            let e: ExecRef = serde_json::from_value(serde_json::json!({
                "id": "arn:aws:states:eu-west-1:1:express:agent:run:abc",
                "name": "run",
                "startedAt": at,
            }))
            .unwrap();
            e.started_at
        };
        let aws = read("2026-11-25T10:00:00.123Z");
        assert_eq!(aws, read("2026-11-25T10:00:00.123456+00:00"));
        assert_eq!(aws, read("2026-11-25T11:00:00.123+01:00"));
        assert_eq!(aws.to_iso8601(), "2026-11-25T10:00:00.123Z");
        let bad: Result<ExecRef, _> = serde_json::from_value(serde_json::json!({
            "id": "x", "name": "run", "startedAt": "yesterday",
        }));
        assert!(bad.is_err());
    }
}
