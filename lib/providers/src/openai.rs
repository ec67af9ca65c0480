//! The OpenAI-compatible adapter: Chat Completions with tool calling, as OpenAI serves it and
//! as local servers (llama.cpp, vLLM, Ollama) imitate it, streamed (server-sent events) so
//! that the answer's text is told as it is written.

use std::fmt;
use std::time::Duration;

use async_trait::async_trait;
use knowledge_core::conversation::Message;
use knowledge_core::policy::pricing::Price;
use knowledge_core::ports::{
    Agent, AgentError, AgentReply, AgentRequest, Drafts, NoDrafts, TokenUsage, ToolCall, ToolSpec,
};
use reqwest::header::{AUTHORIZATION, HeaderMap};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::error::ConfigError;
use crate::health::HealthPolicy;
use crate::http::{self, ApiKey, Transport};
use crate::render;
use crate::sse::{Events, Streamed};

/// OpenAI's own API; local servers are usually at `http://127.0.0.1:<port>/v1`.
pub const DEFAULT_OPENAI_BASE_URL: &str = "https://api.openai.com/v1";

/// How to reach an OpenAI-compatible server. `Debug` hides the key.
#[derive(Debug, Clone)]
pub struct OpenAiConfig {
    /// Up to and including the version segment: requests go to `{base_url}/chat/completions`.
    pub base_url: String,
    /// Sent as `Authorization: Bearer <key>`; local servers usually need none.
    pub api_key: Option<ApiKey>,
    pub model: String,
    pub price: Price,
    /// Time allowed for one call, connection included.
    pub timeout: Duration,
    pub health: HealthPolicy,
}

impl OpenAiConfig {
    /// OpenAI's API without a key, a 60 s timeout and the default health policy.
    pub fn new(model: impl Into<String>, price: Price) -> Self {
        Self {
            base_url: DEFAULT_OPENAI_BASE_URL.into(),
            api_key: None,
            model: model.into(),
            price,
            timeout: http::DEFAULT_REQUEST_TIMEOUT,
            health: HealthPolicy::default(),
        }
    }
}

/// An [`Agent`] backed by an OpenAI-compatible Chat Completions endpoint.
pub struct OpenAiAgent {
    model: String,
    base_url: String,
    transport: Transport,
}

impl fmt::Debug for OpenAiAgent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiAgent")
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .finish_non_exhaustive()
    }
}

impl OpenAiAgent {
    /// Errors: `BaseUrl` for a base URL that is not absolute http(s), `Client` when the HTTP
    /// client cannot be built.
    pub fn new(config: OpenAiConfig) -> Result<Self, ConfigError> {
        let base_url = http::base_url(&config.base_url).map_err(ConfigError::BaseUrl)?;
        let mut headers = HeaderMap::new();
        if let Some(key) = &config.api_key {
            headers.insert(AUTHORIZATION, key.header("Bearer "));
        }
        let transport = Transport::new(
            headers,
            config.timeout,
            format!("{base_url}/models"),
            config.health,
            config.price,
        )?;
        Ok(Self {
            model: config.model,
            base_url,
            transport,
        })
    }

    fn body(&self, request: &AgentRequest) -> Value {
        let mut messages =
            vec![json!({"role": "system", "content": render::system_prompt(request)})];
        for message in render::conversation(request) {
            match message {
                Message::User(text) => messages.push(json!({"role": "user", "content": text})),
                Message::Assistant(text) => {
                    messages.push(json!({"role": "assistant", "content": text}));
                }
                Message::ToolCalls(calls) => {
                    let calls: Vec<Value> = calls
                        .iter()
                        .map(|c| {
                            json!({
                                "id": c.id,
                                "type": "function",
                                "function": {"name": c.tool, "arguments": c.input.to_string()},
                            })
                        })
                        .collect();
                    messages.push(json!({"role": "assistant", "tool_calls": calls}));
                }
                Message::ToolResults(results) => messages.extend(results.iter().map(|r| {
                    json!({
                        "role": "tool",
                        "tool_call_id": r.id,
                        "content": render::output_text(&r.output),
                    })
                })),
            }
        }
        let mut body = json!({"model": self.model, "messages": messages});
        if !request.tools.is_empty() {
            body["tools"] = request.tools.iter().map(tool).collect();
            body["tool_choice"] = json!(if request.must_answer { "none" } else { "auto" });
        }
        body
    }
}

fn tool(spec: &ToolSpec) -> Value {
    json!({
        "type": "function",
        "function": {
            "name": spec.name,
            "description": spec.description,
            "parameters": spec.input_schema,
        },
    })
}

#[derive(Deserialize)]
struct Completion {
    choices: Vec<Choice>,
    /// Some local servers leave it out; their models are priced at zero anyway.
    usage: Option<Usage>,
}

#[derive(Deserialize)]
struct Choice {
    message: ReplyMessage,
}

#[derive(Deserialize)]
struct ReplyMessage {
    content: Option<String>,
    tool_calls: Option<Vec<ReplyToolCall>>,
}

#[derive(Deserialize)]
struct ReplyToolCall {
    function: ReplyFunction,
}

#[derive(Deserialize)]
struct ReplyFunction {
    name: String,
    /// The input as a JSON string, which must hold an object.
    arguments: String,
}

#[derive(Deserialize)]
struct Usage {
    prompt_tokens: u64,
    completion_tokens: u64,
}

/// The tool calls of a reply. Errors: `Failed` when arguments are not a JSON object (an
/// empty string, which some servers send for a call without input, counts as `{}`).
fn tool_calls(calls: Vec<ReplyToolCall>) -> Result<Vec<ToolCall>, AgentError> {
    calls
        .into_iter()
        .map(|c| {
            let input = if c.function.arguments.trim().is_empty() {
                Value::Object(Map::new())
            } else {
                serde_json::from_str::<Value>(&c.function.arguments)
                    .ok()
                    .filter(Value::is_object)
                    .ok_or_else(|| {
                        AgentError::Failed(format!(
                            "the arguments of a call of {:?} are not a JSON object",
                            c.function.name
                        ))
                    })?
            };
            Ok(ToolCall {
                tool: c.function.name,
                input,
            })
        })
        .collect()
}

/// One piece of a streamed completion (`stream: true`): text and tool-call fragments, and the
/// usage in the last piece (`stream_options.include_usage`).
#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Vec<ChunkChoice>,
    usage: Option<Usage>,
}

#[derive(Deserialize)]
struct ChunkChoice {
    #[serde(default)]
    delta: Delta,
}

#[derive(Deserialize, Default)]
struct Delta {
    content: Option<String>,
    tool_calls: Option<Vec<DeltaCall>>,
}

/// A fragment of the tool call at `index`: its name once, its arguments in pieces.
#[derive(Deserialize)]
struct DeltaCall {
    index: usize,
    function: Option<DeltaFunction>,
}

#[derive(Deserialize)]
struct DeltaFunction {
    name: Option<String>,
    arguments: Option<String>,
}

/// A completion gathered from its stream, telling `drafts` the text as it grows. The stream
/// ends at `[DONE]` (or when the server closes it). Errors: `Failed` for a piece that is not
/// JSON of the format, or an `error` the server sent mid-stream.
async fn gather(mut events: Events, drafts: &dyn Drafts) -> Result<Completion, AgentError> {
    let mut text = String::new();
    let mut calls: Vec<ReplyToolCall> = vec![];
    let mut usage = None;
    while let Some(event) = events.next().await? {
        if event.data.trim() == "[DONE]" {
            break;
        }
        let value: Value = serde_json::from_str(&event.data)
            .map_err(|e| AgentError::Failed(format!("a streamed piece is not JSON: {e}")))?;
        if value.get("error").is_some() {
            return Err(AgentError::Failed(
                "the provider sent an error mid-stream".into(),
            ));
        }
        let chunk: Chunk = serde_json::from_value(value)
            .map_err(|e| AgentError::Failed(format!("a streamed piece is malformed: {e}")))?;
        for choice in chunk.choices {
            if let Some(piece) = choice.delta.content.filter(|p| !p.is_empty()) {
                text.push_str(&piece);
                drafts.written(&text);
            }
            for fragment in choice.delta.tool_calls.unwrap_or_default() {
                if fragment.index >= MAX_STREAMED_CALLS {
                    return Err(AgentError::Failed(
                        "too many tool calls in one reply".into(),
                    ));
                }
                while calls.len() <= fragment.index {
                    calls.push(ReplyToolCall {
                        function: ReplyFunction {
                            name: String::new(),
                            arguments: String::new(),
                        },
                    });
                }
                let call = &mut calls[fragment.index].function;
                if let Some(f) = fragment.function {
                    call.name.push_str(&f.name.unwrap_or_default());
                    call.arguments.push_str(&f.arguments.unwrap_or_default());
                }
            }
        }
        usage = chunk.usage.or(usage);
    }
    Ok(Completion {
        choices: vec![Choice {
            message: ReplyMessage {
                content: Some(text),
                tool_calls: Some(calls),
            },
        }],
        usage,
    })
}

/// Tool calls one streamed reply may hold at most (by their index).
const MAX_STREAMED_CALLS: usize = 64;

#[async_trait]
impl Agent for OpenAiAgent {
    fn remembers(&self) -> bool {
        true
    }

    fn model(&self) -> &str {
        &self.model
    }

    fn provider(&self) -> &str {
        "openai"
    }

    async fn health(&self) -> Result<(), AgentError> {
        self.transport.health().await
    }

    async fn respond(&self, request: AgentRequest) -> Result<AgentReply, AgentError> {
        self.respond_streaming(request, &NoDrafts).await
    }

    /// Asks with `stream: true` (and the usage in the last piece); a server that answers one
    /// JSON body instead is read as such.
    async fn respond_streaming(
        &self, request: AgentRequest, drafts: &dyn Drafts,
    ) -> Result<AgentReply, AgentError> {
        let url = format!("{}/chat/completions", self.base_url);
        let mut body = self.body(&request);
        body["stream"] = json!(true);
        body["stream_options"] = json!({"include_usage": true});
        let completion = match self.transport.post_streaming(&url, &body).await? {
            Streamed::Events(events) => gather(events, drafts).await?,
            Streamed::Json(bytes) => serde_json::from_slice(&bytes)
                .map_err(|e| AgentError::Failed(format!("a reply with a malformed body: {e}")))?,
        };
        let Some(choice) = completion.choices.into_iter().next() else {
            return Err(AgentError::Failed("the reply has no choices".into()));
        };
        let calls = tool_calls(choice.message.tool_calls.unwrap_or_default())?;
        let text = choice.message.content.unwrap_or_default();
        let usage = completion.usage.map_or_else(
            || {
                tracing::warn!(model = %self.model, "the provider reported no token usage");
                TokenUsage::default()
            },
            |u| TokenUsage {
                input: u.prompt_tokens,
                output: u.completion_tokens,
            },
        );
        let action = render::decide(&request, text, calls)?;
        tracing::debug!(
            model = %self.model,
            input_tokens = usage.input,
            output_tokens = usage.output,
            "openai-compatible reply"
        );
        Ok(AgentReply {
            action,
            model: self.model.clone(),
            usage,
            cost_micros: self.transport.cost_micros(usage),
        })
    }
}
