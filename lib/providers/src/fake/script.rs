//! The fake's script and record: the [`Reply`] it gives a request and the [`Seen`] request
//! it keeps.

use std::time::Instant;

use axum::http::{HeaderMap, Method};
use serde_json::Value;
use tokio::sync::oneshot;

/// What the fake does with the next scripted request.
pub enum Reply {
    Answer {
        status: u16,
        headers: Vec<(&'static str, String)>,
        body: String,
    },
    /// Never answers; reports to [`Fake::abort`](super::Fake::abort) when the server drops the
    /// request.
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
