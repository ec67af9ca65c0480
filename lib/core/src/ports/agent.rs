//! The agent port: one step of a turn asked of an AI provider.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;

use crate::domain::{Event, EventBody};
use crate::ids::OrgId;
use crate::ports::ToolSpec;

/// What the agent is asked for one step of a turn.
#[derive(Debug, Clone)]
pub struct AgentRequest {
    pub org: OrgId,
    /// The conversation before this turn's own events, oldest first, ending with the user message
    /// being answered; messages queued behind it are left out.
    pub history: Vec<Event>,
    /// This turn's `tool_use` and `tool_result` events so far, in order.
    pub steps: Vec<Event>,
    /// The organisation's tools; empty when none are connected.
    pub tools: Vec<ToolSpec>,
    /// The agent must answer now, without calling tools: the turn has used its steps or the
    /// organisation its cost cap. The tools are still listed so that the history's tool calls
    /// make sense to the provider.
    pub must_answer: bool,
    /// What the member's memory says, for the system prompt ([`crate::domain::Memory::prompt`]);
    /// `None` when memory is off or empty, or the agent does not remember.
    pub memory: Option<String>,
}

impl AgentRequest {
    /// The text of the user message being answered.
    pub fn question(&self) -> Option<&str> {
        self.history.iter().rev().find_map(|e| match &e.body {
            EventBody::UserMessage { text } => Some(text.as_str()),
            _ => None,
        })
    }

    /// The conversation rebuilt from the log for a provider: see [`crate::conversation`].
    pub fn messages(&self) -> Vec<crate::conversation::Message> {
        crate::conversation::rebuild(self.history.iter().chain(&self.steps))
    }
}

/// A tool call the agent asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub tool: String,
    pub input: Value,
}

/// What the agent decided in one step.
#[derive(Debug, Clone, PartialEq)]
pub enum AgentAction {
    /// The final answer of the turn, in Markdown.
    Answer(String),
    /// Calls to run before the agent is asked again.
    UseTools(Vec<ToolCall>),
}

/// Tokens one provider call used, as the provider reported them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TokenUsage {
    /// Prompt tokens, cached or not.
    pub input: u64,
    pub output: u64,
}

/// The agent's answer to one step.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentReply {
    pub action: AgentAction,
    /// The model that answered, as the deployment names it (its usage is shown per model).
    pub model: String,
    pub usage: TokenUsage,
    /// What the step cost, in millionths of a US dollar: `usage` priced by the deployment's
    /// [`crate::policy::pricing::Price`].
    pub cost_micros: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// The provider could not be reached or did not answer in time; worth retrying.
    #[error("agent provider unreachable: {0}")]
    Unreachable(String),
    /// The provider failed (a 5xx) or answered with something that is not its wire format;
    /// worth retrying.
    #[error("agent provider failed: {0}")]
    Failed(String),
    /// The provider is rate limiting; `retry_after` is its own hint, when it gave one.
    #[error("agent provider rate limited the request")]
    RateLimited { retry_after: Option<Duration> },
    /// The provider refused the request (a bad key, an unknown model, a bad request); retrying
    /// would not help.
    #[error("agent provider refused the request: {0}")]
    Rejected(String),
}

/// Where an agent call tells the answer's text as the provider writes it (the draft the
/// transcript shows while the turn runs).
pub trait Drafts: Send + Sync {
    /// All the text of the answer written so far in this call, not a delta. Called often (at
    /// each piece the provider streams): it must return at once.
    fn written(&self, text: &str);
}

/// Drafts that go nowhere.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoDrafts;

impl Drafts for NoDrafts {
    fn written(&self, _text: &str) {}
}

/// The AI agent that answers questions.
#[async_trait]
pub trait Agent: Send + Sync {
    /// Whether the provider can be reached now; create session answers 502 when it cannot.
    /// Cheap: adapters cache the answer briefly.
    async fn health(&self) -> Result<(), AgentError>;
    /// Whether the agent keeps a memory of members: it is offered the memory tools and shown
    /// the notes. The built-in agent does not.
    fn remembers(&self) -> bool {
        false
    }
    /// The model it asks, as metrics name it: a deployment's few names, never a member's.
    fn model(&self) -> &str {
        "builtin"
    }
    /// Whose model it is, as the GenAI conventions name providers (`openai`, `anthropic`).
    fn provider(&self) -> &str {
        "builtin"
    }
    /// One step of a turn: one provider call. Side-effect free: the workflow may abandon it
    /// midway (dropping the future aborts the request) or repeat it.
    async fn respond(&self, request: AgentRequest) -> Result<AgentReply, AgentError>;
    /// [`Agent::respond`], telling `drafts` the text of the answer as the provider streams it.
    /// An agent that does not stream answers as `respond` does and tells nothing.
    async fn respond_streaming(
        &self, request: AgentRequest, drafts: &dyn Drafts,
    ) -> Result<AgentReply, AgentError> {
        let _ = drafts;
        self.respond(request).await
    }
}
