//! The agent workflow's steps, one per Task state of `infra/statemachine/agent.asl.json`: load
//! the turn, call the agent once, run one tool call, finish the turn, terminate the run. Step
//! Functions runs them as Lambda functions; the local engine calls them in-process. Both pass
//! the same JSON in and out.
//!
//! Every step re-reads the session and commits its events together with the turn's step marker
//! ([`TurnProgress::step`]) in one version-checked write, conditional on the run still owning
//! the session. So a step retried or delivered twice commits its events once, a cancelled run
//! writes nothing more than its one `status_terminated`, and nothing is written after a delete.
//! A step that finds its work done (or moot) returns where the workflow stands instead, so
//! whichever copy of a step returns last still routes the workflow correctly.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::clock::Clock;
use crate::domain::{Awaiting, Event, EventKind, NewEvent, Session, TurnProgress};
use crate::ids::{OrgId, RunId, SessionId, SessionKey, UserId};
use crate::integrations::find_tool;
use crate::ports::{
    Agent, AgentAction, AgentError, AgentReply, AgentRequest, Charge, IntegrationError,
    Integrations, Store, StoreError,
};

/// Events before the answered message that the agent sees at most.
pub const HISTORY_WINDOW: u64 = 50;
/// Agent calls per turn at most; the last one is offered no tools, so it must answer.
pub const MAX_AGENT_CALLS: u32 = 6;
/// Tool calls recorded from one agent step at most; further ones are dropped.
pub const MAX_TOOL_CALLS_PER_STEP: usize = 8;
/// Bytes of JSON a tool's input or output, or an answer, may take in the log; larger ones are
/// cut (a DynamoDB item holds 400 KB, and a step commits up to 8 events at once).
pub const EVENT_PAYLOAD_LIMIT: usize = 32 * 1024;
/// Provider rate limits are waited out inside the step while the waits add up to at most
/// this; a longer hint, or one past the budget, fails the step and the state machine's backoff
/// takes over. With a provider call bounded to 60 s (85 s at most, see the providers' config),
/// the step stays under the state machine's 120 s `TimeoutSeconds`, so a turn never has two
/// provider calls in flight.
pub const RATE_LIMIT_WAIT_BUDGET: Duration = Duration::from_secs(30);
/// How long listing one integration's tools may take; an integration slower than that is
/// left out of the step, like one that is down. They are listed concurrently.
pub const TOOL_LISTING_TIMEOUT: Duration = Duration::from_secs(10);
/// Bytes of event payloads the history sent to the agent holds at most; older events are
/// dropped first, so a long conversation stays within a model's context.
pub const HISTORY_BYTES: usize = 256 * 1024;

/// The Task handlers, by the names the state machine's resources carry
/// (`${LoadTurnFunctionArn}` is `LoadTurn`).
pub const HANDLERS: [&str; 5] = [
    "LoadTurn",
    "CallAgent",
    "RunTool",
    "FinishTurn",
    "Terminate",
];

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
}

impl StepInput {
    /// The input of a run's first state.
    pub fn start(key: &SessionKey, run: &RunId) -> Self {
        Self {
            session: key.into(),
            run_id: run.clone(),
            turn: None,
            failure: None,
        }
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
    /// The run is over, or no longer owns the session (ended, replaced, or deleted).
    Done,
}

/// Every step's output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StepOutput {
    pub cancelled: bool,
    pub next: Next,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<TurnRef>,
}

impl StepOutput {
    fn to(next: Next) -> Self {
        Self {
            cancelled: false,
            next,
            turn: None,
        }
    }

    pub fn cancelled() -> Self {
        Self {
            cancelled: true,
            next: Next::Terminate,
            turn: None,
        }
    }

    /// Where the run of `s` stands, for a step that the run owns.
    fn of(s: &Session) -> Self {
        if s.cancelled_at.is_some() {
            return Self::cancelled();
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
            cancelled: false,
            next,
            turn: Some(TurnRef {
                user_seq,
                step: s.turn.as_ref().map_or(0, |t| t.step),
            }),
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
    fn new(name: &'static str, message: impl Into<String>) -> Self {
        Self {
            name,
            message: message.into(),
        }
    }
}

impl From<StoreError> for StepError {
    fn from(e: StoreError) -> Self {
        Self::new(errors::STORE, e.to_string())
    }
}

/// The client-facing `error` event for a failure the state machine caught: a stable code and a
/// fixed message chosen by the error name. The cause is logged, never shown.
fn error_event(failure: &Failure, turn: bool) -> NewEvent {
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

/// The workflow steps over the store, the agent and the integrations.
#[derive(Clone)]
pub struct Steps {
    store: Arc<dyn Store>,
    agent: Arc<dyn Agent>,
    integrations: Arc<dyn Integrations>,
    clock: Arc<dyn Clock>,
}

/// How a version-checked commit went.
enum Committed {
    Written(Box<Session>),
    /// The version moved: read again.
    Lost,
    /// The session no longer exists.
    Gone,
}

/// What a step found when it read the session.
enum Found {
    /// The step applies: the session as read.
    Proceed(Box<Session>),
    /// The step does not apply (done already, cancelled, or gone): return this instead.
    Return(StepOutput),
}

impl Steps {
    pub fn new(
        store: Arc<dyn Store>,
        agent: Arc<dyn Agent>,
        integrations: Arc<dyn Integrations>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            store,
            agent,
            integrations,
            clock,
        }
    }

    /// Runs the handler `name` on a JSON input. `cancelled` resolves when the run is cancelled:
    /// an agent or tool call in flight is then abandoned and the step returns `cancelled`
    /// without committing. Errors: a [`StepError`] named for the state machine's Retry/Catch.
    pub async fn invoke(
        &self,
        name: &str,
        input: Value,
        cancelled: impl Future<Output = ()> + Send,
    ) -> Result<Value, StepError> {
        let input: StepInput = serde_json::from_value(input)
            .map_err(|e| StepError::new(errors::INPUT, e.to_string()))?;
        crate::fault::point(name, "begin").await;
        let output = match name {
            "LoadTurn" => self.load_turn(&input).await,
            "CallAgent" => abortable(self.call_agent(&input), cancelled).await,
            "RunTool" => self.run_tool(&input, cancelled).await,
            "FinishTurn" => self.finish_turn(&input).await,
            "Terminate" => self.terminate(&input).await,
            _ => Err(StepError::new(errors::INPUT, format!("no step {name}"))),
        }?;
        crate::fault::point(name, "end").await;
        Ok(serde_json::to_value(output).expect("step outputs serialise"))
    }

    /// Finds the turn to work on. With none pending the run ends quietly (`workflowRunId`
    /// becomes null, no event); the commit is version-checked, so a message arriving meanwhile
    /// is never left behind: the commit fails and the new turn is found.
    pub async fn load_turn(&self, input: &StepInput) -> Result<StepOutput, StepError> {
        let key = input.session.key();
        loop {
            let Some(s) = self.owned(&key, &input.run_id).await? else {
                return Ok(StepOutput::to(Next::Done));
            };
            if s.cancelled_at.is_some() || !s.pending.is_empty() {
                return Ok(StepOutput::of(&s));
            }
            let mut next = s.clone();
            next.run_id = None;
            next.turn = None;
            if !matches!(
                self.commit(next, s.version, vec![], None).await?,
                Committed::Lost
            ) {
                return Ok(StepOutput::to(Next::Done));
            }
        }
    }

    /// Asks the agent once. Commits either the `tool_use` events it asks for or its
    /// `agent_message`, with the step's cost, in one write. When the organisation's spend has
    /// reached its cap, the agent is not asked: the turn ends with a `cost_cap_reached` error
    /// instead. Every agent call starts under the cap and each turn has one call in flight, so
    /// concurrent turns overspend the cap by at most one step each.
    pub async fn call_agent(&self, input: &StepInput) -> Result<StepOutput, StepError> {
        let key = input.session.key();
        let s = match self.find(input, Next::Agent).await? {
            Found::Proceed(s) => *s,
            Found::Return(out) => return Ok(out),
        };
        let agent_calls = s.turn.as_ref().map_or(0, |t| t.agent_calls);
        let (events, charge, answered) = if self.over_cost_cap(&key.org).await? {
            let event = NewEvent::error(
                "cost_cap_reached",
                "Your organisation has reached its monthly spending cap for the AI provider, so \
                 this message was not answered.",
            );
            (vec![event], None, true)
        } else {
            let tools = self.tools(&key).await?;
            let (history, steps) = self.turn_log(&s).await?;
            let request = AgentRequest {
                org: key.org.clone(),
                history,
                steps,
                must_answer: agent_calls + 1 >= MAX_AGENT_CALLS || tools.is_empty(),
                tools,
            };
            let reply = self.ask(request.clone()).await?;
            let events = match &reply.action {
                AgentAction::Answer(text) => vec![NewEvent::agent_message(&bounded_text(text))],
                AgentAction::UseTools(calls) if !calls.is_empty() && !request.must_answer => calls
                    .iter()
                    .take(MAX_TOOL_CALLS_PER_STEP)
                    .map(|c| NewEvent::tool_use(&c.tool, &bounded_input(&c.input)))
                    .collect(),
                AgentAction::UseTools(_) => {
                    return Err(StepError::new(
                        errors::AGENT,
                        "the agent asked for tools when it had to answer",
                    ));
                }
            };
            let charge = (reply.cost_micros > 0).then(|| Charge {
                month: self.clock.now().month(),
                micros: reply.cost_micros,
            });
            let answered = matches!(reply.action, AgentAction::Answer(_));
            (events, charge, answered)
        };
        let count = events.len() as u64;
        self.commit_step(input, Next::Agent, s, events, charge.as_ref(), |s| {
            let first = s.next_seq;
            let mut next = s.clone();
            next.turn = Some(TurnProgress {
                step: s.turn.as_ref().map_or(0, |t| t.step) + 1,
                agent_calls: agent_calls + 1,
                from_seq: s.turn.as_ref().map_or(first, |t| t.from_seq),
                awaiting: if answered {
                    Awaiting::Finish
                } else {
                    Awaiting::Tools((first..first + count).collect())
                },
            });
            next
        })
        .await
    }

    /// One provider call, waiting out short rate limits the provider announces. Errors:
    /// `AgentRejected` when retrying cannot help, `AgentFailed` otherwise.
    async fn ask(&self, request: AgentRequest) -> Result<AgentReply, StepError> {
        let mut waited = Duration::ZERO;
        loop {
            match self.agent.respond(request.clone()).await {
                Ok(reply) => {
                    tracing::info!(
                        org = %request.org,
                        input_tokens = reply.usage.input,
                        output_tokens = reply.usage.output,
                        cost_micros = reply.cost_micros,
                        "agent step"
                    );
                    return Ok(reply);
                }
                Err(AgentError::RateLimited {
                    retry_after: Some(wait),
                }) if waited + wait <= RATE_LIMIT_WAIT_BUDGET => {
                    waited += wait;
                    tracing::info!(wait_ms = wait.as_millis() as u64, "provider rate limit");
                    tokio::time::sleep(wait).await;
                }
                Err(e @ AgentError::Rejected(_)) => {
                    return Err(StepError::new(errors::AGENT_REJECTED, e.to_string()));
                }
                Err(e) => return Err(StepError::new(errors::AGENT, e.to_string())),
            }
        }
    }

    /// Whether the organisation's month-to-date spend has reached its cost cap.
    async fn over_cost_cap(&self, org: &OrgId) -> Result<bool, StepError> {
        let Some(cap) = self
            .store
            .get_org(org)
            .await?
            .and_then(|o| o.cost_cap_micros)
        else {
            return Ok(false);
        };
        let usage = self.store.get_usage(org, &self.clock.now().month()).await?;
        Ok(usage.cost_micros >= cap)
    }

    /// Runs the turn's oldest tool call that has no result yet, and commits its `tool_result`.
    /// A tool that refuses its input gets `{"error": ...}` as its result, for the agent to see;
    /// an unreachable integration fails the step, to be retried.
    /// A cancel while the tool runs is passed to the integration, which tells the remote end;
    /// the step then commits nothing and routes the run to its termination.
    pub async fn run_tool(
        &self,
        input: &StepInput,
        cancelled: impl Future<Output = ()> + Send,
    ) -> Result<StepOutput, StepError> {
        let mut cancelled = std::pin::pin!(cancelled);
        let key = input.session.key();
        let s = match self.find(input, Next::Tool).await? {
            Found::Proceed(s) => *s,
            Found::Return(out) => return Ok(out),
        };
        let Some(Awaiting::Tools(uses)) = s.turn.as_ref().map(|t| &t.awaiting) else {
            unreachable!("find returns Proceed for Tool only while tools are awaited")
        };
        let use_seq = uses[0];
        let call = self
            .store
            .list_events(&key, use_seq - 1, 1)
            .await?
            .into_iter()
            .next()
            .filter(|e| e.seq == use_seq && e.kind == EventKind::ToolUse)
            .ok_or_else(|| StepError::new(errors::STORE, "the tool_use event is missing"))?;
        let tool = call.payload["tool"].as_str().unwrap_or_default().to_owned();
        let found = tokio::select! {
            biased;
            () = cancelled.as_mut() => return Ok(StepOutput::cancelled()),
            found = find_tool(self.integrations.as_ref(), &key.org, &key.user, &tool) => found,
        };
        let output = match found {
            Ok(Some(integration)) => integration
                .call(&tool, &call.payload["input"], cancelled.as_mut())
                .await
                .map(Ok),
            Ok(None) => Ok(Err(format!("there is no tool named {tool:?}"))),
            Err(e) => Err(e),
        };
        let output = match output {
            Ok(Ok(value)) => bounded_output(value),
            Ok(Err(message)) | Err(IntegrationError::Invalid(message)) => {
                serde_json::json!({ "error": bounded_text(&message) })
            }
            Err(IntegrationError::Cancelled) => return Ok(StepOutput::cancelled()),
            Err(e @ IntegrationError::Unavailable(_)) => {
                return Err(StepError::new(errors::TOOL, e.to_string()));
            }
        };
        let events = vec![NewEvent::tool_result(&tool, &output)];
        self.commit_step(input, Next::Tool, s, events, None, |s| {
            let mut next = s.clone();
            let t = next.turn.as_mut().expect("a turn awaiting tools");
            t.step += 1;
            if let Awaiting::Tools(uses) = &mut t.awaiting {
                uses.remove(0);
                if uses.is_empty() {
                    t.awaiting = Awaiting::Agent;
                }
            }
            next
        })
        .await
    }

    /// Ends the turn with `status_idle`. With a caught `failure` in the input, it first writes an
    /// `error` event, whatever stage the turn was at, so the session stays usable.
    pub async fn finish_turn(&self, input: &StepInput) -> Result<StepOutput, StepError> {
        let key = input.session.key();
        loop {
            let s = match &input.failure {
                None => match self.find(input, Next::Finish).await? {
                    Found::Proceed(s) => *s,
                    Found::Return(out) => return Ok(out),
                },
                Some(failure) => {
                    let Some(s) = self.owned(&key, &input.run_id).await? else {
                        return Ok(StepOutput::to(Next::Done));
                    };
                    let current = StepOutput::of(&s);
                    let same_turn =
                        current.turn.map(|t| t.user_seq) == input.turn.map(|t| t.user_seq);
                    if current.cancelled || !same_turn || input.turn.is_none() {
                        return Ok(current);
                    }
                    tracing::warn!(
                        session = %key.session,
                        error = %failure.error,
                        cause = failure.cause.as_deref().unwrap_or(""),
                        "turn failed"
                    );
                    s
                }
            };
            let mut events = vec![];
            if let Some(failure) = &input.failure {
                events.push(error_event(failure, true));
            }
            events.push(NewEvent::status_idle());
            let mut next = s.clone();
            next.pending.remove(0);
            next.turn = None;
            if !matches!(
                self.commit(next, s.version, events, None).await?,
                Committed::Lost
            ) {
                return Ok(StepOutput::to(Next::Load));
            }
        }
    }

    /// Ends the run with one `status_terminated` and drops its pending turns (their messages stay
    /// in the log). With a caught `failure`, an `error` event comes first. Writes nothing if the
    /// run no longer owns the session.
    pub async fn terminate(&self, input: &StepInput) -> Result<StepOutput, StepError> {
        let key = input.session.key();
        loop {
            let Some(s) = self.owned(&key, &input.run_id).await? else {
                return Ok(StepOutput::to(Next::Done));
            };
            let mut events = vec![];
            let reason = match &input.failure {
                Some(failure) => {
                    tracing::error!(
                        session = %key.session,
                        error = %failure.error,
                        cause = failure.cause.as_deref().unwrap_or(""),
                        "workflow failed"
                    );
                    events.push(error_event(failure, false));
                    "failed"
                }
                None => "cancelled",
            };
            events.push(NewEvent::status_terminated(reason));
            let mut next = s.clone();
            next.run_id = None;
            next.pending.clear();
            next.turn = None;
            if !matches!(
                self.commit(next, s.version, events, None).await?,
                Committed::Lost
            ) {
                return Ok(StepOutput::to(Next::Done));
            }
        }
    }

    /// Reads the session and decides whether the step `stage` applies to it: the run owns it,
    /// it is not cancelled, and the turn is where the input says.
    async fn find(&self, input: &StepInput, stage: Next) -> Result<Found, StepError> {
        let Some(s) = self.owned(&input.session.key(), &input.run_id).await? else {
            return Ok(Found::Return(StepOutput::to(Next::Done)));
        };
        let here = StepOutput::of(&s);
        if here.next == stage && input.turn.is_some() && here.turn == input.turn {
            Ok(Found::Proceed(Box::new(s)))
        } else {
            Ok(Found::Return(here))
        }
    }

    /// The conversation the agent sees: the history up to the answered message (without
    /// messages queued behind it) and the turn's tool events so far.
    async fn turn_log(&self, s: &Session) -> Result<(Vec<Event>, Vec<Event>), StepError> {
        let user_seq = s.pending[0];
        let from = user_seq.saturating_sub(HISTORY_WINDOW);
        let mut log = Vec::new();
        let mut after = from.saturating_sub(1);
        while after + 1 < s.next_seq {
            let page = self.store.list_events(&s.key, after, 100).await?;
            let Some(last) = page.last() else { break };
            after = last.seq;
            log.extend(page);
        }
        let turn_from = s.turn.as_ref().map_or(s.next_seq, |t| t.from_seq);
        let (history, own): (Vec<Event>, Vec<Event>) =
            log.into_iter().partition(|e| e.seq < turn_from);
        let mut history: Vec<Event> = history
            .into_iter()
            .filter(|e| e.kind != EventKind::UserMessage || e.seq <= user_seq)
            .collect();
        // Over the byte budget, the oldest events go first; the question itself always stays.
        let mut excess = history
            .iter()
            .map(|e| e.payload.to_string().len())
            .sum::<usize>()
            .saturating_sub(HISTORY_BYTES);
        history.retain(|e| {
            if excess == 0 || e.seq == user_seq {
                return true;
            }
            excess = excess.saturating_sub(e.payload.to_string().len());
            false
        });
        let steps = own
            .into_iter()
            .filter(|e| matches!(e.kind, EventKind::ToolUse | EventKind::ToolResult))
            .collect();
        Ok((history, steps))
    }

    /// The tools of every integration the member reaches, listed concurrently, each within
    /// [`TOOL_LISTING_TIMEOUT`], in the integrations' order, each name once. One that is down or
    /// slow is left out: the agent answers from what it can reach.
    async fn tools(&self, key: &SessionKey) -> Result<Vec<crate::ports::ToolSpec>, StepError> {
        let connected = self
            .integrations
            .connected(&key.org, &key.user)
            .await
            .map_err(|e| StepError::new(errors::TOOL, e.to_string()))?;
        let mut listings = tokio::task::JoinSet::new();
        for (i, integration) in connected.into_iter().enumerate() {
            listings.spawn(async move {
                let listed = tokio::time::timeout(TOOL_LISTING_TIMEOUT, integration.tools()).await;
                (i, integration.name().to_owned(), listed)
            });
        }
        let mut found = Vec::new();
        while let Some(joined) = listings.join_next().await {
            match joined {
                Ok((i, _, Ok(Ok(list)))) => found.push((i, list)),
                Ok((_, name, Ok(Err(e)))) => tracing::warn!(integration = name, error = %e,
                    "could not list an integration's tools"),
                Ok((_, name, Err(_))) => tracing::warn!(
                    integration = name,
                    "an integration did not list its tools in time"
                ),
                Err(e) => tracing::error!(error = %e, "listing an integration's tools panicked"),
            }
        }
        found.sort_by_key(|(i, _)| *i);
        // A name two integrations offer is the first one's, as `find_tool` runs it.
        let mut tools: Vec<crate::ports::ToolSpec> = Vec::new();
        for tool in found.into_iter().flat_map(|(_, list)| list) {
            if tools.iter().any(|t| t.name == tool.name) {
                tracing::warn!(
                    tool = tool.name,
                    "two integrations offer a tool of this name; the first one's is kept"
                );
            } else {
                tools.push(tool);
            }
        }
        Ok(tools)
    }

    /// The session, if it exists, is not being deleted, and `run` is its active run.
    async fn owned(&self, key: &SessionKey, run: &RunId) -> Result<Option<Session>, StepError> {
        Ok(self
            .store
            .get_session(key)
            .await?
            .filter(|s| !s.deleting && s.run_id.as_ref() == Some(run)))
    }

    /// Commits `next` (with its version moved on) and `new` events if the stored version is
    /// still `expected`.
    async fn commit(
        &self,
        mut next: Session,
        expected: u64,
        new: Vec<NewEvent>,
        charge: Option<&Charge>,
    ) -> Result<Committed, StepError> {
        next.version = expected + 1;
        let events = next.place(self.clock.now(), new);
        match self
            .store
            .commit_session(&next, expected, &events, charge)
            .await
        {
            Ok(()) => Ok(Committed::Written(Box::new(next))),
            Err(StoreError::Conflict) => Ok(Committed::Lost),
            Err(StoreError::Gone) => Ok(Committed::Gone),
            Err(e) => Err(e.into()),
        }
    }

    /// Commits a work step's `events` with the session `advance` makes of the one read, and
    /// returns where the run then stands. On a lost race it reads again and commits the same
    /// events if the step still applies (a message arrived meanwhile), or returns where the run
    /// stands if not (another copy of the step committed, or the run was cancelled).
    async fn commit_step(
        &self,
        input: &StepInput,
        stage: Next,
        mut s: Session,
        events: Vec<NewEvent>,
        charge: Option<&Charge>,
        advance: impl Fn(&Session) -> Session,
    ) -> Result<StepOutput, StepError> {
        loop {
            match self
                .commit(advance(&s), s.version, events.clone(), charge)
                .await?
            {
                Committed::Written(s) => return Ok(StepOutput::of(&s)),
                Committed::Gone => return Ok(StepOutput::to(Next::Done)),
                Committed::Lost => {}
            }
            s = match self.find(input, stage).await? {
                Found::Proceed(s) => *s,
                Found::Return(out) => return Ok(out),
            };
        }
    }
}

/// Runs `step` unless `cancelled` resolves first; then the step is dropped before it commits
/// anything and the run is routed to its termination.
async fn abortable(
    step: impl Future<Output = Result<StepOutput, StepError>>,
    cancelled: impl Future<Output = ()>,
) -> Result<StepOutput, StepError> {
    tokio::select! {
        biased;
        () = cancelled => Ok(StepOutput::cancelled()),
        out = step => out,
    }
}

/// `text` cut to [`EVENT_PAYLOAD_LIMIT`] bytes, on a character boundary, marked when cut.
fn bounded_text(text: &str) -> String {
    if text.len() <= EVENT_PAYLOAD_LIMIT {
        return text.to_owned();
    }
    let mut end = EVENT_PAYLOAD_LIMIT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n\n[cut: the text was longer than the log keeps]",
        &text[..end]
    )
}

/// A tool's output as the log keeps it: whole when its JSON fits [`EVENT_PAYLOAD_LIMIT`],
/// otherwise `{"truncated": true, "text": <the start of its JSON>}`.
fn bounded_output(output: Value) -> Value {
    let json = output.to_string();
    if json.len() <= EVENT_PAYLOAD_LIMIT {
        return output;
    }
    let text = bounded_text(&json);
    serde_json::json!({ "truncated": true, "text": text })
}

/// A tool call's input as the log keeps it; an oversized input keeps its start as text.
fn bounded_input(input: &Value) -> Value {
    match bounded_output(input.clone()) {
        Value::Object(o) => Value::Object(o),
        other => serde_json::json!({ "value": other }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_longer_than_the_log_keeps_is_cut_on_a_character_boundary_and_marked() {
        let text = "é".repeat(EVENT_PAYLOAD_LIMIT);
        let cut = bounded_text(&text);
        assert!(cut.len() < EVENT_PAYLOAD_LIMIT + 100);
        assert!(cut.ends_with("[cut: the text was longer than the log keeps]"));
        assert_eq!(bounded_text("short"), "short");
    }

    #[test]
    fn an_oversized_output_keeps_the_start_of_its_json_and_says_it_was_cut() {
        let big = serde_json::json!({ "rows": vec!["x".repeat(100); 1000] });
        let kept = bounded_output(big.clone());
        assert_eq!(kept["truncated"], true);
        assert!(
            kept["text"]
                .as_str()
                .unwrap()
                .starts_with("{\"rows\":[\"xxx")
        );
        let small = serde_json::json!([1, 2]);
        assert_eq!(bounded_output(small.clone()), small);
        assert!(bounded_input(&serde_json::json!("a string")).is_object());
    }
}
