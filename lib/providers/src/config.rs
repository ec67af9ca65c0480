//! Choosing and configuring the agent from environment variables, read through a lookup
//! function so that callers (and tests) decide where the variables come from.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use knowledge_core::adapters::agent::BuiltinAgent;
use knowledge_core::policy::pricing::PriceTable;
use knowledge_core::ports::Agent;

pub use crate::error::ConfigError;

use crate::anthropic::{
    AnthropicAgent, AnthropicConfig, DEFAULT_ANTHROPIC_BASE_URL, DEFAULT_MAX_TOKENS,
};
use crate::http::{self, ApiKey};
use crate::openai::{DEFAULT_OPENAI_BASE_URL, OpenAiAgent, OpenAiConfig};

/// The agent to run, with a line for the startup log.
pub struct ConfiguredAgent {
    pub agent: Arc<dyn Agent>,
    /// Provider, model and base URL (never the key), such as
    /// `openai-compatible model gpt-4o-mini at https://api.openai.com/v1 (API key set)`.
    pub description: String,
}

impl fmt::Debug for ConfiguredAgent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConfiguredAgent")
            .field("description", &self.description)
            .finish_non_exhaustive()
    }
}

/// The agent the variables describe (blank values count as unset):
///
/// - `KNOWLEDGE_AGENT`: `builtin` (default), `openai` or `anthropic`;
/// - `KNOWLEDGE_MODEL`: the model name, required for `openai` and `anthropic`;
/// - `KNOWLEDGE_PRICES`: the JSON price table ([`PriceTable::parse`]), required for `openai`
///   and `anthropic`, and it must price the model;
/// - `KNOWLEDGE_AGENT_TIMEOUT_SECS`: time allowed for one provider call (default 60, at most
///   [`MAX_CALL_TIMEOUT_SECS`]);
/// - `OPENAI_BASE_URL` (default `https://api.openai.com/v1`), `OPENAI_API_KEY` (optional);
/// - `ANTHROPIC_API_KEY` (required), `ANTHROPIC_BASE_URL` (default
///   `https://api.anthropic.com`), `KNOWLEDGE_MAX_TOKENS` (default 4096).
///
/// Variables of the providers not chosen are ignored. Errors: [`ConfigError`], naming the
/// variable at fault.
pub fn agent_from_env(
    var: impl Fn(&str) -> Option<String>,
) -> Result<ConfiguredAgent, ConfigError> {
    let var = |name: &str| {
        var(name)
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    };
    let kind = var("KNOWLEDGE_AGENT").unwrap_or_else(|| "builtin".into());
    let agent: &'static str = match kind.to_ascii_lowercase().as_str() {
        "builtin" => {
            return Ok(ConfiguredAgent {
                agent: Arc::new(BuiltinAgent),
                description: "built-in agent (offline, no LLM)".into(),
            });
        }
        "openai" => "openai",
        "anthropic" => "anthropic",
        _ => return Err(ConfigError::UnknownAgent(kind)),
    };
    let required = |name: &'static str| var(name).ok_or(ConfigError::Missing { var: name, agent });
    let model = required("KNOWLEDGE_MODEL")?;
    let price = PriceTable::parse(&required("KNOWLEDGE_PRICES")?)?.price(&model)?;
    let timeout_secs = positive(
        "KNOWLEDGE_AGENT_TIMEOUT_SECS",
        var("KNOWLEDGE_AGENT_TIMEOUT_SECS"),
        http::DEFAULT_REQUEST_TIMEOUT.as_secs(),
    )?;
    if timeout_secs > MAX_CALL_TIMEOUT_SECS {
        return Err(ConfigError::Invalid {
            var: "KNOWLEDGE_AGENT_TIMEOUT_SECS",
            problem: format!("{timeout_secs} is over the {MAX_CALL_TIMEOUT_SECS} s a step allows"),
        });
    }
    let timeout = Duration::from_secs(timeout_secs);
    let base_url = |name: &'static str, default: &str| {
        http::base_url(&var(name).unwrap_or_else(|| default.into()))
            .map_err(|problem| ConfigError::Invalid { var: name, problem })
    };
    let key = |name: &'static str, value: String| {
        ApiKey::new(value).map_err(|e| ConfigError::Invalid {
            var: name,
            problem: e.to_string(),
        })
    };

    if agent == "openai" {
        let base_url = base_url("OPENAI_BASE_URL", DEFAULT_OPENAI_BASE_URL)?;
        let api_key = var("OPENAI_API_KEY")
            .map(|k| key("OPENAI_API_KEY", k))
            .transpose()?;
        let description = format!(
            "openai-compatible model {model} at {base_url} ({})",
            if api_key.is_some() {
                "API key set"
            } else {
                "no API key"
            }
        );
        let config = OpenAiConfig {
            base_url,
            api_key,
            timeout,
            ..OpenAiConfig::new(model, price)
        };
        Ok(ConfiguredAgent {
            agent: Arc::new(OpenAiAgent::new(config)?),
            description,
        })
    } else {
        let api_key = key("ANTHROPIC_API_KEY", required("ANTHROPIC_API_KEY")?)?;
        let base_url = base_url("ANTHROPIC_BASE_URL", DEFAULT_ANTHROPIC_BASE_URL)?;
        let max_tokens = positive(
            "KNOWLEDGE_MAX_TOKENS",
            var("KNOWLEDGE_MAX_TOKENS"),
            DEFAULT_MAX_TOKENS.into(),
        )?;
        let max_tokens = u32::try_from(max_tokens).map_err(|_| ConfigError::Invalid {
            var: "KNOWLEDGE_MAX_TOKENS",
            problem: format!("{max_tokens} is too large"),
        })?;
        let description = format!("anthropic model {model} at {base_url}");
        let config = AnthropicConfig {
            base_url,
            max_tokens,
            timeout,
            ..AnthropicConfig::new(model, api_key, price)
        };
        Ok(ConfiguredAgent {
            agent: Arc::new(AnthropicAgent::new(config)?),
            description,
        })
    }
}

/// `value` as a whole number above zero, or `default` when unset.
/// The longest provider call allowed: with the step's rate-limit waits
/// ([`knowledge_core::steps::RATE_LIMIT_WAIT_BUDGET`]) it stays under the state machine's
/// 120 s `CallAgent` timeout, so a timed-out step never leaves a call in flight beside its retry.
pub const MAX_CALL_TIMEOUT_SECS: u64 = 85;

fn positive(name: &'static str, value: Option<String>, default: u64) -> Result<u64, ConfigError> {
    let Some(value) = value else {
        return Ok(default);
    };
    value
        .parse::<u64>()
        .ok()
        .filter(|n| *n > 0)
        .ok_or_else(|| ConfigError::Invalid {
            var: name,
            problem: format!("{value:?} is not a whole number above zero"),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    const PRICES: &str = r#"{"m": {"inputUsdPerMTok": 1, "outputUsdPerMTok": 2}}"#;

    fn from(pairs: &[(&str, &str)]) -> Result<ConfiguredAgent, ConfigError> {
        let vars: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        agent_from_env(|name| vars.get(name).cloned())
    }

    fn error(pairs: &[(&str, &str)]) -> String {
        knowledge_core::error::Chain(&from(pairs).unwrap_err()).to_string()
    }

    #[test]
    fn the_builtin_agent_is_the_default_and_needs_nothing_else() {
        for pairs in [
            &[][..],
            &[("KNOWLEDGE_AGENT", "")],
            &[("KNOWLEDGE_AGENT", "Builtin")],
        ] {
            let configured = from(pairs).unwrap();
            assert!(configured.description.starts_with("built-in"), "{pairs:?}");
        }
        assert_eq!(
            error(&[("KNOWLEDGE_AGENT", "gpt")]),
            r#"KNOWLEDGE_AGENT must be builtin, openai or anthropic, not "gpt""#
        );
    }

    #[test]
    fn openai_needs_a_model_and_a_price_for_it_but_no_key() {
        let configured = from(&[
            ("KNOWLEDGE_AGENT", "openai"),
            ("KNOWLEDGE_MODEL", "m"),
            ("KNOWLEDGE_PRICES", PRICES),
            ("OPENAI_BASE_URL", "http://127.0.0.1:8080/v1/"),
        ])
        .unwrap();
        assert_eq!(
            configured.description,
            "openai-compatible model m at http://127.0.0.1:8080/v1 (no API key)"
        );
        let configured = from(&[
            ("KNOWLEDGE_AGENT", "openai"),
            ("KNOWLEDGE_MODEL", "m"),
            ("KNOWLEDGE_PRICES", PRICES),
            ("OPENAI_API_KEY", "sk-very-secret"),
        ])
        .unwrap();
        assert_eq!(
            configured.description,
            "openai-compatible model m at https://api.openai.com/v1 (API key set)"
        );
        assert!(!format!("{configured:?}").contains("very-secret"));

        assert_eq!(
            error(&[("KNOWLEDGE_AGENT", "openai"), ("KNOWLEDGE_PRICES", PRICES)]),
            "KNOWLEDGE_MODEL must be set when KNOWLEDGE_AGENT is openai"
        );
        assert_eq!(
            error(&[("KNOWLEDGE_AGENT", "openai"), ("KNOWLEDGE_MODEL", "m")]),
            "KNOWLEDGE_PRICES must be set when KNOWLEDGE_AGENT is openai"
        );
        let unpriced = error(&[
            ("KNOWLEDGE_AGENT", "openai"),
            ("KNOWLEDGE_MODEL", "other"),
            ("KNOWLEDGE_PRICES", PRICES),
        ]);
        assert!(
            unpriced.starts_with(
                r#"KNOWLEDGE_PRICES: the price table has no price for the model "other""#
            ),
            "{unpriced}"
        );
        let syntax = error(&[
            ("KNOWLEDGE_AGENT", "openai"),
            ("KNOWLEDGE_MODEL", "m"),
            ("KNOWLEDGE_PRICES", "{"),
        ]);
        assert!(syntax.starts_with("KNOWLEDGE_PRICES: "), "{syntax}");
    }

    #[test]
    fn anthropic_needs_its_key_and_reads_its_limits() {
        let base = [
            ("KNOWLEDGE_AGENT", "anthropic"),
            ("KNOWLEDGE_MODEL", "m"),
            ("KNOWLEDGE_PRICES", PRICES),
        ];
        assert_eq!(
            error(&base),
            "ANTHROPIC_API_KEY must be set when KNOWLEDGE_AGENT is anthropic"
        );
        let with = |extra: &[(&'static str, &'static str)]| {
            let mut pairs = base.to_vec();
            pairs.push(("ANTHROPIC_API_KEY", "sk-ant-secret"));
            pairs.extend_from_slice(extra);
            pairs
        };
        let configured = from(&with(&[])).unwrap();
        assert_eq!(
            configured.description,
            "anthropic model m at https://api.anthropic.com"
        );
        assert!(!format!("{configured:?}").contains("sk-ant-secret"));
        let configured = from(&with(&[("ANTHROPIC_BASE_URL", "http://127.0.0.1:9/")])).unwrap();
        assert_eq!(
            configured.description,
            "anthropic model m at http://127.0.0.1:9"
        );

        assert_eq!(
            error(&with(&[("KNOWLEDGE_MAX_TOKENS", "0")])),
            r#"KNOWLEDGE_MAX_TOKENS: "0" is not a whole number above zero"#
        );
        assert_eq!(
            error(&with(&[("KNOWLEDGE_MAX_TOKENS", "99999999999")])),
            "KNOWLEDGE_MAX_TOKENS: 99999999999 is too large"
        );
        assert_eq!(
            error(&with(&[("KNOWLEDGE_AGENT_TIMEOUT_SECS", "1.5")])),
            r#"KNOWLEDGE_AGENT_TIMEOUT_SECS: "1.5" is not a whole number above zero"#
        );
        let bad_url = error(&with(&[("ANTHROPIC_BASE_URL", "api.anthropic.com")]));
        assert!(bad_url.starts_with("ANTHROPIC_BASE_URL: "), "{bad_url}");
        let mut spaced = base.to_vec();
        spaced.push(("ANTHROPIC_API_KEY", "sk ant"));
        assert_eq!(
            error(&spaced),
            "ANTHROPIC_API_KEY: the API key is empty or holds characters other than visible ASCII"
        );
    }

    #[test]
    fn adapter_configs_keep_the_key_out_of_debug_output() {
        let key = ApiKey::new("sk-hidden").unwrap();
        let anthropic = AnthropicConfig::new("m", key.clone(), Default::default());
        let openai = OpenAiConfig {
            api_key: Some(key),
            ..OpenAiConfig::new("m", Default::default())
        };
        assert!(!format!("{anthropic:?}{openai:?}").contains("hidden"));
        let agent = OpenAiAgent::new(openai).unwrap();
        assert!(!format!("{agent:?}").contains("hidden"));
    }
}
