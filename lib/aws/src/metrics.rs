//! The service's metrics (`knowledge_core::telemetry`) as CloudWatch embedded metric format:
//! JSON lines in the log the function writes already, which CloudWatch turns into metrics of
//! the namespace [`namespace`]. No request and no agent: what an invocation recorded is written
//! when it ends, before Lambda freezes the instance.

use std::io::Write;
use std::sync::OnceLock;

use metrics_cloudwatch_embedded::Collector;

/// The variable that names the CloudWatch namespace of the service's metrics: the template
/// sets `Knowledge/<stack>`, so that two stacks in one account never add up.
pub const NAMESPACE_ENV: &str = "METRICS_NAMESPACE";
/// The namespace without it.
pub const DEFAULT_NAMESPACE: &str = "Knowledge";

/// The namespace the metrics go to.
pub fn namespace() -> String {
    std::env::var(NAMESPACE_ENV)
        .ok()
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| DEFAULT_NAMESPACE.to_owned())
}

static COLLECTOR: OnceLock<&'static Collector> = OnceLock::new();

/// Installs the collector as the process's metrics recorder and counts this cold start. A
/// second call, or a recorder installed already, leaves the first one (logged).
pub fn install() {
    let built = metrics_cloudwatch_embedded::Builder::new()
        .cloudwatch_namespace(namespace())
        .init();
    match built {
        Ok(collector) => {
            let _ = COLLECTOR.set(collector);
            knowledge_core::telemetry::describe();
            knowledge_core::telemetry::cold_start();
        }
        Err(e) => tracing::warn!(error = %e, "the metrics were not installed"),
    }
}

/// Writes what was recorded since the last flush to standard output, a line per label set;
/// nothing when nothing was recorded or nothing is installed. A failed write is logged: the
/// invocation's answer matters more than its counts.
pub fn flush() {
    let mut out = std::io::stdout().lock();
    if let Err(e) = flush_to(&mut out).and_then(|()| out.flush()) {
        tracing::warn!(error = %e, "the metrics were not written");
    }
}

/// [`flush`] to `out`.
///
/// # Errors
/// `out`'s.
pub fn flush_to(out: &mut impl Write) -> std::io::Result<()> {
    match COLLECTOR.get() {
        Some(collector) => collector.flush(out),
        None => Ok(()),
    }
}
