//! The providers' one configuration error, shared by the adapters and the choice of agent.

use knowledge_core::policy::pricing::PriceError;

/// A configuration the service cannot start with. Messages name the variable to fix.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("KNOWLEDGE_AGENT must be builtin, openai or anthropic, not {0:?}")]
    UnknownAgent(String),
    #[error("{var} must be set when KNOWLEDGE_AGENT is {agent}")]
    Missing {
        var: &'static str,
        agent: &'static str,
    },
    #[error("{var}: {problem}")]
    Invalid { var: &'static str, problem: String },
    #[error("KNOWLEDGE_PRICES")]
    Prices(#[from] PriceError),
    /// A base URL given to an adapter's constructor is not an absolute http(s) URL.
    #[error("the provider base URL {0}")]
    BaseUrl(String),
    #[error("the HTTP client could not be built: {0}")]
    Client(String),
}
