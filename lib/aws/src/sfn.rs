//! `SfnWorkflow`: the workflow port on Step Functions. A run is one or more Express executions
//! of the agent state machine: the first is named after the run id, each successor (a handover
//! before the five-minute limit, or a replacement for a dead execution) `<run>-<n>`.

use async_trait::async_trait;
use knowledge_core::ids::{RunId, SessionKey};
use knowledge_core::ports::{Workflow, WorkflowError};
use knowledge_core::steps::StepInput;
use knowledge_core::trace::TraceParent;

/// Without a state machine (the functions that never start runs are not given one) every
/// start fails, and nothing is started.
#[derive(Clone, Debug)]
pub struct SfnWorkflow {
    client: aws_sdk_sfn::Client,
    state_machine_arn: Option<String>,
}

impl SfnWorkflow {
    pub fn new(client: aws_sdk_sfn::Client, state_machine_arn: Option<String>) -> Self {
        Self {
            client,
            state_machine_arn,
        }
    }
}

#[async_trait]
impl Workflow for SfnWorkflow {
    /// Starts the execution named `execution`. Express starts are at least once and not
    /// idempotent by name, so a start retried by the SDK, by Lambda or by the caller may start
    /// two executions: the run's claim on the session lets the first to bind it work, and the
    /// other ends at `LoadTurn` without writing. `ExecutionAlreadyExists` (a Standard machine,
    /// which keeps names unique) is a success.
    async fn start(
        &self, key: &SessionKey, run: &RunId, execution: &str, trace: Option<&TraceParent>,
    ) -> Result<(), WorkflowError> {
        let Some(arn) = &self.state_machine_arn else {
            return Err(WorkflowError::new(
                "this function has no state machine (STATE_MACHINE_ARN is not set)",
            ));
        };
        let input = serde_json::to_string(&StepInput::start(key, run, trace))
            .map_err(WorkflowError::new)?;
        match self
            .client
            .start_execution()
            .state_machine_arn(arn)
            .name(execution)
            .input(input)
            .send()
            .await
        {
            Ok(_) => Ok(()),
            Err(e)
                if e.as_service_error()
                    .is_some_and(|e| e.is_execution_already_exists()) =>
            {
                tracing::warn!(run = %run, execution, "execution already exists; not started twice");
                Ok(())
            }
            Err(e) => Err(WorkflowError::new(e)),
        }
    }

    /// Nothing to send: the task functions watch the session for the durable cancellation
    /// themselves (see [`crate::task`]), and Step Functions' Choice state reads it at the next
    /// transition. Stopping the execution instead would skip the `status_terminated` event.
    async fn cancelled(&self, _key: &SessionKey, _run: &RunId) {}
}
