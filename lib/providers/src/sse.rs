//! A provider's streamed answer: server-sent events read from the response body, bounded in
//! size like every body read here (the whole stream at most [`MAX_STREAM`] bytes) and in time
//! by the client's request timeout. An OpenAI-compatible server that ignores `stream` and
//! answers one JSON body is served too ([`Streamed::Json`]).

use std::pin::Pin;

use eventsource_stream::{Event, EventStreamError, Eventsource};
use futures_util::{Stream, StreamExt};
use knowledge_core::ports::AgentError;
use reqwest::Response;
use reqwest::header::CONTENT_TYPE;

use crate::body::{read_bounded, read_failed};

/// The most bytes a streamed answer may take, its events' framing included.
pub(crate) const MAX_STREAM: usize = 8 * 1024 * 1024;

/// The events of a streamed answer, in order.
pub(crate) struct Events {
    inner: Pin<Box<dyn Stream<Item = Result<Event, EventStreamError<AgentError>>> + Send>>,
}

/// A 2xx answer to a request that asked for a stream.
pub(crate) enum Streamed {
    Events(Events),
    /// The server answered with one JSON body instead (at most the bytes of a body).
    Json(Vec<u8>),
}

/// The body of `response` (a 2xx), as events when it is an event stream.
pub(crate) async fn streamed(
    response: Response, json_limit: usize,
) -> Result<Streamed, AgentError> {
    let is_stream = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with("text/event-stream"));
    if !is_stream {
        return read_bounded(response, json_limit).await.map(Streamed::Json);
    }
    let chunks =
        futures_util::stream::unfold((response, 0usize), |(mut response, read)| async move {
            let item = match response.chunk().await {
                Ok(None) => return None,
                Ok(Some(chunk)) if read + chunk.len() > MAX_STREAM => Err(AgentError::Failed(
                    format!("the streamed answer exceeds {MAX_STREAM} bytes"),
                )),
                Ok(Some(chunk)) => Ok(chunk),
                Err(e) => Err(read_failed(e)),
            };
            let read = read + item.as_ref().map_or(0, |chunk| chunk.len());
            Some((item, (response, read)))
        });
    // A failed read ends the byte stream after it: the parser then ends too.
    let chunks = chunks.scan(false, |failed, item| {
        let next = (!*failed).then_some(item);
        if matches!(next, Some(Err(_))) {
            *failed = true;
        }
        futures_util::future::ready(next)
    });
    Ok(Streamed::Events(Events {
        inner: Box::pin(chunks.eventsource()),
    }))
}

impl Events {
    /// The next event; `None` when the stream ended. Errors: the read failed (`Unreachable` on
    /// a timeout, `Failed` otherwise), or the bytes are not an event stream (`Failed`).
    pub(crate) async fn next(&mut self) -> Result<Option<Event>, AgentError> {
        match self.inner.next().await {
            None => Ok(None),
            Some(Ok(event)) => Ok(Some(event)),
            Some(Err(EventStreamError::Transport(e))) => Err(e),
            Some(Err(EventStreamError::Utf8(_))) => {
                Err(AgentError::Failed("the stream is not UTF-8".into()))
            }
            Some(Err(EventStreamError::Parser(e))) => Err(AgentError::Failed(format!(
                "the stream is not server-sent events: {e}"
            ))),
        }
    }
}
