//! `RunTool`: runs the turn's oldest tool call that has no result yet.

use std::future::Future;
use std::pin::Pin;

use serde_json::Value;

use crate::adapters::integrations::find_tool;
use crate::domain::{ApprovalState, Awaiting, EventBody, NewEvent, SavedFrom, Session, ToolPolicy};
use crate::ids::SessionKey;
use crate::memory;
use crate::ports::{IntegrationError, Integrations, StoreError};
use crate::telemetry::{self, IntegrationKind, ToolOutcome};
use crate::trace;
use tracing::Instrument;

use super::bounds::{bounded_output, bounded_text};
use super::consent::{DECLINED, EXPIRED, UNKNOWN};
use super::record::{Committed, Found};
use super::wire::{Next, StepError, StepInput, StepOutput, errors};
use super::{Handler, Steps};

impl Steps {
    /// Runs the turn's oldest tool call that has no result yet, and commits its `tool_result`.
    /// A tool that refuses its input gets `{"error": ...}` as its result, for the agent to see;
    /// an unreachable integration fails the step, to be retried.
    /// A cancel while the tool runs is passed to the integration, which tells the remote end;
    /// the step then commits nothing and routes the run to its termination.
    pub async fn run_tool(
        &self, input: &StepInput, cancelled: impl Future<Output = ()> + Send,
    ) -> Result<StepOutput, StepError> {
        let mut cancelled = std::pin::pin!(cancelled);
        let key = input.session.key();
        let s = match self.begin(input, Next::Tool, Handler::RunTool).await? {
            Found::Proceed(s) => *s,
            Found::Return(out) => return Ok(out),
        };
        let Some(Awaiting::Tools(uses)) = s.turn.as_ref().map(|t| &t.awaiting) else {
            unreachable!("find returns Proceed for Tool only while tools are awaited")
        };
        let use_seq = uses[0];
        let turn = s.turn.as_ref().expect("a turn awaiting tools");
        let asked = turn.approval(use_seq).map(|a| a.state);
        let call = self
            .sessions
            .list_events(&key, use_seq - 1, 1)
            .await?
            .into_iter()
            .next()
            .filter(|e| e.seq == use_seq)
            .and_then(|e| match e.body {
                EventBody::ToolUse { tool, input, .. } => Some((tool, input)),
                _ => None,
            });
        let Some((tool, tool_input)) = call else {
            return Err(StepError::new(
                errors::STORE,
                "the tool_use event is missing",
            ));
        };
        // A call that asked the member runs only once approved, and at most once.
        let refusal = match asked {
            None => None,
            Some(ApprovalState::Pending) => {
                return Err(StepError::new(
                    errors::INPUT,
                    "a call still waits for its member",
                ));
            }
            Some(ApprovalState::Declined) => Some(DECLINED),
            Some(ApprovalState::Expired) => Some(EXPIRED),
            Some(ApprovalState::Approved) if turn.calling == Some(use_seq) => Some(UNKNOWN),
            Some(ApprovalState::Approved) => None,
        };
        let mut s = s;
        if asked == Some(ApprovalState::Approved) && refusal.is_none() {
            s = match self.mark_calling(input, s, use_seq).await? {
                Found::Proceed(s) => *s,
                Found::Return(out) => return Ok(out),
            };
        }
        let kind = if memory::is_memory_tool(&tool) {
            IntegrationKind::Memory
        } else if tool == crate::documents::SEARCH_TOOL {
            IntegrationKind::Documents
        } else {
            IntegrationKind::Connected
        };
        let declined = refusal.is_some();
        let span = trace::tool(&tool, kind.as_str());
        let output = async {
            Ok::<_, StepError>(if let Some(refusal) = refusal {
                Ok(Ok(serde_json::json!({ "error": refusal })))
            } else if memory::is_memory_tool(&tool) {
                tokio::select! {
                    biased;
                    () = cancelled.as_mut() => Err(IntegrationError::Cancelled),
                    out = self.run_memory_tool(&key, &tool, &tool_input, use_seq) => out,
                }
            } else {
                let integrations = self.integrations()?;
                run_integration_tool(integrations, &key, &tool, &tool_input, cancelled.as_mut())
                    .await
            })
        }
        .instrument(span.clone())
        .await?;
        if !matches!(output, Err(IntegrationError::Cancelled)) {
            let outcome = match &output {
                _ if declined => ToolOutcome::Declined,
                Ok(Ok(_)) => ToolOutcome::Ok,
                _ => ToolOutcome::Failed,
            };
            if outcome != ToolOutcome::Ok {
                trace::failed(&span, outcome.as_str());
            }
            telemetry::tool_call(kind, outcome);
        }
        let output = match output {
            Ok(Ok(value)) => bounded_output(value),
            Ok(Err(message)) | Err(IntegrationError::Invalid(message)) => {
                serde_json::json!({ "error": bounded_text(&message) })
            }
            Err(IntegrationError::Cancelled) => return Ok(StepOutput::cancelled()),
            Err(e @ IntegrationError::Refused(_)) => {
                serde_json::json!({ "error": bounded_text(&e.to_string()) })
            }
            // An approved call is not called again: its step says it may not have run.
            Err(e @ IntegrationError::Unavailable(_)) if asked.is_some() => {
                let message = format!("{e}; the call may not have run, and was not run again");
                serde_json::json!({ "error": bounded_text(&message) })
            }
            Err(e @ IntegrationError::Unavailable(_)) => {
                return Err(StepError::new(errors::TOOL, e.to_string()));
            }
        };
        let events = vec![NewEvent::ToolResult {
            tool: tool.clone(),
            output,
            approval: asked,
        }];
        self.commit_step(input, Next::Tool, s, events, None, |s| {
            let mut next = s.clone();
            let t = next.turn.as_mut().expect("a turn awaiting tools");
            t.step += 1;
            t.calling = None;
            if let Awaiting::Tools(uses) = &mut t.awaiting {
                uses.remove(0);
                if uses.is_empty() {
                    t.awaiting = Awaiting::Agent;
                    t.approvals.clear();
                }
            }
            next
        })
        .await
    }

    /// Commits that the approved call `seq` is being called (`TurnProgress::calling`), before
    /// the call: a step that finds it set does not call again. The step marker stays, so a
    /// retry of this step finds the mark. Returns the session as committed, or where the run
    /// stands when the step no longer applies.
    async fn mark_calling(
        &self, input: &StepInput, mut s: Session, seq: u64,
    ) -> Result<Found, StepError> {
        loop {
            let mut next = s.clone();
            if let Some(t) = next.turn.as_mut() {
                t.calling = Some(seq);
            }
            match self.commit(next, s.version, vec![], None).await? {
                Committed::Written(s) => {
                    crate::fault::point("RunTool", "marked").await;
                    return Ok(Found::Proceed(s));
                }
                Committed::Gone => return Ok(Found::Return(StepOutput::to(Next::Done))),
                Committed::Lost => {}
            }
            s = match self.find(input, Next::Tool).await? {
                Found::Proceed(found) => *found,
                other => return Ok(other),
            };
            // Another copy of this step marked it first: the call is that copy's.
            if s.turn.as_ref().and_then(|t| t.calling) == Some(seq) {
                return Ok(Found::Return(StepOutput::of(&s)));
            }
        }
    }

    /// Runs the memory tool `tool` that the `tool_use` event `seq` asked for: refused in words
    /// when the organisation switched memory off since the agent was offered it. Errors: the
    /// store's, as `Unavailable` (the step is retried; a save made already is not made again).
    async fn run_memory_tool(
        &self, key: &SessionKey, tool: &str, tool_input: &Value, seq: u64,
    ) -> Result<Result<Value, String>, IntegrationError> {
        let unavailable = |e: StoreError| IntegrationError::Unavailable(format!("memory: {e}"));
        let org = self.orgs.get_org(&key.org).await.map_err(unavailable)?;
        if org.is_none_or(|o| o.memory_off) {
            return Ok(Err("memory is switched off for the organisation".into()));
        }
        let from = SavedFrom {
            session: &key.session,
            seq,
        };
        let (directory, now) = (self.directory.as_ref(), self.clock.now());
        memory::run_tool(directory, &key.org, &key.user, tool, tool_input, now, from)
            .await
            .map_err(unavailable)
    }
}

/// Calls `tool` of the integration that offers it. Errors: the integration's; `Cancelled`
/// when `cancelled` resolves first.
async fn run_integration_tool(
    integrations: &dyn Integrations, key: &SessionKey, tool: &str, tool_input: &Value,
    mut cancelled: Pin<&mut (impl Future<Output = ()> + Send)>,
) -> Result<Result<Value, String>, IntegrationError> {
    let found = tokio::select! {
        biased;
        () = cancelled.as_mut() => return Err(IntegrationError::Cancelled),
        found = find_tool(integrations, &key.org, &key.user, tool) => found,
    };
    match found {
        // Blocked since the agent was offered it: it does not run.
        Ok(Some(integration))
            if integration
                .tool_rule(tool)
                .is_some_and(|r| r.policy == ToolPolicy::Block) =>
        {
            Ok(Err(format!(
                "the organisation's admin does not allow the tool {tool:?}"
            )))
        }
        Ok(Some(integration)) => integration.call(tool, tool_input, cancelled).await.map(Ok),
        Ok(None) => Ok(Err(format!("there is no tool named {tool:?}"))),
        Err(e) => Err(e),
    }
}
