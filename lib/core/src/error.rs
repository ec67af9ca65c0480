//! The use cases' error type; the HTTP layer maps it to status codes in one place.

use crate::domain::{MemberCaps, Usage};
use std::fmt;

use crate::ports::{
    AgentError, BackendError, DestinationRefused, IdentityError, StoreError, WorkflowError,
};

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
    /// The member's own monthly allowance (questions or spend) is used up; the organisation's
    /// month so far and its cap come with it, for the figures a client shows.
    #[error("your monthly allowance is used up")]
    MemberCapReached {
        retry_after_secs: u64,
        member: Usage,
        caps: MemberCaps,
        org: Usage,
        org_cap_micros: Option<u64>,
    },
    /// The signed-in member is not an admin of the active organisation.
    #[error("only an admin of the organisation may do this")]
    AdminOnly,
    /// The change would leave the organisation without an admin.
    #[error(
        "the organisation's last admin cannot be demoted or removed; promote another member first"
    )]
    LastAdmin,
    /// The request is well formed but the stored state does not allow it now; the message
    /// says why.
    #[error("{message}")]
    Conflict { code: &'static str, message: String },
    /// What was sent passes a size limit the message names: a file, or the organisation's
    /// storage allowance.
    #[error("{message}")]
    TooLarge { code: &'static str, message: String },
    /// A file in a format the service does not read; the message lists those it reads.
    #[error("{0}")]
    UnsupportedFormat(String),
    /// An integration being tested cannot be reached or failed to list its tools.
    #[error("the integration could not be reached or did not list its tools")]
    IntegrationUnavailable,
    /// The AI provider cannot be reached.
    #[error("the AI provider could not be reached")]
    ProviderUnavailable,
    /// No single sign-on is switched on for the e-mail domain or organisation asked for; the
    /// same answer whichever it is, so that organisations cannot be enumerated.
    #[error("no single sign-on is set up for this e-mail address or organisation")]
    SsoUnavailable,
    /// The identity provider vouched for a person who is not a member of the organisation (or
    /// whose account is bound to another identity there).
    #[error("you are not provisioned in this organisation; ask its administrator for access")]
    NotProvisioned,
    /// The identity provider vouched for an e-mail address it says it has not verified, and
    /// the organisation names its members by e-mail: nobody is signed in or bound.
    #[error(
        "your identity provider has not verified your e-mail address; verify it there, then sign in again"
    )]
    EmailUnverified,
    /// The sign-in cannot be completed: its `state` does not match this browser's, it expired,
    /// or the provider refused it or its token did not verify. The cause is logged.
    #[error("the sign-in could not be completed; start it again")]
    SignInFailed,
    /// Connecting an account to an OAuth integration cannot be completed: its `state` is
    /// unknown, used or expired, or another browser's; the server refused, sent another
    /// issuer, or did not exchange the code. The cause is logged.
    #[error("connecting the account could not be completed; start it again")]
    ConnectFailed,
    /// An integration's authorization server cannot be reached or failed.
    #[error("the integration's authorization server could not be reached")]
    AuthorizationServerUnavailable,
    /// The organisation's identity provider cannot be reached or answered wrongly.
    #[error("the identity provider could not be reached")]
    IdentityProviderUnavailable,
    /// An address an admin gave (an identity provider's, an integration's) is one this
    /// deployment never connects to; the message names the rule.
    #[error("{0}")]
    DestinationRefused(crate::ports::DestinationRefused),
    /// Anything else; logged with its causes, never shown to clients.
    #[error("internal error")]
    Internal(#[source] BackendError),
}

impl CoreError {
    /// An internal error caused by `cause`: another layer's error, or a message.
    pub fn internal(cause: impl Into<BackendError>) -> Self {
        Self::Internal(cause.into())
    }

    pub fn conflict(code: &'static str, message: impl Into<String>) -> Self {
        Self::Conflict {
            code,
            message: message.into(),
        }
    }

    pub fn invalid(code: &'static str, message: impl Into<String>) -> Self {
        Self::InvalidInput {
            code,
            message: message.into(),
        }
    }
}

impl From<StoreError> for CoreError {
    fn from(e: StoreError) -> Self {
        Self::internal(e)
    }
}

impl From<WorkflowError> for CoreError {
    fn from(e: WorkflowError) -> Self {
        Self::internal(e)
    }
}

/// A failed health check: whatever the reason (unreachable, failing, refusing the key), the
/// provider cannot answer, which the interface reports as 502. The reason is logged here.
impl From<AgentError> for CoreError {
    fn from(e: AgentError) -> Self {
        tracing::warn!(error = %Chain(&e), "agent provider health check failed");
        Self::ProviderUnavailable
    }
}

/// A provider's failure, logged here with its cause: `Rejected` is a refusal of what the
/// provider answered, which ends the sign-in (`SignInFailed`); `Unavailable` is the provider
/// out of reach or failing (`IdentityProviderUnavailable`).
impl From<IdentityError> for CoreError {
    fn from(e: IdentityError) -> Self {
        if let Some(refused) = DestinationRefused::find(&e) {
            return Self::DestinationRefused(refused.clone());
        }
        match &e {
            IdentityError::Rejected(_) => {
                tracing::warn!(error = %Chain(&e), "single sign-on refused the identity provider's answer");
            }
            IdentityError::Unavailable(_) => {
                tracing::warn!(error = %Chain(&e), "single sign-on could not reach the identity provider");
            }
        }
        match e {
            IdentityError::Rejected(_) => Self::SignInFailed,
            IdentityError::Unavailable(_) => Self::IdentityProviderUnavailable,
        }
    }
}

/// Displays an error followed by its causes, `outer: inner: innermost`, for logs: an SDK's
/// or a driver's error says what failed only in its sources.
pub struct Chain<'a>(pub &'a (dyn std::error::Error + 'static));

impl fmt::Display for Chain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)?;
        let mut cause = self.0.source();
        while let Some(e) = cause {
            write!(f, ": {e}")?;
            cause = e.source();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chain_shows_every_cause_after_the_error_itself() {
        let store = StoreError::backend("disk full");
        let core = CoreError::from(store);
        assert_eq!(
            Chain(&core).to_string(),
            "internal error: storage backend failed: disk full"
        );
    }
}
