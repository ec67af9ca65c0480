//! Invoking a Task: the handlers behind Task states ([`Tasks`]) and their failures
//! ([`TaskError`]), each attempt on its own tokio task bounded by `TimeoutSeconds`, and Retry
//! with backoff, `MaxDelaySeconds` and full jitter.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::definition::Retrier;

/// A Task's failure: the error name Retry and Catch match, and its cause.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{error}: {cause}")]
pub struct TaskError {
    pub error: String,
    pub cause: String,
}

impl TaskError {
    /// The error `error` (the name `ErrorEquals` matches) with its `cause`.
    pub fn new(error: impl Into<String>, cause: impl Into<String>) -> Self {
        Self {
            error: error.into(),
            cause: cause.into(),
        }
    }
}

/// The in-process handlers behind the Task states.
#[async_trait]
pub trait Tasks: Send + Sync {
    /// Runs `handler` on `input`, a name the machine was loaded with. `signal` is the signal the
    /// execution was started with: a handler may return early when it fires. A handler that
    /// panics fails its Task with `States.TaskFailed`.
    async fn invoke(
        &self, handler: &str, input: Value, signal: CancellationToken,
    ) -> Result<Value, TaskError>;
}

/// A `States.Runtime` error: the execution itself went wrong (a path that selects nothing, a
/// value of the wrong type), not a Task.
pub(crate) fn runtime(cause: impl Into<String>) -> TaskError {
    TaskError::new("States.Runtime", cause)
}

/// Whether an `ErrorEquals` list matches `error`, with Step Functions' wildcards: `States.ALL`
/// matches any error, `States.TaskFailed` any but `States.Timeout` and `States.Runtime`.
pub(crate) fn matches(errors: &[String], error: &str) -> bool {
    errors.iter().any(|e| {
        e == "States.ALL"
            || e == error
            || (e == "States.TaskFailed" && error != "States.Timeout" && error != "States.Runtime")
    })
}

impl Retrier {
    /// The delay before retry number `attempt` (1-based), before jitter: the interval grown by
    /// the backoff rate, capped by `MaxDelaySeconds`. Full jitter then takes `sample` (in
    /// [0, 1)) of it.
    pub(crate) fn delay(&self, attempt: u32, sample: f64) -> Duration {
        let mut secs = self.interval_secs * self.backoff_rate.powi(attempt as i32 - 1);
        if let Some(max) = self.max_delay_secs {
            secs = secs.min(max);
        }
        if self.full_jitter {
            secs *= sample;
        }
        Duration::from_secs_f64(secs.max(0.0))
    }
}

/// A uniform sample in [0, 1) for jitter.
fn sample() -> f64 {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).expect("the OS provides randomness");
    (u64::from_le_bytes(bytes) >> 11) as f64 / (1u64 << 53) as f64
}

/// Invokes a Task until it succeeds or no retrier matches its error any more. Each retrier
/// counts its own attempts, as in Step Functions; `delay_scale` multiplies every backoff.
pub(crate) async fn invoke_with_retry(
    handler: &str, input: &Value, timeout_secs: Option<u64>, retry: &[Retrier],
    tasks: &Arc<dyn Tasks>, signal: &CancellationToken, delay_scale: f64,
) -> Result<Value, TaskError> {
    let mut attempts = vec![0u32; retry.len()];
    loop {
        // An attempt that began before the execution was signalled may have failed for reasons
        // the signal makes moot: its backoff ends when the signal fires. One that began after
        // (a Task that winds the execution up, say) keeps its backoff, or a passing failure
        // would use up its retries at once.
        let began_signalled = signal.is_cancelled();
        let error = match invoke_once(handler, input.clone(), timeout_secs, tasks, signal).await {
            Ok(v) => return Ok(v),
            Err(e) => e,
        };
        let Some(i) = retry.iter().position(|r| matches(&r.errors, &error.error)) else {
            return Err(error);
        };
        attempts[i] += 1;
        if attempts[i] > retry[i].max_attempts {
            return Err(error);
        }
        tracing::warn!(handler, error = %error, attempt = attempts[i], "task failed; retrying");
        let delay = retry[i].delay(attempts[i], sample()).mul_f64(delay_scale);
        if began_signalled {
            tokio::time::sleep(delay).await;
        } else {
            wait_unless_signalled(delay, signal).await;
        }
    }
}

/// Sleeps for `wait`, or less: the wait ends at once when the execution's signal fires, so
/// that the next Task attempt, which can see why it fired, moves the execution on without
/// waiting out a backoff or a Wait meant for an execution nobody stopped. Step Functions
/// cannot cut its own waits short; here a signalled execution does not wait.
pub(crate) async fn wait_unless_signalled(wait: Duration, signal: &CancellationToken) {
    tokio::select! {
        () = tokio::time::sleep(wait) => {}
        () = signal.cancelled() => {}
    }
}

/// One attempt, on its own tokio task so that a panicking handler is a failed Task
/// (`States.TaskFailed`) rather than a dead execution, and bounded by `TimeoutSeconds`
/// (`States.Timeout`, the attempt is aborted).
async fn invoke_once(
    handler: &str, input: Value, timeout_secs: Option<u64>, tasks: &Arc<dyn Tasks>,
    signal: &CancellationToken,
) -> Result<Value, TaskError> {
    let (tasks, signal, name) = (tasks.clone(), signal.clone(), handler.to_owned());
    let mut attempt = tokio::spawn(async move { tasks.invoke(&name, input, signal).await });
    let joined = match timeout_secs {
        Some(secs) => match tokio::time::timeout(Duration::from_secs(secs), &mut attempt).await {
            Ok(joined) => joined,
            Err(_) => {
                attempt.abort();
                return Err(TaskError::new(
                    "States.Timeout",
                    format!("{handler} ran longer than {secs} s"),
                ));
            }
        },
        None => attempt.await,
    };
    joined.unwrap_or_else(|e| {
        Err(TaskError::new(
            "States.TaskFailed",
            format!("{handler} did not complete: {e}"),
        ))
    })
}

#[cfg(test)]
mod tests;
