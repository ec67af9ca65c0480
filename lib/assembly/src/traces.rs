//! The service's traces: its spans (the core's and the HTTP edge's, under
//! [`knowledge_core::trace::TARGET`], and the AWS SDK's one span per request) as OpenTelemetry
//! spans, exported over OTLP HTTP/protobuf to the endpoint the standard `OTEL_*` variables
//! name. Off unless an endpoint is set. Spans wait in memory until [`flush`]: after each
//! invocation on Lambda, every `OTEL_BSP_SCHEDULE_DELAY` locally; a collector that is down
//! costs one failed request per flush and a log line when exports start or stop failing.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use knowledge_core::trace::{Propagator, TARGET, TraceParent};
use opentelemetry::trace::{
    SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState, TracerProvider as _,
};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter as _, SpanProcessor};
use tracing::Metadata;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::Layer;
use tracing_subscriber::registry::LookupSpan;

/// Finished spans kept for the next flush at most; later ones are dropped (and counted).
const BUFFERED_SPANS: usize = 4096;
/// How often the local service flushes, unless `OTEL_BSP_SCHEDULE_DELAY` says (milliseconds).
const DEFAULT_DELAY: Duration = Duration::from_millis(5000);

/// What exporting needs: the spans waiting, and the exporter.
struct Traces {
    buffer: Arc<Buffer>,
    exporter: tokio::sync::Mutex<opentelemetry_otlp::SpanExporter>,
    /// Kept alive: its tracer hands spans to the buffer.
    _provider: SdkTracerProvider,
    failing: AtomicBool,
}

static TRACES: OnceLock<Traces> = OnceLock::new();

/// The finished spans, until the next flush.
#[derive(Debug, Default)]
struct Buffer {
    spans: Mutex<Vec<SpanData>>,
    dropped: std::sync::atomic::AtomicU64,
}

/// The span processor that hands finished, sampled spans to the [`Buffer`].
#[derive(Debug)]
struct Buffered(Arc<Buffer>);

impl SpanProcessor for Buffered {
    fn on_start(&self, _: &mut opentelemetry_sdk::trace::Span, _: &opentelemetry::Context) {}

    fn on_end(&self, mut span: SpanData) {
        if !span.span_context.is_sampled() {
            return;
        }
        // The ids the spans carry as fields for the log lines are the span's own.
        (span.attributes).retain(|kv| !matches!(kv.key.as_str(), "trace_id" | "span_id"));
        let mut spans = self.0.spans.lock().expect("span buffer lock");
        if spans.len() < BUFFERED_SPANS {
            spans.push(span);
        } else {
            self.0.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn force_flush(&self) -> OTelSdkResult {
        Ok(())
    }

    fn shutdown_with_timeout(&self, _: Duration) -> OTelSdkResult {
        Ok(())
    }
}

/// Whether the environment asks for traces: an OTLP endpoint (`OTEL_EXPORTER_OTLP_ENDPOINT`
/// or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`), and neither `OTEL_SDK_DISABLED=true` nor
/// `OTEL_TRACES_EXPORTER` other than `otlp`. A protocol other than `http/protobuf` is refused
/// with a warning (traces stay off).
fn configured() -> bool {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    let endpoint = var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").or(var("OTEL_EXPORTER_OTLP_ENDPOINT"));
    if endpoint.is_none()
        || var("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true"))
        || var("OTEL_TRACES_EXPORTER").is_some_and(|v| !v.eq_ignore_ascii_case("otlp"))
    {
        return false;
    }
    let protocol = var("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL").or(var("OTEL_EXPORTER_OTLP_PROTOCOL"));
    if let Some(p) = protocol.filter(|p| p != "http/protobuf") {
        eprintln!("traces are off: OTLP protocol {p:?} is not supported (http/protobuf is)");
        return false;
    }
    true
}

/// The layer that makes the service's spans OpenTelemetry spans, when the environment asks
/// for traces (see [`configured`]); `None` otherwise, and when the exporter cannot be built
/// (the reason on standard error: the subscriber is not up yet). `service` names the service
/// unless `OTEL_SERVICE_NAME` does. Installs the core's [`Propagator`].
pub(crate) fn layer<S>(service: &str) -> Option<impl Layer<S>>
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a> + Send + Sync,
{
    if !configured() {
        return None;
    }
    let mut exporter = match opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .build()
    {
        Ok(exporter) => exporter,
        Err(e) => {
            eprintln!("traces are off: the OTLP exporter cannot be built: {e}");
            return None;
        }
    };
    let mut resource = Resource::builder();
    if std::env::var_os("OTEL_SERVICE_NAME").is_none() {
        resource = resource.with_service_name(service.to_owned());
    }
    // On Lambda, which function a span comes from.
    if let Ok(function) = std::env::var("AWS_LAMBDA_FUNCTION_NAME") {
        resource = resource.with_attribute(opentelemetry::KeyValue::new("faas.name", function));
    }
    let resource = resource.build();
    exporter.set_resource(&resource);
    let buffer = Arc::new(Buffer::default());
    let provider = SdkTracerProvider::builder()
        .with_span_processor(Buffered(buffer.clone()))
        .with_resource(resource)
        .build();
    let tracer = provider.tracer("knowledge");
    let _ = TRACES.set(Traces {
        buffer,
        exporter: tokio::sync::Mutex::new(exporter),
        _provider: provider,
        failing: AtomicBool::new(false),
    });
    knowledge_core::trace::install(Box::new(OtelPropagator));
    let layer = tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_location(false)
        .with_tracked_inactivity(false)
        .with_threads(false)
        .with_level(false)
        .with_target(false);
    Some(layer.with_filter(tracing_subscriber::filter::filter_fn(exported)))
}

/// The spans exported: the service's own, and each request of the AWS SDK (its operation's
/// span, `DynamoDB.TransactWriteItems`, with `rpc.service` and `rpc.method`). Never an event:
/// a log line's text stays in the logs.
fn exported(meta: &Metadata<'_>) -> bool {
    meta.is_span()
        && (meta.target() == TARGET
            || (meta.target().starts_with("aws_sdk_")
                && meta.fields().field("rpc.system").is_some()))
}

/// Sends the spans finished since the last flush; does nothing when traces are off. Bounded
/// by the exporter's timeout (`OTEL_EXPORTER_OTLP_TIMEOUT`, 10 s by default). An export that
/// fails drops its spans: traces are not worth a member's wait.
pub async fn flush() {
    let Some(traces) = TRACES.get() else {
        return;
    };
    let exporter = traces.exporter.lock().await;
    let batch = std::mem::take(&mut *traces.buffer.spans.lock().expect("span buffer lock"));
    let dropped = traces.buffer.dropped.swap(0, Ordering::Relaxed);
    if dropped > 0 {
        tracing::warn!(
            dropped,
            "spans dropped: more finished between two flushes than are kept"
        );
    }
    if batch.is_empty() {
        return;
    }
    let spans = batch.len();
    match exporter.export(batch).await {
        Ok(()) => {
            if traces.failing.swap(false, Ordering::Relaxed) {
                tracing::info!("traces are exported again");
            }
        }
        Err(e) => {
            if !traces.failing.swap(true, Ordering::Relaxed) {
                tracing::warn!(error = %e, spans, "traces cannot be exported; dropped until the collector answers");
            }
        }
    }
}

/// How often the local service flushes: `OTEL_BSP_SCHEDULE_DELAY` milliseconds, else 5 s.
pub fn schedule_delay() -> Duration {
    std::env::var("OTEL_BSP_SCHEDULE_DELAY")
        .ok()
        .and_then(|ms| ms.parse().ok())
        .map_or(DEFAULT_DELAY, Duration::from_millis)
}

/// The core's [`Propagator`] on `tracing-opentelemetry`.
struct OtelPropagator;

impl Propagator for OtelPropagator {
    fn current(&self) -> Option<TraceParent> {
        let context = tracing::Span::current().context();
        let span = context.span();
        let span = span.span_context();
        if !span.is_valid() {
            return None;
        }
        TraceParent::parse(&format!(
            "00-{}-{}-{:02x}",
            span.trace_id(),
            span.span_id(),
            span.trace_flags().to_u8()
        ))
    }

    fn adopt(&self, span: &tracing::Span, parent: &TraceParent) {
        let (Ok(trace), Ok(id), Ok(flags)) = (
            TraceId::from_hex(parent.trace_id()),
            SpanId::from_hex(parent.parent_id()),
            u8::from_str_radix(parent.flags(), 16),
        ) else {
            return;
        };
        let remote = SpanContext::new(trace, id, TraceFlags::new(flags), true, TraceState::NONE);
        let _ = span.set_parent(opentelemetry::Context::new().with_remote_span_context(remote));
    }

    fn identify(&self, span: &tracing::Span) {
        let context = span.context();
        let otel = context.span();
        let ids = otel.span_context();
        if ids.is_valid() {
            span.record("trace_id", tracing::field::display(ids.trace_id()));
            span.record("span_id", tracing::field::display(ids.span_id()));
        }
    }
}
