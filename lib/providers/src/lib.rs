//! Agent provider adapters: OpenAI-compatible chat completions and the Anthropic Messages API.
