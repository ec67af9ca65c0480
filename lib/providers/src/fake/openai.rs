//! The OpenAI-compatible chat completions format, as the fake answers it and tests read it.

use std::sync::Arc;

use knowledge_core::ports::Agent;
use serde_json::{Value, json};

use super::{AgentSetup, Exchange, KEY, MODEL, PRICE, Seen, USAGE, Wire};
use crate::{ApiKey, OpenAiAgent, OpenAiConfig};

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
