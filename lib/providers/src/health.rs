//! The cached health check both adapters share: one probe in flight at a time, its outcome
//! kept for a while so that `Agent::health` stays cheap on every session creation.

use std::future::Future;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use knowledge_core::ports::AgentError;
use tokio::time::Instant;

/// How the provider's health is probed and for how long an outcome is trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HealthPolicy {
    /// How long a healthy outcome is reused (default 15 s: a provider that goes down is
    /// noticed by new sessions within that).
    pub ok_ttl: Duration,
    /// How long an unhealthy outcome is reused (default 5 s), shorter so that a recovered
    /// provider is noticed soon.
    pub failure_ttl: Duration,
    /// The probe's own timeout (default 3 s).
    pub timeout: Duration,
}

impl Default for HealthPolicy {
    fn default() -> Self {
        Self {
            ok_ttl: Duration::from_secs(15),
            failure_ttl: Duration::from_secs(5),
            timeout: Duration::from_secs(3),
        }
    }
}

/// The last outcome and a count of the probes completed, so that a caller that waited for
/// another's probe can tell that it finished and reuse it.
#[derive(Default)]
struct Last {
    probes: u64,
    outcome: Option<(Instant, Result<(), AgentError>)>,
}

pub(crate) struct HealthCache {
    policy: HealthPolicy,
    last: Mutex<Last>,
    /// Held for the duration of a probe: callers arriving meanwhile wait and share its outcome.
    probing: tokio::sync::Mutex<()>,
}

impl HealthCache {
    pub(crate) fn new(policy: HealthPolicy) -> Self {
        Self {
            policy,
            last: Mutex::default(),
            probing: tokio::sync::Mutex::new(()),
        }
    }

    pub(crate) fn policy(&self) -> HealthPolicy {
        self.policy
    }

    /// The cached outcome while it is fresh; otherwise runs `probe` (at most one at a time
    /// across callers) and caches what it returns. Cancel-safe: a caller dropped midway leaves
    /// the cache as it was, and the next caller probes.
    pub(crate) async fn check<F>(&self, probe: impl FnOnce() -> F) -> Result<(), AgentError>
    where
        F: Future<Output = Result<(), AgentError>>,
    {
        let seen = {
            let last = self.lock();
            if let Some(outcome) = self.fresh(&last) {
                return outcome;
            }
            last.probes
        };
        let _probing = self.probing.lock().await;
        {
            let last = self.lock();
            if last.probes != seen
                && let Some((_, outcome)) = &last.outcome
            {
                return duplicate(outcome);
            }
        }
        let outcome = probe().await;
        let mut last = self.lock();
        last.probes += 1;
        last.outcome = Some((Instant::now(), duplicate(&outcome)));
        outcome
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Last> {
        self.last.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn fresh(&self, last: &Last) -> Option<Result<(), AgentError>> {
        let (at, outcome) = last.outcome.as_ref()?;
        let ttl = match outcome {
            Ok(()) => self.policy.ok_ttl,
            Err(_) => self.policy.failure_ttl,
        };
        (at.elapsed() < ttl).then(|| duplicate(outcome))
    }
}

/// `AgentError` is not `Clone` (it is the core's); the cache hands out copies.
fn duplicate(outcome: &Result<(), AgentError>) -> Result<(), AgentError> {
    match outcome {
        Ok(()) => Ok(()),
        Err(AgentError::Unreachable(m)) => Err(AgentError::Unreachable(m.clone())),
        Err(AgentError::Failed(m)) => Err(AgentError::Failed(m.clone())),
        Err(AgentError::Rejected(m)) => Err(AgentError::Rejected(m.clone())),
        Err(AgentError::RateLimited { retry_after }) => Err(AgentError::RateLimited {
            retry_after: *retry_after,
        }),
    }
}
