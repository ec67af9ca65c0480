//! The workflow port: starting and signalling the runs that answer a session's turns.

use async_trait::async_trait;

use crate::ids::{RunId, SessionKey};
use crate::ports::BackendError;
use crate::trace::TraceParent;

/// Starts and signals workflow runs. Narrow on purpose: the engine behind it can change without
/// touching the use cases.
#[async_trait]
pub trait Workflow: Send + Sync {
    /// Starts an execution named `execution` that processes the session's pending turns under
    /// `run` (the name the session's claim gives it). May start more than one execution per
    /// call or per retried call (Step Functions Express does): the run's claim lets one of them
    /// work, and the others end at their first step without writing. `trace`, the run's trace
    /// (its claim's), travels in the execution's input so that every step joins it.
    async fn start(
        &self, key: &SessionKey, run: &RunId, execution: &str, trace: Option<&TraceParent>,
    ) -> Result<(), WorkflowError>;
    /// Tells the engine that `run` was cancelled, so that an in-flight step can be abandoned
    /// early. The cancellation itself is already durable in the store; this is only a hint.
    async fn cancelled(&self, key: &SessionKey, run: &RunId);
}

/// The engine refused or could not be reached; the cause is for logs.
#[derive(Debug, thiserror::Error)]
#[error("workflow engine failed")]
pub struct WorkflowError(#[source] pub BackendError);

impl WorkflowError {
    pub fn new(cause: impl Into<BackendError>) -> Self {
        Self(cause.into())
    }
}
