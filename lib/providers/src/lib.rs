//! Agent provider adapters: OpenAI-compatible chat completions and the Anthropic Messages API.
//!
//! Both implement the core's [`knowledge_core::ports::Agent`] port with tool calling. The
//! HTTP plumbing they share (one client each, bounded reads, the classification of provider
//! answers into [`knowledge_core::ports::AgentError`]s, the cached health check) lives in
//! `http`, `body` and `health`; [`agent_from_env`] picks and configures one from the
//! environment.

mod anthropic;
mod body;
mod config;
mod error;
#[cfg(feature = "fake")]
pub mod fake;
mod health;
mod http;
mod openai;
mod render;
mod sse;

pub use anthropic::{
    AnthropicAgent, AnthropicConfig, DEFAULT_ANTHROPIC_BASE_URL, DEFAULT_MAX_TOKENS,
};
pub use config::{ConfigError, ConfiguredAgent, MAX_CALL_TIMEOUT_SECS, agent_from_env};
pub use health::HealthPolicy;
pub use http::{ApiKey, InvalidApiKey};
pub use openai::{DEFAULT_OPENAI_BASE_URL, OpenAiAgent, OpenAiConfig};
