//! What every storage method returns: the storage adapters' one error type.

use crate::domain::Usage;

/// A backend's own error, kept whole so that logs show its cause chain.
pub type BackendError = Box<dyn std::error::Error + Send + Sync>;

/// Failures of a storage adapter.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A conditional write found another version than expected: re-read and try again.
    #[error("the record changed concurrently")]
    Conflict,
    /// The record to change does not exist (a session deleted meanwhile, say).
    #[error("the record does not exist")]
    Gone,
    /// The record to create exists already.
    #[error("the record exists already")]
    AlreadyExists,
    /// A [`Gate`](super::Gate)'s month is at its query quota or cost cap; carries the counters that refused
    /// it. Nothing was written.
    #[error("a monthly usage limit refused the write")]
    UsageLimit(Usage),
    /// A [`Gate`](super::Gate)'s member is at their own monthly allowance; carries the
    /// member's counters that refused it. Nothing was written.
    #[error("a member's monthly allowance refused the write")]
    MemberLimit(Usage),
    /// The organisation's storage of originals would pass its allowance. Nothing was written.
    #[error("the storage allowance refused the write")]
    Full,
    /// The backend failed; the cause is for logs, never for clients.
    #[error("storage backend failed")]
    Backend(#[source] BackendError),
}

/// What every storage method returns.
pub type StoreResult<T> = Result<T, StoreError>;

impl StoreError {
    /// A backend failure caused by `cause`: an SDK or driver error, or a message.
    pub fn backend(cause: impl Into<BackendError>) -> Self {
        Self::Backend(cause.into())
    }
}
