//! The sweep function: on every scheduled event (EventBridge Scheduler, every minute), finds
//! the runs whose execution died through the table's index of claims by lease, and revives each
//! with a new execution, or ends its turn as failed when it keeps dying; and expires the calls
//! of turns paused for a member who did not answer in time
//! ([`Service::sweep`]).

use knowledge_core::error::Chain;
use knowledge_core::service::Service;
use lambda_runtime::{Diagnostic, LambdaEvent};
use serde_json::{Value, json};

/// The error type a failed sweep reports; the next scheduled one tries again.
pub const SWEEP_FAILED: &str = "SweepFailed";

#[derive(Clone)]
pub struct SweepFunction {
    service: Service,
}

impl SweepFunction {
    pub fn new(service: Service) -> Self {
        Self { service }
    }

    /// Sweeps once, whatever the event holds (the schedule's own). Answers what it did,
    /// `{"revived": n, "failed": m, "expired": k}`. Errors: the index could not be read.
    pub async fn handle(&self, _event: LambdaEvent<Value>) -> Result<Value, Diagnostic> {
        match self.service.sweep().await {
            Ok(swept) => Ok(json!({
                "revived": swept.revived,
                "failed": swept.failed,
                "expired": swept.expired,
            })),
            Err(e) => {
                tracing::error!(error = %Chain(&e), "the sweep failed");
                Err(Diagnostic {
                    error_type: SWEEP_FAILED.to_owned(),
                    error_message: "the sweep could not read the index of runs".to_owned(),
                })
            }
        }
    }
}
