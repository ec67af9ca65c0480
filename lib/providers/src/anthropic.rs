//! The Anthropic adapter: the Messages API with tool use, streamed (server-sent events) so that
//! the answer's text is told as it is written.

use std::fmt;
use std::time::Duration;

use async_trait::async_trait;
use knowledge_core::conversation::Message;
use knowledge_core::policy::pricing::Price;
use knowledge_core::ports::{
    Agent, AgentError, AgentReply, AgentRequest, Drafts, NoDrafts, TokenUsage, ToolCall, ToolSpec,
};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::error::ConfigError;
use crate::health::HealthPolicy;
use crate::http::{self, ApiKey, Transport};
use crate::render;
use crate::sse::{Events, Streamed};

/// Anthropic's API; requests go to `{base_url}/v1/messages`.
pub const DEFAULT_ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com";
/// The API version the request and reply shapes here follow.
const API_VERSION: &str = "2023-06-01";
/// The default cap on the tokens of one reply.
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// How to reach the Messages API. `Debug` hides the key.
#[derive(Debug, Clone)]
pub struct AnthropicConfig {
    /// Without the version segment: requests go to `{base_url}/v1/messages`.
    pub base_url: String,
    pub api_key: ApiKey,
    pub model: String,
    /// The most tokens one reply may have (the API requires a cap).
    pub max_tokens: u32,
    pub price: Price,
    /// Time allowed for one call, connection included.
    pub timeout: Duration,
    pub health: HealthPolicy,
}

impl AnthropicConfig {
    /// Anthropic's API with 4096 tokens a reply, a 60 s timeout and the default health policy.
    pub fn new(model: impl Into<String>, api_key: ApiKey, price: Price) -> Self {
        Self {
            base_url: DEFAULT_ANTHROPIC_BASE_URL.into(),
            api_key,
            model: model.into(),
            max_tokens: DEFAULT_MAX_TOKENS,
            price,
            timeout: http::DEFAULT_REQUEST_TIMEOUT,
            health: HealthPolicy::default(),
        }
    }
}

/// An [`Agent`] backed by the Anthropic Messages API.
pub struct AnthropicAgent {
    model: String,
    max_tokens: u32,
    base_url: String,
    transport: Transport,
}

impl fmt::Debug for AnthropicAgent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AnthropicAgent")
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .finish_non_exhaustive()
    }
}

impl AnthropicAgent {
    /// Errors: `BaseUrl` for a base URL that is not absolute http(s), `Client` when the HTTP
    /// client cannot be built.
    pub fn new(config: AnthropicConfig) -> Result<Self, ConfigError> {
        let base_url = http::base_url(&config.base_url).map_err(ConfigError::BaseUrl)?;
        let mut headers = HeaderMap::new();
        headers.insert(
            HeaderName::from_static("x-api-key"),
            config.api_key.header(""),
        );
        headers.insert(
            HeaderName::from_static("anthropic-version"),
            HeaderValue::from_static(API_VERSION),
        );
        let transport = Transport::new(
            headers,
            config.timeout,
            format!("{base_url}/v1/models"),
            config.health,
            config.price,
        )?;
        Ok(Self {
            model: config.model,
            max_tokens: config.max_tokens,
            base_url,
            transport,
        })
    }

    fn body(&self, request: &AgentRequest) -> Value {
        let mut body = json!({
            "model": self.model,
            "max_tokens": self.max_tokens,
            "system": render::system_prompt(request),
            "messages": messages(render::conversation(request)),
        });
        if !request.tools.is_empty() {
            body["tools"] = request.tools.iter().map(tool).collect();
            let choice = if request.must_answer { "none" } else { "auto" };
            body["tool_choice"] = json!({"type": choice});
        }
        body
    }
}

/// The conversation as Messages API turns: tool calls are assistant `tool_use` blocks, their
/// results user `tool_result` blocks, and consecutive messages of one role are merged into one
/// turn, as the API requires turns to alternate. Empty texts are left out (the API refuses
/// empty text blocks).
fn messages(conversation: Vec<Message>) -> Vec<Value> {
    let mut turns: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for message in conversation {
        let (role, blocks) = match message {
            Message::User(text) => ("user", text_block(text)),
            Message::Assistant(text) => ("assistant", text_block(text)),
            Message::ToolCalls(calls) => (
                "assistant",
                calls
                    .into_iter()
                    .map(|c| json!({"type": "tool_use", "id": c.id, "name": c.tool, "input": c.input}))
                    .collect(),
            ),
            Message::ToolResults(results) => (
                "user",
                results
                    .iter()
                    .map(|r| {
                        json!({
                            "type": "tool_result",
                            "tool_use_id": r.id,
                            "content": render::output_text(&r.output),
                            "is_error": r.is_error(),
                        })
                    })
                    .collect(),
            ),
        };
        if blocks.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some((last, content)) if *last == role => content.extend(blocks),
            _ => turns.push((role, blocks)),
        }
    }
    turns
        .into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect()
}

fn text_block(text: String) -> Vec<Value> {
    if text.is_empty() {
        Vec::new()
    } else {
        vec![json!({"type": "text", "text": text})]
    }
}

fn tool(spec: &ToolSpec) -> Value {
    json!({
        "name": spec.name,
        "description": spec.description,
        "input_schema": spec.input_schema,
    })
}

#[derive(Deserialize)]
struct Reply {
    content: Vec<Block>,
    usage: Usage,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block {
    Text {
        text: String,
    },
    ToolUse {
        name: String,
        input: Value,
    },
    /// Thinking and other blocks this adapter neither asks for nor uses.
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct Usage {
    input_tokens: u64,
    output_tokens: u64,
    cache_creation_input_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
}

impl Usage {
    /// Prompt tokens, cached or not, as the core counts them.
    fn tokens(&self) -> TokenUsage {
        TokenUsage {
            input: self.input_tokens
                + self.cache_creation_input_tokens.unwrap_or(0)
                + self.cache_read_input_tokens.unwrap_or(0),
            output: self.output_tokens,
        }
    }
}

/// A block being streamed: text as it grows, or a tool call's input as JSON text in pieces.
enum Streaming {
    Text(String),
    ToolUse { name: String, json: String },
    Other,
}

/// Content blocks one streamed reply may hold at most (by their index).
const MAX_STREAMED_BLOCKS: usize = 64;

/// A reply gathered from its stream of events (`message_start`, the blocks' start, deltas and
/// stop, `message_delta` with the output tokens, `message_stop`), telling `drafts` the text as
/// it grows. Errors: `Failed` for an event that is not JSON of the format, an `error` event
/// (overloaded, say), or a tool input that is not JSON.
async fn gather(mut events: Events, drafts: &dyn Drafts) -> Result<Reply, AgentError> {
    let malformed =
        |e: serde_json::Error| AgentError::Failed(format!("a streamed event is malformed: {e}"));
    let mut blocks: Vec<Streaming> = vec![];
    let mut usage: Option<Usage> = None;
    let mut text = String::new();
    while let Some(event) = events.next().await? {
        let value: Value = serde_json::from_str(&event.data).map_err(malformed)?;
        match value["type"].as_str().unwrap_or_default() {
            "message_start" => {
                usage = Some(
                    serde_json::from_value(value["message"]["usage"].clone()).map_err(malformed)?,
                );
            }
            "content_block_start" => {
                let index = value["index"].as_u64().unwrap_or(u64::MAX) as usize;
                if index >= MAX_STREAMED_BLOCKS {
                    return Err(AgentError::Failed("too many blocks in one reply".into()));
                }
                let block = &value["content_block"];
                while blocks.len() <= index {
                    blocks.push(Streaming::Other);
                }
                blocks[index] = match block["type"].as_str() {
                    Some("text") => {
                        Streaming::Text(block["text"].as_str().unwrap_or_default().to_owned())
                    }
                    Some("tool_use") => Streaming::ToolUse {
                        name: block["name"].as_str().unwrap_or_default().to_owned(),
                        json: String::new(),
                    },
                    _ => Streaming::Other,
                };
            }
            "content_block_delta" => {
                let index = value["index"].as_u64().unwrap_or(u64::MAX) as usize;
                let delta = &value["delta"];
                match (blocks.get_mut(index), delta["type"].as_str()) {
                    (Some(Streaming::Text(t)), Some("text_delta")) => {
                        let piece = delta["text"].as_str().unwrap_or_default();
                        t.push_str(piece);
                        text.push_str(piece);
                        drafts.written(&text);
                    }
                    (Some(Streaming::ToolUse { json, .. }), Some("input_json_delta")) => {
                        json.push_str(delta["partial_json"].as_str().unwrap_or_default());
                    }
                    _ => {}
                }
            }
            "message_delta" => {
                if let (Some(u), Some(out)) =
                    (usage.as_mut(), value["usage"]["output_tokens"].as_u64())
                {
                    u.output_tokens = out;
                }
            }
            "message_stop" => break,
            "error" => {
                let kind = value["error"]["type"].as_str().unwrap_or("unknown");
                return Err(AgentError::Failed(format!(
                    "the provider sent a {kind} error mid-stream"
                )));
            }
            _ => {}
        }
    }
    let usage =
        usage.ok_or_else(|| AgentError::Failed("the stream had no message_start".into()))?;
    let content = blocks
        .into_iter()
        .map(|b| match b {
            Streaming::Text(text) => Ok(Block::Text { text }),
            Streaming::ToolUse { name, json } => {
                let input = if json.trim().is_empty() {
                    json!({})
                } else {
                    serde_json::from_str(&json).map_err(|_| {
                        AgentError::Failed(format!("the input of a call of {name:?} is not JSON"))
                    })?
                };
                Ok(Block::ToolUse { name, input })
            }
            Streaming::Other => Ok(Block::Other),
        })
        .collect::<Result<_, AgentError>>()?;
    Ok(Reply { content, usage })
}

#[async_trait]
impl Agent for AnthropicAgent {
    fn remembers(&self) -> bool {
        true
    }

    fn model(&self) -> &str {
        &self.model
    }

    fn provider(&self) -> &str {
        "anthropic"
    }

    async fn health(&self) -> Result<(), AgentError> {
        self.transport.health().await
    }

    async fn respond(&self, request: AgentRequest) -> Result<AgentReply, AgentError> {
        self.respond_streaming(request, &NoDrafts).await
    }

    /// Asks with `stream: true`; the answer's text is told as its `text_delta`s arrive.
    async fn respond_streaming(
        &self, request: AgentRequest, drafts: &dyn Drafts,
    ) -> Result<AgentReply, AgentError> {
        let url = format!("{}/v1/messages", self.base_url);
        let mut body = self.body(&request);
        body["stream"] = json!(true);
        let reply: Reply = match self.transport.post_streaming(&url, &body).await? {
            Streamed::Events(events) => gather(events, drafts).await?,
            Streamed::Json(bytes) => serde_json::from_slice(&bytes)
                .map_err(|e| AgentError::Failed(format!("a reply with a malformed body: {e}")))?,
        };
        let mut text = String::new();
        let mut calls = Vec::new();
        for block in reply.content {
            match block {
                Block::Text { text: t } => text.push_str(&t),
                Block::ToolUse { name, input } if input.is_object() => {
                    calls.push(ToolCall { tool: name, input });
                }
                Block::ToolUse { name, .. } => {
                    return Err(AgentError::Failed(format!(
                        "the input of a call of {name:?} is not a JSON object"
                    )));
                }
                Block::Other => {}
            }
        }
        let usage = reply.usage.tokens();
        let action = render::decide(&request, text, calls)?;
        tracing::debug!(
            model = %self.model,
            input_tokens = usage.input,
            output_tokens = usage.output,
            "anthropic reply"
        );
        Ok(AgentReply {
            action,
            model: self.model.clone(),
            usage,
            cost_micros: self.transport.cost_micros(usage),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use knowledge_core::conversation::{CallRecord, ResultRecord};

    #[test]
    fn consecutive_messages_of_one_role_merge_and_results_carry_their_error_flag() {
        let conversation = vec![
            Message::User("first".into()),
            Message::ToolCalls(vec![CallRecord {
                id: "call_2".into(),
                tool: "search".into(),
                input: json!({"query": "x"}),
            }]),
            Message::ToolResults(vec![ResultRecord {
                id: "call_2".into(),
                tool: "search".into(),
                output: json!({"error": "no result"}),
            }]),
            Message::User("second".into()),
            Message::Assistant(String::new()),
            Message::User("third".into()),
        ];
        assert_eq!(
            messages(conversation),
            vec![
                json!({"role": "user", "content": [{"type": "text", "text": "first"}]}),
                json!({"role": "assistant", "content": [
                    {"type": "tool_use", "id": "call_2", "name": "search", "input": {"query": "x"}}
                ]}),
                json!({"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "call_2",
                     "content": r#"{"error":"no result"}"#, "is_error": true},
                    {"type": "text", "text": "second"},
                    {"type": "text", "text": "third"},
                ]}),
            ]
        );
    }
}
