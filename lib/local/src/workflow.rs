//! `LocalWorkflow`: the workflow port run by the local ASL engine. Each run is one execution of
//! the agent state machine on its own tokio task; its Tasks are the core's workflow steps,
//! called in-process, and a cancel fires the run's signal so that an agent or tool call in
//! flight is abandoned at once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use knowledge_core::ids::{RunId, SessionKey};
use knowledge_core::ports::{Workflow, WorkflowError};
use knowledge_core::steps::{Handler, StepInput, Steps, errors};
use serde_json::Value;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::asl::{AGENT_DEFINITION, LoadError, Observer, Options, StateMachine, TaskError, Tasks};

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

struct Inner {
    machine: StateMachine,
    tasks: Arc<dyn Tasks>,
    observer: Arc<dyn Observer>,
    options: Options,
    runs: Mutex<HashMap<RunId, CancellationToken>>,
    active: watch::Sender<usize>,
}

/// The in-process workflow engine. Cheap to clone.
#[derive(Clone)]
pub struct LocalWorkflow {
    inner: Arc<Inner>,
}

impl LocalWorkflow {
    /// Loads the agent state machine over `tasks`. Errors: the definition uses a feature the
    /// engine does not run, or a Task whose handler `tasks` does not have.
    pub fn new(
        tasks: Arc<dyn Tasks>, observer: Arc<dyn Observer>, options: Options,
    ) -> Result<Self, LoadError> {
        let machine = StateMachine::load(AGENT_DEFINITION, &Handler::ALL.map(Handler::name))?;
        Ok(Self {
            inner: Arc::new(Inner {
                machine,
                tasks,
                observer,
                options,
                runs: Mutex::new(HashMap::new()),
                active: watch::channel(0).0,
            }),
        })
    }

    /// Resolves once no run is in flight.
    pub async fn idle(&self) {
        let mut rx = self.inner.active.subscribe();
        let _ = rx.wait_for(|n| *n == 0).await;
    }
}

#[async_trait]
impl Workflow for LocalWorkflow {
    async fn start(&self, key: &SessionKey, run: &RunId) -> Result<(), WorkflowError> {
        let token = CancellationToken::new();
        {
            let mut runs = self.inner.runs.lock().expect("runs lock");
            if runs.contains_key(run) {
                return Ok(());
            }
            runs.insert(run.clone(), token.clone());
            self.inner.active.send_modify(|n| *n += 1);
        }
        let input = serde_json::to_value(StepInput::start(key, run)).map_err(WorkflowError::new)?;
        let inner = self.inner.clone();
        let (session, run) = (key.session.clone(), run.clone());
        tokio::spawn(async move {
            let ended = inner
                .machine
                .run(
                    input,
                    inner.tasks.clone(),
                    token,
                    inner.observer.as_ref(),
                    inner.options,
                )
                .await;
            if let Err(e) = ended {
                tracing::error!(%session, %run, error = %e, "workflow run failed");
            }
            inner.runs.lock().expect("runs lock").remove(&run);
            inner.active.send_modify(|n| *n -= 1);
        });
        Ok(())
    }

    async fn cancelled(&self, _key: &SessionKey, run: &RunId) {
        if let Some(token) = self.inner.runs.lock().expect("runs lock").get(run) {
            token.cancel();
        }
    }
}
