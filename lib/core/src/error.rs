//! The use cases' error type; the HTTP layer maps it to status codes in one place.

use crate::ports::{AgentError, StoreError, WorkflowError};

#[derive(Debug, thiserror::Error)]
pub enum CoreError {
    /// The caller is not (or no longer) a member of the organisation it acts in.
    #[error("not signed in")]
    Unauthenticated,
    /// The resource does not exist for this user and organisation (or at all).
    #[error("{0} not found")]
    NotFound(&'static str),
    /// A field is missing, of the wrong type, empty or malformed.
    #[error("{message}")]
    InvalidInput { code: &'static str, message: String },
    /// The organisation's plan or status does not allow this.
    #[error("the organisation's plan does not allow this")]
    PlanForbidden,
    /// A per-user rate limit is exhausted.
    #[error("rate limit exceeded")]
    RateLimited { retry_after_secs: u64 },
    /// The organisation's monthly query quota is used up.
    #[error("monthly query quota exhausted")]
    QuotaExhausted { retry_after_secs: u64 },
    /// The organisation's monthly cost cap is reached.
    #[error("monthly cost cap reached")]
    CostCapReached {
        retry_after_secs: u64,
        month_to_date_micros: u64,
        cap_micros: u64,
    },
    /// The AI provider cannot be reached.
    #[error("the AI provider could not be reached")]
    ProviderUnavailable,
    /// Anything else; logged, never shown to clients.
    #[error("internal: {0}")]
    Internal(String),
}

impl CoreError {
    pub fn invalid(code: &'static str, message: impl Into<String>) -> Self {
        Self::InvalidInput {
            code,
            message: message.into(),
        }
    }
}

impl From<StoreError> for CoreError {
    fn from(e: StoreError) -> Self {
        Self::Internal(e.to_string())
    }
}

impl From<WorkflowError> for CoreError {
    fn from(e: WorkflowError) -> Self {
        Self::Internal(e.to_string())
    }
}

/// A failed health check: whatever the reason (unreachable, failing, refusing the key), the
/// provider cannot answer, which the interface reports as 502. The reason is logged here.
impl From<AgentError> for CoreError {
    fn from(e: AgentError) -> Self {
        tracing::warn!(error = %e, "agent provider health check failed");
        Self::ProviderUnavailable
    }
}
