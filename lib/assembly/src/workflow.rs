//! `LocalWorkflow`: the workflow port run by the local ASL engine. Each execution of the agent
//! state machine runs on its own tokio task; its Tasks are the core's workflow steps, called
//! in-process, and its `Handover` state starts the next execution of the same run here. All
//! executions of a run share the run's signal: a cancel fires it, so that an agent or tool call
//! in flight is abandoned at once. The agent state machine's definition, and the id and names
//! the engine gives it and its executions, are the service's and live here, not in the engine.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use knowledge_core::clock::Clock;
use knowledge_core::ids::{RunId, SessionKey};
use knowledge_core::ports::{Workflow, WorkflowError};
use knowledge_core::steps::{Handler, StepInput, Steps, errors};
use knowledge_core::trace::TraceParent;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use knowledge_asl::{
    Execution, LoadError, Observer, Options, START_EXECUTION, StateMachine, TaskError, Tasks,
};

/// The agent workflow's definition, compiled in from `infra/`.
pub const AGENT_DEFINITION: &str = include_str!("../../../infra/statemachine/agent.asl.json");

/// The agent state machine's id as its executions' context object shows it
/// (`$$.StateMachine.Id`): what its `Handover` names as the `StateMachineArn` of the execution
/// it starts, the only machine [`LocalWorkflow`] starts executions of.
pub const LOCAL_MACHINE_ID: &str = "local:stateMachine:agent";

/// The agent state machine's name as the context object shows it (`$$.StateMachine.Name`).
pub const LOCAL_MACHINE_NAME: &str = "agent";

/// What the ids of the executions of an engine not named after an instance start with
/// ([`LocalWorkflow::for_instance`] names them apart).
pub const EXECUTION_ID_PREFIX: &str = "local:execution:agent";

/// The agent state machine, loaded with every step's handler and `states:startExecution`, and
/// named [`LOCAL_MACHINE_ID`]. Errors: the definition uses a feature the engine does not run.
pub fn agent_machine() -> Result<StateMachine, LoadError> {
    let mut handlers = Handler::ALL.map(Handler::name).to_vec();
    handlers.push(START_EXECUTION);
    Ok(
        StateMachine::load(AGENT_DEFINITION, &handlers)?
            .named(LOCAL_MACHINE_ID, LOCAL_MACHINE_NAME),
    )
}

/// The core's workflow steps as the engine's Task handlers.
pub struct StepTasks(pub Steps);

#[async_trait]
impl Tasks for StepTasks {
    async fn invoke(
        &self, handler: &str, input: Value, signal: CancellationToken,
    ) -> Result<Value, TaskError> {
        let Some(handler) = Handler::named(handler) else {
            return Err(TaskError::new(errors::INPUT, format!("no step {handler}")));
        };
        self.0
            .invoke(handler, input, signal.cancelled_owned())
            .await
            .map_err(|e| TaskError::new(e.name, e.message))
    }
}

/// A run's executions in flight, by name, and the signal they share.
struct Run {
    signal: CancellationToken,
    executions: HashSet<String>,
}

struct Inner {
    machine: StateMachine,
    tasks: Arc<dyn Tasks>,
    observer: Arc<dyn Observer>,
    options: Options,
    clock: Arc<dyn Clock>,
    runs: Mutex<HashMap<RunId, Run>>,
    active: watch::Sender<usize>,
    /// What this engine's execution ids start with ([`LocalWorkflow::execution_prefix`]).
    prefix: String,
}

/// The in-process workflow engine. Cheap to clone.
#[derive(Clone)]
pub struct LocalWorkflow {
    inner: Arc<Inner>,
}

impl LocalWorkflow {
    /// Loads the agent state machine over `tasks`; executions start at `clock`'s time (the
    /// steps' clock, so that they measure an execution's age the way they read the time).
    /// Errors: the definition uses a feature the engine does not run, or a Task whose handler
    /// `tasks` does not have.
    pub fn new(
        tasks: Arc<dyn Tasks>, observer: Arc<dyn Observer>, options: Options, clock: Arc<dyn Clock>,
    ) -> Result<Self, LoadError> {
        let machine = agent_machine()?;
        Ok(Self {
            inner: Arc::new(Inner {
                machine,
                tasks,
                observer,
                options,
                clock,
                runs: Mutex::new(HashMap::new()),
                active: watch::channel(0).0,
                prefix: EXECUTION_ID_PREFIX.to_owned(),
            }),
        })
    }

    /// The same engine naming its executions `local:<instance>:execution:agent:<name>:<random>`,
    /// so that a process restarted with the same `instance` knows which runs were its own, and
    /// dead. Call it before the engine is cloned.
    pub fn for_instance(mut self, instance: &str) -> Self {
        let inner = Arc::get_mut(&mut self.inner).expect("set before the engine is shared");
        inner.prefix = execution_prefix(instance);
        self
    }

    /// What the ids of the executions of this engine start with.
    pub fn execution_prefix(&self) -> &str {
        &self.inner.prefix
    }

    /// Resolves once no execution is in flight.
    pub async fn idle(&self) {
        let mut rx = self.inner.active.subscribe();
        let _ = rx.wait_for(|n| *n == 0).await;
    }
}

/// What the ids of the executions of the engine of `instance` start with.
pub fn execution_prefix(instance: &str) -> String {
    format!("local:{instance}:execution:agent")
}

/// Starts the execution `name` of `run` on its own task, unless one of that name is in
/// flight (a retried start). Returns it, or `None` when it was already running.
fn launch(
    inner: &Arc<Inner>, key: &SessionKey, run: &RunId, name: &str, trace: Option<&TraceParent>,
) -> Option<Execution> {
    let signal = {
        let mut runs = inner.runs.lock().expect("runs lock");
        let entry = runs.entry(run.clone()).or_insert_with(|| Run {
            signal: CancellationToken::new(),
            executions: HashSet::new(),
        });
        if !entry.executions.insert(name.to_owned()) {
            return None;
        }
        inner.active.send_modify(|n| *n += 1);
        entry.signal.clone()
    };
    let execution = Execution::under(&inner.prefix, name, inner.clock.now().to_iso8601());
    let input =
        serde_json::to_value(StepInput::start(key, run, trace)).expect("step inputs serialise");
    let tasks: Arc<dyn Tasks> = Arc::new(ExecutionTasks(inner.clone()));
    let (inner, session, run, started) = (
        inner.clone(),
        key.session.clone(),
        run.clone(),
        execution.clone(),
    );
    tokio::spawn(async move {
        let ended = inner
            .machine
            .run(
                &started,
                input,
                tasks,
                signal,
                inner.observer.as_ref(),
                inner.options,
            )
            .await;
        if let Err(e) = ended {
            tracing::error!(%session, %run, execution = started.name, error = %e, "workflow execution failed");
        }
        let mut runs = inner.runs.lock().expect("runs lock");
        if let Some(entry) = runs.get_mut(&run) {
            entry.executions.remove(&started.name);
            if entry.executions.is_empty() {
                runs.remove(&run);
            }
        }
        inner.active.send_modify(|n| *n -= 1);
    });
    Some(execution)
}

/// The Task handlers one execution sees: the steps, and `states:startExecution`, which starts
/// another execution of the agent state machine here, under the same run's signal.
struct ExecutionTasks(Arc<Inner>);

/// A `states:startExecution` Task's parameters.
#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct StartParameters {
    state_machine_arn: String,
    name: String,
    input: StepInput,
}

#[async_trait]
impl Tasks for ExecutionTasks {
    async fn invoke(
        &self, handler: &str, input: Value, signal: CancellationToken,
    ) -> Result<Value, TaskError> {
        if handler != START_EXECUTION {
            return self.0.tasks.invoke(handler, input, signal).await;
        }
        let failed = |cause: String| TaskError::new("States.TaskFailed", cause);
        let start: StartParameters =
            serde_json::from_value(input).map_err(|e| failed(e.to_string()))?;
        if start.state_machine_arn != LOCAL_MACHINE_ID {
            return Err(failed(format!(
                "no state machine {:?} here",
                start.state_machine_arn
            )));
        }
        let (key, run) = (start.input.session.key(), start.input.run_id);
        // A retried start of an execution in flight answers as Step Functions would: started.
        let trace = start.input.trace.as_ref();
        let started = launch(&self.0, &key, &run, &start.name, trace).unwrap_or_else(|| {
            Execution::under(&self.0.prefix, &start.name, self.0.clock.now().to_iso8601())
        });
        Ok(json!({ "ExecutionArn": started.id, "StartDate": started.start_time }))
    }
}

#[async_trait]
impl Workflow for LocalWorkflow {
    async fn start(
        &self, key: &SessionKey, run: &RunId, execution: &str, trace: Option<&TraceParent>,
    ) -> Result<(), WorkflowError> {
        launch(&self.inner, key, run, execution, trace);
        Ok(())
    }

    async fn cancelled(&self, _key: &SessionKey, run: &RunId) {
        if let Some(entry) = self.inner.runs.lock().expect("runs lock").get(run) {
            entry.signal.cancel();
        }
    }
}
