//! `SfnWorkflow`: the workflow port on Step Functions. A run is one execution of the agent
//! state machine, named after the run id.

use async_trait::async_trait;
use knowledge_core::ids::{RunId, SessionKey};
use knowledge_core::ports::{Workflow, WorkflowError};
use knowledge_core::steps::StepInput;

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
    /// Starts the execution named `run`. Step Functions keeps execution names unique (for 90
    /// days on a Standard state machine): a retried start while the run is open succeeds
    /// without starting another, and `ExecutionAlreadyExists` (the run exists, open or ended)
    /// is a success too. So a start retried by the SDK, by Lambda or by the caller never
    /// starts two runs.
    async fn start(&self, key: &SessionKey, run: &RunId) -> Result<(), WorkflowError> {
        let Some(arn) = &self.state_machine_arn else {
            return Err(WorkflowError::new(
                "this function has no state machine (STATE_MACHINE_ARN is not set)",
            ));
        };
        let input =
            serde_json::to_string(&StepInput::start(key, run)).map_err(WorkflowError::new)?;
        match self
            .client
            .start_execution()
            .state_machine_arn(arn)
            .name(run.as_str())
            .input(input)
            .send()
            .await
        {
            Ok(_) => Ok(()),
            Err(e)
                if e.as_service_error()
                    .is_some_and(|e| e.is_execution_already_exists()) =>
            {
                tracing::warn!(run = %run, "execution already exists; not started twice");
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
