//! The W3C trace context a turn carries from the request that starts its run to every step of
//! it: kept on the run's claim (so a handover or a revival keeps it) and in each execution's
//! input. The core holds it as text; a runtime that exports traces installs a [`Propagator`]
//! that reads it from and lends it to `tracing` spans ([`operations.md`]). Also the spans of
//! model and tool calls, named and attributed as the OpenTelemetry GenAI conventions say, and
//! never with a prompt, an answer, a tool's input or output, a token or a cookie.
//!
//! [`operations.md`]: ../../../docs/operations.md

use std::fmt;
use std::sync::OnceLock;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The target of the spans a trace is made of (the steps', the model's and tools' calls, the
/// HTTP edge's), which the exporter takes and the log output leaves out while traces are off.
pub const TARGET: &str = "knowledge::trace";

/// A span a trace is made of, at [`TARGET`], with the fields every such span has: `trace_id`
/// and `span_id` (recorded by [`identified`], for the log lines within it), `otel.status_code`
/// and `error.type` (recorded by [`failed`]); then the span's own name and fields.
#[macro_export]
macro_rules! trace_span {
    ($name:literal, $($fields:tt)*) => {
        ::tracing::info_span!(
            target: $crate::trace::TARGET,
            $name,
            trace_id = ::tracing::field::Empty,
            span_id = ::tracing::field::Empty,
            otel.status_code = ::tracing::field::Empty,
            error.type = ::tracing::field::Empty,
            $($fields)*
        )
    };
}

/// A `traceparent` as W3C Trace Context level 1 writes it: `00-<trace id>-<parent id>-<flags>`,
/// lowercase hexadecimal, neither id all zeros.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct TraceParent(String);

impl TraceParent {
    /// `text` when it is a version-00 `traceparent`; `None` otherwise.
    pub fn parse(text: &str) -> Option<Self> {
        let parts: Vec<&str> = text.split('-').collect();
        let [version, trace, parent, flags] = parts[..] else {
            return None;
        };
        let hex = |s: &str, len: usize| {
            s.len() == len
                && s.bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        };
        let nonzero = |s: &str| s.bytes().any(|b| b != b'0');
        (version == "00"
            && hex(trace, 32)
            && nonzero(trace)
            && hex(parent, 16)
            && nonzero(parent)
            && hex(flags, 2))
        .then(|| Self(text.to_owned()))
    }

    /// The trace's id, 32 hexadecimal digits.
    pub fn trace_id(&self) -> &str {
        &self.0[3..35]
    }

    /// The parent span's id, 16 hexadecimal digits.
    pub fn parent_id(&self) -> &str {
        &self.0[36..52]
    }

    /// The trace flags, 2 hexadecimal digits (`01`: sampled).
    pub fn flags(&self) -> &str {
        &self.0[53..55]
    }
}

impl fmt::Debug for TraceParent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for TraceParent {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for TraceParent {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Self::parse(&text).ok_or_else(|| serde::de::Error::custom("not a W3C traceparent"))
    }
}

/// A stored or received `traceparent`, or `None` when it is absent, `null` or not one: a trace
/// context never fails the read of a session or a step's input. For `deserialize_with`.
pub fn lenient<'de, D: Deserializer<'de>>(d: D) -> Result<Option<TraceParent>, D::Error> {
    let text = Option::<serde_json::Value>::deserialize(d)?;
    Ok(text
        .as_ref()
        .and_then(|v| v.as_str())
        .and_then(TraceParent::parse))
}

/// What a runtime that exports traces lends the core: the context of the current span, and
/// a way to make a span the child of a context that arrived in a step's input.
pub trait Propagator: Send + Sync {
    /// The current span's context, when a span is current and recorded.
    fn current(&self) -> Option<TraceParent>;
    /// Makes `span` (not yet entered) a child of `parent`.
    fn adopt(&self, span: &tracing::Span, parent: &TraceParent);
    /// Records `span`'s trace and span ids in its `trace_id` and `span_id` fields, so that the
    /// log lines written within it name them.
    fn identify(&self, span: &tracing::Span);
}

static PROPAGATOR: OnceLock<Box<dyn Propagator>> = OnceLock::new();

/// Installs the process's propagator; the first installed stays.
pub fn install(propagator: Box<dyn Propagator>) {
    let _ = PROPAGATOR.set(propagator);
}

/// Whether traces are on in this process (a propagator is installed).
pub fn enabled() -> bool {
    PROPAGATOR.get().is_some()
}

/// The current span's context; `None` when no propagator is installed (traces are off).
pub fn current() -> Option<TraceParent> {
    PROPAGATOR.get().and_then(|p| p.current())
}

/// Makes `span` a child of `parent`, when there is one and traces are on. Call it before the
/// span is first entered.
pub fn adopt(span: &tracing::Span, parent: Option<&TraceParent>) {
    if let (Some(p), Some(parent)) = (PROPAGATOR.get(), parent) {
        p.adopt(span, parent);
    }
}

/// Records `span`'s ids in its `trace_id` and `span_id` fields when traces are on; returns it.
/// Call it once the span's parent is settled.
pub fn identified(span: tracing::Span) -> tracing::Span {
    if let Some(p) = PROPAGATOR.get()
        && !span.is_disabled()
    {
        p.identify(&span);
    }
    span
}

/// The span of one call to the model `model` of `provider`: `chat <model>`, a client span.
/// Its usage is recorded by [`chat_answered`], its failure by [`failed`].
pub fn chat(provider: &str, model: &str) -> tracing::Span {
    identified(trace_span!(
        "chat",
        otel.name = format!("chat {model}"),
        otel.kind = "client",
        gen_ai.operation.name = "chat",
        gen_ai.provider.name = provider,
        gen_ai.request.model = model,
        gen_ai.usage.input_tokens = tracing::field::Empty,
        gen_ai.usage.output_tokens = tracing::field::Empty,
    ))
}

/// Records on a [`chat`] span the tokens the call used.
pub fn chat_answered(span: &tracing::Span, input_tokens: u64, output_tokens: u64) {
    // As signed integers: an unsigned one becomes a string attribute.
    let int = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    span.record("gen_ai.usage.input_tokens", int(input_tokens));
    span.record("gen_ai.usage.output_tokens", int(output_tokens));
}

/// The span of one call of the tool `tool`: `execute_tool <tool>`, with the kind of
/// integration it belongs to.
pub fn tool(tool: &str, integration: &str) -> tracing::Span {
    identified(trace_span!(
        "execute_tool",
        otel.name = format!("execute_tool {tool}"),
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = tool,
        gen_ai.tool.type = "function",
        knowledge.integration = integration,
    ))
}

/// Marks a span of [`trace_span!`] failed, with `kind`, a name of few values, as its
/// `error.type`.
pub fn failed(span: &tracing::Span, kind: &str) {
    span.record("error.type", kind);
    span.record("otel.status_code", "ERROR");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_traceparent_is_read_only_in_its_version_00_form() {
        let good = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let parsed = TraceParent::parse(good).expect("the specification's example");
        assert_eq!(parsed.trace_id(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(parsed.parent_id(), "00f067aa0ba902b7");
        assert_eq!(parsed.flags(), "01");
        for bad in [
            "",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",
        ] {
            assert_eq!(TraceParent::parse(bad), None, "{bad}");
        }
        let json = serde_json::to_string(&parsed).unwrap();
        assert_eq!(json, format!("\"{good}\""));
        assert!(serde_json::from_str::<TraceParent>("\"00-zz\"").is_err());
    }

    #[test]
    fn a_trace_context_that_is_not_one_is_read_as_none_and_never_fails_the_read() {
        #[derive(serde::Deserialize)]
        struct Carrier {
            #[serde(default, deserialize_with = "lenient")]
            trace: Option<TraceParent>,
        }
        let read = |json: &str| serde_json::from_str::<Carrier>(json).map(|c| c.trace);
        let good = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        assert_eq!(
            read(&format!(r#"{{"trace": "{good}"}}"#)).unwrap(),
            TraceParent::parse(good)
        );
        for other in [
            r#"{}"#,
            r#"{"trace": null}"#,
            r#"{"trace": "00-zz"}"#,
            r#"{"trace": 7}"#,
        ] {
            assert_eq!(read(other).unwrap(), None, "{other}");
        }
    }
}
