//! Streamed answers: a scripted 200 answer cut into the server-sent events its provider streams
//! it in, sent at the fake's pace.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use serde_json::{Value, json};
use tokio::sync::mpsc;

/// `text` in the pieces a model streams: words, each with the spaces after it.
fn pieces(text: &str) -> Vec<String> {
    text.split_inclusive(' ').map(str::to_owned).collect()
}

/// A 200 answer in the wire format of `path`, as the server-sent events a provider streams it
/// in (each `(event, data)`); `None` when it is not a 200 answer of that format, which is then
/// sent as it is.
pub(super) fn events_of(
    path: &str, status: u16, body: &str,
) -> Option<Vec<(Option<&'static str>, String)>> {
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

/// Reports to [`Fake::abort`](super::Fake::abort) when a streamed body is dropped before its
/// last event: the client went away mid-stream.
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
pub(super) fn streaming(
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
