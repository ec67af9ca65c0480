//! The workflow task functions: each runs one handler of the workflow steps for a Task state
//! of `infra/statemachine/agent.asl.json`, with the step's error name as the Lambda error type,
//! which the state machine's Retry and Catch policies match on.

use std::sync::Arc;
use std::time::Duration;

use knowledge_core::error::Chain;
use knowledge_core::ids::{RunId, SessionKey};
use knowledge_core::ports::SessionStore;
use knowledge_core::steps::{Handler, StepInput, Steps};
use lambda_runtime::{Diagnostic, LambdaEvent};
use serde_json::Value;

/// How often an agent or tool step reads the session to notice a cancel while it waits.
pub const WATCH_INTERVAL: Duration = Duration::from_secs(1);

/// One task function: the steps, the store it watches for cancels, and its handler.
#[derive(Clone)]
pub struct TaskFunction {
    steps: Steps,
    store: Arc<dyn SessionStore>,
    handler: Handler,
}

impl TaskFunction {
    pub fn new(steps: Steps, store: Arc<dyn SessionStore>, handler: Handler) -> Self {
        Self {
            steps,
            store,
            handler,
        }
    }

    /// Runs the step on the state's input. Exactly-once is the steps' own: a retried or
    /// duplicated invocation commits nothing twice. Errors carry the step's error name
    /// (`AgentFailed`, `StoreUnavailable`, ...) as their type.
    pub async fn handle(&self, event: LambdaEvent<Value>) -> Result<Value, Diagnostic> {
        let run = serde_json::from_value::<StepInput>(event.payload.clone())
            .ok()
            .map(|i| (i.session.key(), i.run_id));
        let cancelled = watch(self.store.clone(), run);
        self.steps
            .invoke(self.handler, event.payload, cancelled)
            .await
            .map_err(|e| {
                tracing::warn!(handler = self.handler.name(), error = e.name, message = %e.message, "step failed");
                Diagnostic {
                    error_type: e.name.to_owned(),
                    error_message: e.message,
                }
            })
    }
}

/// Resolves once the run is cancelled, superseded, or its session is deleted, read from the
/// store every [`WATCH_INTERVAL`]; the steps drop an in-flight agent or tool call then. Only
/// the agent and tool steps wait on it, so the other steps make no reads for it. A read that
/// fails is ignored: the state machine's next Choice reads the cancellation anyway.
async fn watch(store: Arc<dyn SessionStore>, run: Option<(SessionKey, RunId)>) {
    let Some((key, run)) = run else {
        return std::future::pending().await;
    };
    loop {
        tokio::time::sleep(WATCH_INTERVAL).await;
        match store.get_session(&key).await {
            Ok(None) => return,
            Ok(Some(s))
                if s.deleting || s.cancelled_at.is_some() || s.run_id.as_ref() != Some(&run) =>
            {
                return;
            }
            Ok(Some(_)) => {}
            Err(e) => {
                tracing::warn!(error = %Chain(&e), "could not read the session to watch for a cancel")
            }
        }
    }
}
