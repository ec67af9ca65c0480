//! The agent workflow's steps, one per Task state of `infra/statemachine/agent.asl.json`: load
//! the turn, call the agent once, run one tool call, finish the turn, terminate the run. Step
//! Functions runs them as Lambda functions; the local engine calls them in-process. Both pass
//! the same JSON in and out.
//!
//! Every step re-reads the session and commits its events together with the turn's step marker
//! ([`crate::domain::TurnProgress::step`]) in one version-checked write, conditional on the run still owning
//! the session. So a step retried or delivered twice commits its events once, a cancelled run
//! writes nothing more than its one `status_terminated`, and nothing is written after a delete.
//! A step that finds its work done (or moot) returns where the workflow stands instead, so
//! whichever copy of a step returns last still routes the workflow correctly.
//!
//! [`Handler`] names the steps; the state machine's resources (`${LoadTurnFunctionArn}`), the
//! Lambda functions (`load-turn`) and the local engine's Task handlers all derive from it. One
//! module per step; `wire` is the JSON they pass, `record` the reads and commits they share.

mod agent;
mod bounds;
mod consent;
mod drafts;
mod finish;
mod load;
mod record;
mod tool;
mod wire;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tracing::Instrument;

use crate::clock::Clock;
use crate::ports::{
    Agent, BatchStore, DirectoryStore, Integrations, OrgStore, SessionStore, Store,
};

pub use consent::{DECLINED, EXPIRED, UNKNOWN};
pub use drafts::DRAFT_EVERY;
pub use wire::{
    ExecRef, Failure, Next, SessionRef, StepError, StepInput, StepOutput, TurnRef, errors,
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

/// How long one execution may last: Step Functions stops an Express execution at five
/// minutes. The task functions read it from `WORKFLOW_EXECUTION_SECONDS`.
pub const EXECUTION_LIMIT: Duration = Duration::from_secs(300);
/// What a work step leaves of an execution's time for what may follow it within the same
/// execution: the catch path (`FailTurn`, then `TerminateFailed`, 30 s each at most) or the
/// `Handover` state. A work step that could end later than the limit less this hands over.
pub const HANDOVER_RESERVE: Duration = Duration::from_secs(60);

/// The Task handlers of the agent state machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Handler {
    LoadTurn,
    CallAgent,
    RunTool,
    FinishTurn,
    Terminate,
}

impl Handler {
    pub const ALL: [Handler; 5] = [
        Self::LoadTurn,
        Self::CallAgent,
        Self::RunTool,
        Self::FinishTurn,
        Self::Terminate,
    ];

    /// The name the state machine's Task resource carries: `${<name>FunctionArn}`.
    pub fn name(self) -> &'static str {
        match self {
            Self::LoadTurn => "LoadTurn",
            Self::CallAgent => "CallAgent",
            Self::RunTool => "RunTool",
            Self::FinishTurn => "FinishTurn",
            Self::Terminate => "Terminate",
        }
    }

    /// The handler whose [`Handler::name`] is `name`.
    pub fn named(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|h| h.name() == name)
    }

    /// The Task state's `Resource` in `infra/statemachine/agent.asl.json`, which SAM
    /// substitutes with the function's ARN.
    pub fn resource(self) -> String {
        format!("${{{}FunctionArn}}", self.name())
    }

    /// The Task state's `TimeoutSeconds`: how long one attempt of the step may run.
    pub const fn timeout(self) -> Duration {
        Duration::from_secs(match self {
            Self::CallAgent => 120,
            Self::RunTool => 60,
            Self::LoadTurn | Self::FinishTurn | Self::Terminate => 30,
        })
    }

    /// Whether the step asks the agent (only `CallAgent`).
    pub const fn asks_agent(self) -> bool {
        matches!(self, Self::CallAgent)
    }

    /// Whether the step lists or calls the integrations (`CallAgent` lists, `RunTool` calls).
    pub const fn uses_integrations(self) -> bool {
        matches!(self, Self::CallAgent | Self::RunTool)
    }
}

/// The store roles the steps use: the sessions they advance, the organisations (whose memory
/// switch `RunTool` checks), the batched read `CallAgent` makes (the organisation's cost cap,
/// its usage and the member's memory), and the members' data (their memory, which `RunTool`
/// changes).
#[derive(Clone)]
pub struct StepStores {
    pub sessions: Arc<dyn SessionStore>,
    pub orgs: Arc<dyn OrgStore>,
    pub batch: Arc<dyn BatchStore>,
    pub directory: Arc<dyn DirectoryStore>,
}

impl StepStores {
    /// Every role from the one store that has them all.
    pub fn of(store: &Arc<dyn Store>) -> Self {
        Self {
            sessions: store.clone(),
            orgs: store.clone(),
            batch: store.clone(),
            directory: store.clone(),
        }
    }
}

/// The workflow steps over their stores ([`StepStores`]), the agent and the integrations. A process that runs only some steps (one Lambda
/// function) leaves out the agent or the integrations its steps do not use; a step that needs
/// one it was not given fails with [`errors::INPUT`], never retried.
#[derive(Clone)]
pub struct Steps {
    sessions: Arc<dyn SessionStore>,
    orgs: Arc<dyn OrgStore>,
    batch: Arc<dyn BatchStore>,
    directory: Arc<dyn DirectoryStore>,
    agent: Option<Arc<dyn Agent>>,
    integrations: Option<Arc<dyn Integrations>>,
    clock: Arc<dyn Clock>,
    execution_limit: Duration,
    approval_wait: Duration,
}

impl Steps {
    pub fn new(stores: StepStores, clock: Arc<dyn Clock>) -> Self {
        Self {
            sessions: stores.sessions,
            orgs: stores.orgs,
            batch: stores.batch,
            directory: stores.directory,
            agent: None,
            integrations: None,
            clock,
            execution_limit: EXECUTION_LIMIT,
            approval_wait: Duration::from_secs(3600 * u64::from(crate::domain::APPROVAL_HOURS)),
        }
    }

    /// The steps giving a call that asks its member `wait` to answer before it expires (the
    /// default is [`crate::domain::APPROVAL_HOURS`]).
    pub fn with_approval_wait(mut self, wait: Duration) -> Self {
        self.approval_wait = wait;
        self
    }

    /// The steps for executions that last at most `limit` (the default is [`EXECUTION_LIMIT`]).
    pub fn with_execution_limit(mut self, limit: Duration) -> Self {
        self.execution_limit = limit;
        self
    }

    /// The clock the steps read; an engine that stamps executions' start times uses it too.
    pub fn clock(&self) -> Arc<dyn Clock> {
        self.clock.clone()
    }

    /// The steps with the agent `CallAgent` asks.
    pub fn with_agent(mut self, agent: Arc<dyn Agent>) -> Self {
        self.agent = Some(agent);
        self
    }

    /// The steps with the integrations `CallAgent` lists and `RunTool` calls.
    pub fn with_integrations(mut self, integrations: Arc<dyn Integrations>) -> Self {
        self.integrations = Some(integrations);
        self
    }

    fn agent(&self) -> Result<&dyn Agent, StepError> {
        self.agent
            .as_deref()
            .ok_or_else(|| StepError::new(errors::INPUT, "this process runs no agent step"))
    }

    fn integrations(&self) -> Result<&dyn Integrations, StepError> {
        self.integrations
            .as_deref()
            .ok_or_else(|| StepError::new(errors::INPUT, "this process runs no integration"))
    }

    /// Runs `handler` on a JSON input: [`Steps::step`] behind the wire format. Errors: as
    /// `step`'s, and [`errors::INPUT`] for an input that is not a [`StepInput`].
    pub async fn invoke(
        &self, handler: Handler, input: Value, cancelled: impl Future<Output = ()> + Send,
    ) -> Result<Value, StepError> {
        let input: StepInput = serde_json::from_value(input)
            .map_err(|e| StepError::new(errors::INPUT, e.to_string()))?;
        let span = step_span(handler, &input);
        let output = self
            .step(handler, &input, cancelled)
            .instrument(span.clone())
            .await;
        if let Err(e) = &output {
            crate::trace::failed(&span, e.name);
        }
        Ok(serde_json::to_value(output?).expect("step outputs serialise"))
    }

    /// Runs `handler` on `input`. `cancelled` resolves when the run is cancelled: an agent or
    /// tool call in flight is then abandoned and the step returns `cancelled` without
    /// committing. Errors: a [`StepError`] named for the state machine's Retry/Catch.
    pub async fn step(
        &self, handler: Handler, input: &StepInput, cancelled: impl Future<Output = ()> + Send,
    ) -> Result<StepOutput, StepError> {
        crate::fault::point(handler.name(), "begin").await;
        let output = match handler {
            Handler::LoadTurn => self.load_turn(input).await,
            Handler::CallAgent => abortable(self.call_agent(input), cancelled).await,
            Handler::RunTool => self.run_tool(input, cancelled).await,
            Handler::FinishTurn => self.finish_turn(input).await,
            Handler::Terminate => self.terminate(input).await,
        }?;
        crate::fault::point(handler.name(), "end").await;
        Ok(output)
    }
}

/// The span of one step, a child of the run's trace: named after its Task state, with the
/// session as the GenAI conventions name a conversation, and the error's name when it fails.
fn step_span(handler: Handler, input: &StepInput) -> tracing::Span {
    let span = crate::trace_span!(
        "step",
        otel.name = handler.name(),
        gen_ai.conversation.id = %input.session.session,
        workflow.run = %input.run_id,
    );
    crate::trace::adopt(&span, input.trace.as_ref());
    crate::trace::identified(span)
}

/// Runs `step` unless `cancelled` resolves first; then the step is dropped before it commits
/// anything and the run is routed to its termination.
async fn abortable(
    step: impl Future<Output = Result<StepOutput, StepError>>, cancelled: impl Future<Output = ()>,
) -> Result<StepOutput, StepError> {
    tokio::select! {
        biased;
        () = cancelled => Ok(StepOutput::cancelled()),
        out = step => out,
    }
}
