//! `LocalWorkflow`: the workflow port run in-process on tokio. Each run is a task that drives
//! the core's turn steps until the run ends; a cancel aborts the in-flight agent call at once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use knowledge_core::ids::{RunId, SessionKey};
use knowledge_core::ports::{Workflow, WorkflowError};
use knowledge_core::turns::{Next, Turns};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// Consecutive failed steps (store errors) after which a run gives up and terminates.
const MAX_STEP_FAILURES: u32 = 5;

struct Inner {
    turns: Turns,
    runs: Mutex<HashMap<RunId, CancellationToken>>,
    active: watch::Sender<usize>,
}

/// The in-process workflow engine. Cheap to clone.
#[derive(Clone)]
pub struct LocalWorkflow {
    inner: Arc<Inner>,
}

impl LocalWorkflow {
    pub fn new(turns: Turns) -> Self {
        Self {
            inner: Arc::new(Inner {
                turns,
                runs: Mutex::new(HashMap::new()),
                active: watch::channel(0).0,
            }),
        }
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
        let inner = self.inner.clone();
        let (key, run) = (key.clone(), run.clone());
        tokio::spawn(async move {
            drive(&inner.turns, &key, &run, &token).await;
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

/// Drives one run to its end.
async fn drive(turns: &Turns, key: &SessionKey, run: &RunId, cancel: &CancellationToken) {
    let mut failures = 0;
    loop {
        let step = async {
            let Next::Turn(turn) = turns.next(key, run).await? else {
                return Ok(false);
            };
            let reply = tokio::select! {
                biased;
                // The store already holds the cancellation; the next step terminates the run.
                _ = cancel.cancelled() => return Ok(true),
                reply = turns.ask(key, &turn) => reply,
            };
            match reply {
                Ok(reply) => turns.answer(key, run, turn.user_seq, &reply).await?,
                Err(e) => {
                    tracing::warn!(error = %e, session = %key.session, "agent failed");
                    turns
                        .fail(
                            key,
                            run,
                            turn.user_seq,
                            "agent_failed",
                            "The agent could not answer this message.",
                        )
                        .await?
                }
            }
            Ok::<_, knowledge_core::CoreError>(true)
        };
        match step.await {
            Ok(true) => failures = 0,
            Ok(false) => return,
            Err(e) => {
                failures += 1;
                tracing::error!(error = %e, session = %key.session, failures, "workflow step failed");
                if failures >= MAX_STEP_FAILURES {
                    if let Err(e) = turns.terminate(key, run, "workflow_failed").await {
                        tracing::error!(error = %e, session = %key.session, "could not terminate failed run");
                    }
                    return;
                }
                tokio::time::sleep(Duration::from_millis(50 << failures)).await;
            }
        }
    }
}
