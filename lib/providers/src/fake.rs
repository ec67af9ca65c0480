//! A scripted fake provider for tests (feature `fake`): a real HTTP server on 127.0.0.1 that
//! follows a script of replies and records what it was sent, and a [`Wire`] description of
//! each provider's format ([`OpenAi`], [`Anthropic`]) so that one generic test can run against
//! both adapters.
//!
//! The provider crate's own tests and the local service's end-to-end tests share it. Nothing
//! here is meant for production: it panics on anything unexpected, as a test should.

use std::collections::VecDeque;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use knowledge_core::policy::pricing::Price;
use knowledge_core::ports::{Agent, TokenUsage};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio::time::timeout;

use crate::{AnthropicAgent, AnthropicConfig, ApiKey, HealthPolicy, OpenAiAgent, OpenAiConfig};

/// The bound on every wait for something a test expects to happen.
pub const PATIENCE: Duration = Duration::from_secs(10);
/// The API key the adapters are built with (unless told otherwise) and error bodies echo.
pub const KEY: &str = "sk-test-secret-key";
/// $2 and $10 per million tokens: [`USAGE`] costs 2000 + 2000 micro-dollars, [`COST`].
pub const PRICE: Price = Price {
    input_usd_per_mtok: 2.0,
    output_usd_per_mtok: 10.0,
};
/// The usage every [`Wire::answer`] reports.
pub const USAGE: TokenUsage = TokenUsage {
    input: 1000,
    output: 200,
};
/// [`USAGE`] at [`PRICE`], in micro-dollars.
pub const COST: u64 = 4000;
/// The model the adapters are configured with.
pub const MODEL: &str = "test-model";

/// Waits for `future`, panicking if it takes longer than [`PATIENCE`].
pub async fn bounded<T>(what: &str, future: impl Future<Output = T>) -> T {
    timeout(PATIENCE, future)
        .await
        .unwrap_or_else(|_| panic!("timed out waiting for {what}"))
}

// --- The fake provider -------------------------------------------------------------------

/// What the fake does with the next scripted request.
pub enum Reply {
    Answer {
        status: u16,
        headers: Vec<(&'static str, String)>,
        body: String,
    },
    /// Never answers; reports to [`Fake::abort`] when the server drops the request.
    Hold,
    /// Answers with the inner reply once the sender is used or dropped.
    After(oneshot::Receiver<()>, Box<Reply>),
    /// Answers with the inner reply as it is, even to a request that asked for a stream (a
    /// server that does not stream). Every other 200 answer of the request's format goes as
    /// the events a provider streams it in.
    Whole(Box<Reply>),
}

impl Reply {
    /// `body` as JSON with `status`.
    pub fn json(status: u16, body: Value) -> Self {
        Self::Answer {
            status,
            headers: vec![("content-type", "application/json".into())],
            body: body.to_string(),
        }
    }

    /// `body` as it is, with no content type.
    pub fn raw(status: u16, body: impl Into<String>) -> Self {
        Self::Answer {
            status,
            headers: vec![],
            body: body.into(),
        }
    }

    /// The reply with one more header (an [`Reply::Answer`] only).
    pub fn with_header(mut self, name: &'static str, value: &str) -> Self {
        if let Self::Answer { headers, .. } = &mut self {
            headers.push((name, value.into()));
        }
        self
    }
}

/// A request as the fake received it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: Method,
    pub path: String,
    pub headers: HeaderMap,
    /// The body as JSON, `null` when it is not JSON.
    pub body: Value,
    /// When the fake received it, by the fake's own clock.
    pub at: Instant,
}

/// A reply given to every request for one method and path, outside the script.
struct Standing {
    method: Method,
    path: String,
    status: u16,
    body: Value,
}

struct Shared {
    script: Mutex<VecDeque<Reply>>,
    /// The time between two events of a streamed answer.
    pace: Mutex<Duration>,
    standing: Mutex<Vec<Standing>>,
    seen: Mutex<Vec<Seen>>,
    arrived: mpsc::UnboundedSender<Seen>,
    aborted: mpsc::UnboundedSender<()>,
}

/// The fake provider: every request is recorded, then answered by a standing reply for its
/// method and path if one is set, else by the next reply of the script (a 418 when the script
/// is spent).
pub struct Fake {
    addr: SocketAddr,
    shared: Arc<Shared>,
    arrived: tokio::sync::Mutex<mpsc::UnboundedReceiver<Seen>>,
    aborted: tokio::sync::Mutex<mpsc::UnboundedReceiver<()>>,
}

/// Reports on drop: the server dropped a held request, which it does when the client goes away.
struct DropReport(mpsc::UnboundedSender<()>);

impl Drop for DropReport {
    fn drop(&mut self) {
        let _ = self.0.send(());
    }
}

fn respond(status: u16, headers: Vec<(&'static str, String)>, body: String) -> Response {
    let mut response = (StatusCode::from_u16(status).unwrap(), body).into_response();
    for (name, value) in headers {
        response.headers_mut().insert(name, value.parse().unwrap());
    }
    response
}

async fn serve(
    State(shared): State<Arc<Shared>>, method: Method, uri: Uri, headers: HeaderMap, body: Bytes,
) -> Response {
    let seen = Seen {
        method,
        path: uri.path().to_owned(),
        headers,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
        at: Instant::now(),
    };
    // A request that asked for a stream gets a 200 answer of its format as events.
    let mut stream = (seen.body["stream"] == json!(true)).then(|| seen.path.clone());
    shared.seen.lock().unwrap().push(seen.clone());
    let standing = shared
        .standing
        .lock()
        .unwrap()
        .iter()
        .find(|s| s.method == seen.method && s.path == seen.path)
        .map(|s| Reply::json(s.status, s.body.clone()));
    let next = standing.or_else(|| shared.script.lock().unwrap().pop_front());
    let _ = shared.arrived.send(seen);
    let mut reply = next.unwrap_or_else(|| Reply::raw(418, "unscripted request"));
    loop {
        match reply {
            Reply::Answer {
                status,
                headers,
                body,
            } => {
                if let Some(events) = stream
                    .as_ref()
                    .and_then(|path| events_of(path, status, &body))
                {
                    let pace = *shared.pace.lock().unwrap();
                    return streaming(events, pace, shared.aborted.clone());
                }
                return respond(status, headers, body);
            }
            Reply::Hold => {
                let _report = DropReport(shared.aborted.clone());
                std::future::pending::<()>().await;
            }
            Reply::After(gate, then) => {
                let _ = gate.await;
                reply = *then;
            }
            Reply::Whole(inner) => {
                stream = None;
                reply = *inner;
            }
        }
    }
}

/// `text` in the pieces a model streams: words, each with the spaces after it.
fn pieces(text: &str) -> Vec<String> {
    text.split_inclusive(' ').map(str::to_owned).collect()
}

/// A 200 answer in the wire format of `path`, as the server-sent events a provider streams it
/// in (each `(event, data)`); `None` when it is not a 200 answer of that format, which is then
/// sent as it is.
fn events_of(path: &str, status: u16, body: &str) -> Option<Vec<(Option<&'static str>, String)>> {
    if status != 200 {
        return None;
    }
    let body: Value = serde_json::from_str(body).ok()?;
    if path.ends_with("/chat/completions") {
        let message = body["choices"][0].get("message")?;
        let delta = |d: Value| json!({"choices": [{"index": 0, "delta": d}]}).to_string();
        let mut events = vec![];
        for piece in pieces(message["content"].as_str().unwrap_or_default()) {
            events.push((None, delta(json!({"content": piece}))));
        }
        let calls = message["tool_calls"].as_array().into_iter().flatten();
        for (index, call) in calls.enumerate() {
            let arguments = call["function"]["arguments"].as_str()?;
            let (first, rest) = arguments.split_at(arguments.len() / 2);
            events.push((
                None,
                delta(
                    json!({"tool_calls": [{"index": index, "id": call["id"], "type": "function",
                "function": {"name": call["function"]["name"], "arguments": first}}]}),
                ),
            ));
            events.push((
                None,
                delta(json!({"tool_calls": [{"index": index, "function": {"arguments": rest}}]})),
            ));
        }
        let finish = body["choices"][0]["finish_reason"].clone();
        events.push((
            None,
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}).to_string(),
        ));
        if !body["usage"].is_null() {
            events.push((
                None,
                json!({"choices": [], "usage": body["usage"]}).to_string(),
            ));
        }
        events.push((None, "[DONE]".into()));
        return Some(events);
    }
    if path.ends_with("/v1/messages") {
        let mut start = body.clone();
        start["content"] = json!([]);
        start["usage"]["output_tokens"] = json!(1);
        let mut events = vec![(
            Some("message_start"),
            json!({"type": "message_start", "message": start}).to_string(),
        )];
        for (index, block) in body["content"].as_array()?.iter().enumerate() {
            let event = |name: &'static str, data: Value| (Some(name), data.to_string());
            match block["type"].as_str()? {
                "text" => {
                    events.push(event(
                        "content_block_start",
                        json!({"type": "content_block_start", "index": index,
                        "content_block": {"type": "text", "text": ""}}),
                    ));
                    for piece in pieces(block["text"].as_str()?) {
                        events.push(event(
                            "content_block_delta",
                            json!({"type": "content_block_delta", "index": index,
                            "delta": {"type": "text_delta", "text": piece}}),
                        ));
                    }
                }
                "tool_use" => {
                    events.push(event("content_block_start", json!({"type": "content_block_start", "index": index,
                        "content_block": {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}})));
                    let input = block["input"].to_string();
                    let (first, rest) = input.split_at(input.len() / 2);
                    for partial in [first, rest] {
                        events.push(event(
                            "content_block_delta",
                            json!({"type": "content_block_delta", "index": index,
                            "delta": {"type": "input_json_delta", "partial_json": partial}}),
                        ));
                    }
                }
                _ => {}
            }
            events.push(event(
                "content_block_stop",
                json!({"type": "content_block_stop", "index": index}),
            ));
        }
        events.push((Some("message_delta"), json!({"type": "message_delta",
            "delta": {"stop_reason": body["stop_reason"]}, "usage": {"output_tokens": body["usage"]["output_tokens"]}}).to_string()));
        events.push((
            Some("message_stop"),
            json!({"type": "message_stop"}).to_string(),
        ));
        return Some(events);
    }
    None
}

/// Reports to [`Fake::abort`] when a streamed body is dropped before its last event: the
/// client went away mid-stream.
struct Unfinished(Option<mpsc::UnboundedSender<()>>);

impl Drop for Unfinished {
    fn drop(&mut self) {
        if let Some(report) = self.0.take() {
            let _ = report.send(());
        }
    }
}

/// `events` as a `text/event-stream` body, one every `pace` (the first at once); dropped
/// before its last event, it reports to `aborted`.
fn streaming(
    events: Vec<(Option<&'static str>, String)>, pace: Duration, aborted: mpsc::UnboundedSender<()>,
) -> Response {
    let last = events.len().saturating_sub(1);
    let unfinished = Arc::new(Mutex::new(Unfinished(Some(aborted))));
    let frames = events.into_iter().enumerate().map(|(i, (name, data))| {
        let frame = match name {
            Some(name) => format!("event: {name}\ndata: {data}\n\n"),
            None => format!("data: {data}\n\n"),
        };
        (i, frame)
    });
    let body = futures_util::stream::iter(frames).then(move |(i, frame)| {
        let unfinished = unfinished.clone();
        async move {
            if i > 0 && !pace.is_zero() {
                tokio::time::sleep(pace).await;
            }
            if i == last {
                unfinished.lock().unwrap().0 = None;
            }
            Ok::<_, std::convert::Infallible>(Bytes::from(frame))
        }
    });
    let mut response = axum::body::Body::from_stream(body).into_response();
    response
        .headers_mut()
        .insert("content-type", "text/event-stream".parse().unwrap());
    response
}

impl Fake {
    /// Streamed answers send one event every `pace` (none between them by default): for
    /// tests of what is seen while an answer is being written.
    pub fn pace(&self, pace: Duration) -> &Self {
        *self.shared.pace.lock().unwrap() = pace;
        self
    }

    /// A fake listening on an ephemeral port of 127.0.0.1, with an empty script.
    pub async fn start() -> Self {
        let (arrived_tx, arrived) = mpsc::unbounded_channel();
        let (aborted_tx, aborted) = mpsc::unbounded_channel();
        let shared = Arc::new(Shared {
            script: Mutex::default(),
            pace: Mutex::default(),
            standing: Mutex::default(),
            seen: Mutex::default(),
            arrived: arrived_tx,
            aborted: aborted_tx,
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let app = Router::new().fallback(serve).with_state(shared.clone());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Self {
            addr,
            shared,
            arrived: tokio::sync::Mutex::new(arrived),
            aborted: tokio::sync::Mutex::new(aborted),
        }
    }

    /// `http://127.0.0.1:<port>`.
    pub fn base(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Appends `reply` to the script.
    pub fn script(&self, reply: Reply) -> &Self {
        self.shared.script.lock().unwrap().push_back(reply);
        self
    }

    /// Answers every `method` request to `path` with `body` as JSON and `status`, leaving the
    /// script alone (for health probes, which a service makes whenever its cache says so).
    pub fn always(&self, method: Method, path: &str, status: u16, body: Value) -> &Self {
        self.shared.standing.lock().unwrap().push(Standing {
            method,
            path: path.into(),
            status,
            body,
        });
        self
    }

    /// Every request received so far, in order of arrival.
    pub fn seen(&self) -> Vec<Seen> {
        self.shared.seen.lock().unwrap().clone()
    }

    /// The requests received so far for `method` and `path`, in order of arrival.
    pub fn seen_at(&self, method: &Method, path: &str) -> Vec<Seen> {
        self.seen()
            .into_iter()
            .filter(|s| s.method == *method && s.path == path)
            .collect()
    }

    /// The last request received. Panics when there was none.
    pub fn last(&self) -> Seen {
        self.seen().pop().expect("the fake received no request")
    }

    /// The next request to arrive that this fake has not yet handed out here, waited for
    /// within [`PATIENCE`].
    pub async fn arrival(&self) -> Seen {
        bounded("a request to arrive", self.arrived.lock().await.recv())
            .await
            .expect("the fake is serving")
    }

    /// Like [`Fake::arrival`], skipping requests for other methods and paths.
    pub async fn arrival_at(&self, method: &Method, path: &str) -> Seen {
        bounded(&format!("a {method} {path} request to arrive"), async {
            let mut arrived = self.arrived.lock().await;
            loop {
                let seen = arrived.recv().await.expect("the fake is serving");
                if seen.method == *method && seen.path == path {
                    return seen;
                }
            }
        })
        .await
    }

    /// Resolves when a held request, or a streamed answer before its last event, has been
    /// dropped by the server, which happens when its client goes away; panics after
    /// [`PATIENCE`].
    pub async fn abort(&self) {
        bounded(
            "the held request to be aborted",
            self.aborted.lock().await.recv(),
        )
        .await;
    }
}

/// A base URL where nothing listens: a port just bound and released.
pub async fn nowhere() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    format!("http://{addr}")
}

// --- The two wire formats ----------------------------------------------------------------

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
    /// The adapter for this format, pointed at `base` (a [`Fake::base`]), for [`MODEL`] at
    /// [`PRICE`].
    fn agent(base: &str, setup: AgentSetup) -> Arc<dyn Agent>;
    fn chat_path() -> &'static str;
    /// Where the health probe goes.
    fn models_path() -> &'static str;
    /// A reply answering `text` having used [`USAGE`].
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

/// The OpenAI-compatible chat completions format.
pub struct OpenAi;

impl Wire for OpenAi {
    fn agent(base: &str, setup: AgentSetup) -> Arc<dyn Agent> {
        let config = OpenAiConfig {
            base_url: format!("{base}/v1"),
            api_key: setup.key.map(|k| ApiKey::new(k).unwrap()),
            timeout: setup.timeout,
            health: setup.health,
            ..OpenAiConfig::new(MODEL, PRICE)
        };
        Arc::new(OpenAiAgent::new(config).unwrap())
    }

    fn chat_path() -> &'static str {
        "/v1/chat/completions"
    }

    fn models_path() -> &'static str {
        "/v1/models"
    }

    fn answer(text: &str) -> Value {
        json!({
            "id": "chatcmpl-1", "object": "chat.completion", "model": MODEL,
            "choices": [{"index": 0, "finish_reason": "stop",
                "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": USAGE.input, "completion_tokens": USAGE.output,
                "total_tokens": USAGE.input + USAGE.output},
        })
    }

    fn tool_call(id: &str, tool: &str, input: Value) -> Value {
        json!({
            "id": "chatcmpl-2", "object": "chat.completion", "model": MODEL,
            "choices": [{"index": 0, "finish_reason": "tool_calls",
                "message": {"role": "assistant", "content": null, "tool_calls": [
                    {"id": id, "type": "function",
                     "function": {"name": tool, "arguments": input.to_string()}}]}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        })
    }

    fn error(kind: &str) -> Value {
        json!({"error": {"message": format!("Incorrect API key provided: {KEY}"),
            "type": kind, "code": "invalid_api_key", "param": null}})
    }

    fn assert_authenticated(seen: &Seen) {
        assert_eq!(seen.headers["authorization"], format!("Bearer {KEY}"));
    }

    fn tool_choice(body: &Value) -> Option<String> {
        body.get("tool_choice")
            .map(|c| c.as_str().unwrap().to_owned())
    }

    fn declared_tools(body: &Value) -> Vec<String> {
        let Some(tools) = body.get("tools") else {
            return vec![];
        };
        tools
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                assert_eq!(t["type"], "function");
                assert!(t["function"]["parameters"].is_object(), "{t}");
                assert!(t["function"]["description"].is_string(), "{t}");
                t["function"]["name"].as_str().unwrap().to_owned()
            })
            .collect()
    }

    fn system_and_question(body: &Value) -> (String, String) {
        let messages = body["messages"].as_array().unwrap();
        assert_eq!(messages[0]["role"], "system");
        let question = messages.iter().rev().find(|m| m["role"] == "user").unwrap();
        (
            messages[0]["content"].as_str().unwrap().to_owned(),
            question["content"].as_str().unwrap().to_owned(),
        )
    }

    fn stream_error() -> String {
        let first = json!({"choices": [{"index": 0, "delta": {"content": "Partly "}}]});
        let error = json!({"error": {"message": "overloaded", "type": "server_error"}});
        format!("data: {first}\n\ndata: {error}\n\n")
    }

    fn exchange(body: &Value) -> Exchange {
        let messages = body["messages"].as_array().unwrap();
        let call = messages
            .iter()
            .find(|m| m.get("tool_calls").is_some())
            .expect("an assistant message with tool calls");
        assert_eq!(call["role"], "assistant");
        let [call] = call["tool_calls"].as_array().unwrap().as_slice() else {
            panic!("one tool call expected: {call}")
        };
        assert_eq!(call["type"], "function");
        let result = messages
            .iter()
            .find(|m| m["role"] == "tool")
            .expect("a tool message");
        Exchange {
            call_id: call["id"].as_str().unwrap().into(),
            tool: call["function"]["name"].as_str().unwrap().into(),
            input: serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap(),
            result_id: result["tool_call_id"].as_str().unwrap().into(),
            output: result["content"].as_str().unwrap().into(),
        }
    }
}

/// The Anthropic Messages API format.
pub struct Anthropic;

impl Anthropic {
    fn message(content: Value, stop_reason: &str, usage: TokenUsage) -> Value {
        // The prompt tokens are spread over the three counters the API reports them in.
        json!({
            "id": "msg_1", "type": "message", "role": "assistant", "model": MODEL,
            "content": content, "stop_reason": stop_reason, "stop_sequence": null,
            "usage": {"input_tokens": usage.input - 30, "cache_creation_input_tokens": 20,
                "cache_read_input_tokens": 10, "output_tokens": usage.output},
        })
    }

    /// The content blocks of type `kind` in the request's messages from `role`.
    pub fn blocks<'a>(body: &'a Value, role: &str, kind: &str) -> Vec<&'a Value> {
        body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == role)
            .flat_map(|m| m["content"].as_array().unwrap())
            .filter(|b| b["type"] == kind)
            .collect()
    }
}

impl Wire for Anthropic {
    fn agent(base: &str, setup: AgentSetup) -> Arc<dyn Agent> {
        let key = ApiKey::new(setup.key.unwrap_or(KEY)).unwrap();
        let config = AnthropicConfig {
            base_url: base.into(),
            timeout: setup.timeout,
            health: setup.health,
            ..AnthropicConfig::new(MODEL, key, PRICE)
        };
        Arc::new(AnthropicAgent::new(config).unwrap())
    }

    fn chat_path() -> &'static str {
        "/v1/messages"
    }

    fn models_path() -> &'static str {
        "/v1/models"
    }

    fn answer(text: &str) -> Value {
        // Two text blocks and a thinking block, which the adapter skips, to show the joining.
        let (head, tail) = text.split_at(text.len() / 2);
        let content = json!([
            {"type": "thinking", "thinking": "…", "signature": "sig"},
            {"type": "text", "text": head},
            {"type": "text", "text": tail},
        ]);
        Self::message(content, "end_turn", USAGE)
    }

    fn tool_call(id: &str, tool: &str, input: Value) -> Value {
        let content = json!([
            {"type": "text", "text": "Let me look that up."},
            {"type": "tool_use", "id": id, "name": tool, "input": input},
        ]);
        Self::message(
            content,
            "tool_use",
            TokenUsage {
                input: 40,
                output: 5,
            },
        )
    }

    fn error(kind: &str) -> Value {
        json!({"type": "error",
            "error": {"type": kind, "message": format!("invalid x-api-key {KEY}")}})
    }

    fn assert_authenticated(seen: &Seen) {
        assert_eq!(seen.headers["x-api-key"], KEY);
        assert_eq!(seen.headers["anthropic-version"], "2023-06-01");
        assert!(seen.headers.get("authorization").is_none());
    }

    fn tool_choice(body: &Value) -> Option<String> {
        body.get("tool_choice")
            .map(|c| c["type"].as_str().unwrap().to_owned())
    }

    fn declared_tools(body: &Value) -> Vec<String> {
        let Some(tools) = body.get("tools") else {
            return vec![];
        };
        tools
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                assert!(t["input_schema"].is_object(), "{t}");
                assert!(t["description"].is_string(), "{t}");
                t["name"].as_str().unwrap().to_owned()
            })
            .collect()
    }

    fn system_and_question(body: &Value) -> (String, String) {
        assert!(body["max_tokens"].as_u64().unwrap() > 0);
        let texts = Self::blocks(body, "user", "text");
        (
            body["system"].as_str().unwrap().to_owned(),
            texts.last().unwrap()["text"].as_str().unwrap().to_owned(),
        )
    }

    fn stream_error() -> String {
        let start = json!({"type": "message_start", "message": {"id": "msg_1", "type": "message",
            "role": "assistant", "content": [], "usage": {"input_tokens": 10, "output_tokens": 1}}});
        let block = json!({"type": "content_block_start", "index": 0,
            "content_block": {"type": "text", "text": ""}});
        let delta = json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "text_delta", "text": "Partly "}});
        let error = json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}});
        format!(
            "event: message_start\ndata: {start}\n\nevent: content_block_start\ndata: {block}\n\n\
             event: content_block_delta\ndata: {delta}\n\nevent: error\ndata: {error}\n\n"
        )
    }

    fn exchange(body: &Value) -> Exchange {
        let [call] = Self::blocks(body, "assistant", "tool_use")[..] else {
            panic!("one tool_use block expected: {body}")
        };
        let [result] = Self::blocks(body, "user", "tool_result")[..] else {
            panic!("one tool_result block expected: {body}")
        };
        assert_eq!(result["is_error"], false);
        Exchange {
            call_id: call["id"].as_str().unwrap().into(),
            tool: call["name"].as_str().unwrap().into(),
            input: call["input"].clone(),
            result_id: result["tool_use_id"].as_str().unwrap().into(),
            output: result["content"].as_str().unwrap().into(),
        }
    }
}

/// Declares the generic tests `$test::<W: Wire>()` of the calling module once per wire format,
/// as `openai::$test` and `anthropic::$test`, so that each behaviour is written once.
#[macro_export]
macro_rules! for_each_provider {
    ($($test:ident),* $(,)?) => {
        mod openai {
            $(#[tokio::test]
            async fn $test() {
                super::$test::<$crate::fake::OpenAi>().await
            })*
        }
        mod anthropic {
            $(#[tokio::test]
            async fn $test() {
                super::$test::<$crate::fake::Anthropic>().await
            })*
        }
    };
}
