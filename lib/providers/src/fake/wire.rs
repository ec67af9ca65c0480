//! What generic tests need to know of a provider's wire format ([`Wire`]), and how its adapter
//! is set up ([`AgentSetup`]).

use std::sync::Arc;
use std::time::Duration;

use knowledge_core::ports::Agent;
use serde_json::Value;

use super::{KEY, PATIENCE, Seen};
use crate::HealthPolicy;

/// How [`Wire::agent`] builds the adapter.
#[derive(Debug, Clone, Copy)]
pub struct AgentSetup {
    /// The API key ([`KEY`] by default). Anthropic requires one and uses [`KEY`] when `None`.
    pub key: Option<&'static str>,
    /// Time allowed for one call ([`PATIENCE`] by default).
    pub timeout: Duration,
    pub health: HealthPolicy,
}

impl Default for AgentSetup {
    fn default() -> Self {
        Self {
            key: Some(KEY),
            timeout: PATIENCE,
            health: HealthPolicy::default(),
        }
    }
}

/// One tool call and its result as a request sent them.
#[derive(Debug, PartialEq)]
pub struct Exchange {
    pub call_id: String,
    pub tool: String,
    pub input: Value,
    pub result_id: String,
    /// The result as the request carried it: JSON text.
    pub output: String,
}

/// What generic tests need to know of a provider's wire format.
pub trait Wire {
    /// The adapter for this format, pointed at `base` (a [`Fake::base`](super::Fake::base)),
    /// for [`MODEL`](super::MODEL) at [`PRICE`](super::PRICE).
    fn agent(base: &str, setup: AgentSetup) -> Arc<dyn Agent>;
    fn chat_path() -> &'static str;
    /// Where the health probe goes.
    fn models_path() -> &'static str;
    /// A reply answering `text` having used [`USAGE`](super::USAGE).
    fn answer(text: &str) -> Value;
    /// A reply calling `tool` with `input` (sent as the format sends it, object or not).
    fn tool_call(id: &str, tool: &str, input: Value) -> Value;
    /// An error body whose message holds the key, as some providers' messages do.
    fn error(kind: &str) -> Value;
    fn assert_authenticated(seen: &Seen);
    /// The `tool_choice` sent, as `auto` or `none`.
    fn tool_choice(body: &Value) -> Option<String>;
    /// The names of the tools the request declared.
    fn declared_tools(body: &Value) -> Vec<String>;
    /// The system instructions and the last user text of a request.
    fn system_and_question(body: &Value) -> (String, String);
    /// The one tool call and result a request's history holds.
    fn exchange(body: &Value) -> Exchange;
    /// A streamed answer cut by an error event after its first words (`text/event-stream`).
    fn stream_error() -> String;
}
