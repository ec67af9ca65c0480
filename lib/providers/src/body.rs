//! Reading a provider's response: the body within a limit, and what a read or a request that
//! got no reply means as an [`AgentError`]. Both the plain answers (`http`) and the streamed
//! ones (`sse`) read through here.

use knowledge_core::ports::AgentError;
use reqwest::Response;

/// The body, unless it exceeds `limit` bytes. Errors: `Unreachable` when the read times out,
/// `Failed` when the body is too large or breaks off.
pub(crate) async fn read_bounded(
    mut response: Response, limit: usize,
) -> Result<Vec<u8>, AgentError> {
    let too_large = || AgentError::Failed(format!("the response exceeds {limit} bytes"));
    if response.content_length().is_some_and(|n| n > limit as u64) {
        return Err(too_large());
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(read_failed)? {
        if body.len() + chunk.len() > limit {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// A body that could not be read to its end: `Unreachable` when it timed out, `Failed` when
/// the connection broke off.
pub(crate) fn read_failed(e: reqwest::Error) -> AgentError {
    if e.is_timeout() {
        unreachable(e)
    } else {
        AgentError::Failed(format!("reading the response: {}", chain(&e)))
    }
}

/// A request that got no reply: the connection failed, broke off, or timed out.
pub(crate) fn unreachable(e: reqwest::Error) -> AgentError {
    if e.is_timeout() {
        AgentError::Unreachable(format!("timed out: {}", chain(&e)))
    } else {
        AgentError::Unreachable(chain(&e))
    }
}

/// The error with its sources, which say what actually went wrong (refused, reset, DNS).
pub(crate) fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
