//! The Anthropic Messages API format, as the fake answers it and tests read it.

use std::sync::Arc;

use knowledge_core::ports::{Agent, TokenUsage};
use serde_json::{Value, json};

use super::{AgentSetup, Exchange, KEY, MODEL, PRICE, Seen, USAGE, Wire};
use crate::{AnthropicAgent, AnthropicConfig, ApiKey};

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
