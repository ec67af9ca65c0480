//! The service's log output, the same for both runtimes: its subscriber, and what it leaves out
//! ([`ExpectedErrors`]).

use std::fmt::Debug;

use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::util::SubscriberInitExt;

/// The target of rmcp's transport worker, which logs how each MCP session ended.
const RMCP_WORKER: &str = "rmcp::transport::worker";
/// How that worker's message begins when a session ends on an error.
const FATAL: &str = "worker quit with fatal: ";
/// What the message says, after the error, when the error was a server's 401.
const AUTH_REQUIRED: &str = ", when AuthRequired(";

/// Leaves out what a library logs as an error that the service expects and handles itself.
///
/// rmcp's transport worker logs `worker quit with fatal: Transport channel closed, when
/// AuthRequired(…)` at ERROR whenever an MCP server answers 401, and that is how a member's
/// access token is found to need a refresh: routine, and handled (refreshed once, the call
/// tried again). What is not routine the service logs in its own words (a refused refresh, a
/// token refused once refreshed). Every other event, rmcp's other errors included, passes.
pub struct ExpectedErrors;

impl<S: Subscriber> Layer<S> for ExpectedErrors {
    fn event_enabled(&self, event: &Event<'_>, _: Context<'_, S>) -> bool {
        if event.metadata().target() != RMCP_WORKER {
            return true;
        }
        let mut message = MessageText(String::new());
        event.record(&mut message);
        !is_expected(&message.0)
    }
}

/// Whether rmcp's worker's `message` is one [`ExpectedErrors`] leaves out: a session ended by
/// a server's 401, as the worker tells it (the 401 itself, or the channel it closed).
pub fn is_expected(message: &str) -> bool {
    message.starts_with(FATAL)
        && (message.contains(AUTH_REQUIRED) || message[FATAL.len()..].starts_with("Auth required"))
}

/// An event's message, as written.
struct MessageText(String);

impl Visit for MessageText {
    fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
        if field.name() == "message" {
            self.0 = format!("{value:?}");
        }
    }
}

/// Logs to standard error, filtered by `RUST_LOG` (`info` by default), in colour on a terminal:
/// the local binary's output. With traces configured ([`crate::traces`]), spans are exported
/// too, and each line names its span's `trace_id` and `span_id`.
pub fn init_terminal() {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into());
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()));
    let traces = crate::traces::layer("knowledge");
    let filter = without_trace_spans(filter, traces.is_some());
    tracing_subscriber::registry()
        .with(fmt.with_filter(filter))
        .with(traces)
        .with(ExpectedErrors)
        .init();
}

/// Logs to standard output as a Lambda function does (what `lambda_runtime`'s default
/// subscriber does): the level from `AWS_LAMBDA_LOG_LEVEL`, else `RUST_LOG`, else `INFO`; JSON
/// lines when `AWS_LAMBDA_LOG_FORMAT` is `JSON`; no time (CloudWatch stamps each line). With
/// traces configured, as [`init_terminal`].
pub fn init_lambda() {
    let level = std::env::var("AWS_LAMBDA_LOG_LEVEL").or_else(|_| std::env::var("RUST_LOG"));
    let level = (level.ok().and_then(|l| l.parse().ok()))
        .unwrap_or(tracing_subscriber::filter::LevelFilter::INFO);
    let filter = EnvFilter::builder()
        .with_default_directive(level.into())
        .from_env_lossy();
    let traces = crate::traces::layer("knowledge");
    let filter = without_trace_spans(filter, traces.is_some());
    let fmt = tracing_subscriber::fmt::layer()
        .with_target(false)
        .without_time()
        .with_writer(std::io::stdout);
    let json = std::env::var("AWS_LAMBDA_LOG_FORMAT").is_ok_and(|f| f.eq_ignore_ascii_case("json"));
    let fmt = if json {
        fmt.json().with_filter(filter).boxed()
    } else {
        fmt.with_filter(filter).boxed()
    };
    tracing_subscriber::registry()
        .with(fmt)
        .with(traces)
        .with(ExpectedErrors)
        .init();
}

/// `filter`, leaving out the spans traces are made of while traces are off: they cost nothing
/// then. While traces are on, the log lines carry them, and so their ids.
fn without_trace_spans(filter: EnvFilter, traces: bool) -> EnvFilter {
    if traces {
        return filter;
    }
    let off = format!("{}=off", knowledge_core::trace::TARGET)
        .parse()
        .expect("a directive");
    filter.add_directive(off)
}
