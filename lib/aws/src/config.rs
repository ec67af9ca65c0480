//! The functions' configuration: names from the environment that `template.yaml` sets, and
//! the keys (cookie signing, credential sealing, the provider's API key) from Secrets Manager,
//! never from the environment or the template.

use aws_sdk_secretsmanager::error::DisplayErrorContext;
use knowledge_core::seal::Sealer;
use knowledge_http::cookie::key_from_hex;

/// Environment variables the template sets on every function.
pub const TABLE_ENV: &str = "TABLE_NAME";
pub const STATE_MACHINE_ENV: &str = "STATE_MACHINE_ARN";
pub const APP_ORIGIN_ENV: &str = "APP_ORIGIN";
pub const SIGNING_KEY_SECRET_ENV: &str = "SIGNING_KEY_SECRET_ARN";
/// The secret holding the key that seals members' integration credentials (hex, 32 bytes).
pub const SEALING_KEY_SECRET_ENV: &str = "SEALING_KEY_SECRET_ARN";
/// The secret holding the agent provider's API key, given to the provider as
/// `OPENAI_API_KEY` or `ANTHROPIC_API_KEY`; the other provider settings are plain variables.
pub const PROVIDER_KEY_SECRET_ENV: &str = "PROVIDER_API_KEY_SECRET_ARN";

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("environment variable {0} is not set")]
    Missing(&'static str),
    /// The secret could not be read; the text names the secret, never its value.
    #[error("signing key secret: {0}")]
    Secret(String),
    #[error("signing key: {0}")]
    SigningKey(String),
    #[error("sealing key: {0}")]
    SealingKey(String),
    /// The provider settings are incomplete or wrong; the text names the variable.
    #[error("agent provider: {0}")]
    Agent(String),
}

/// What a function reads from its environment. The template gives each function only what it
/// uses: every function the table; endpoint functions the origin and the signing key's secret;
/// only the functions that start runs the state machine.
#[derive(Debug, Clone, Default)]
pub struct Env {
    pub table: String,
    pub state_machine_arn: Option<String>,
    pub app_origin: Option<String>,
    /// ARN (or name) of the secret whose string is the hex signing key.
    pub signing_key_secret: Option<String>,
    pub sealing_key_secret: Option<String>,
    pub provider_key_secret: Option<String>,
}

fn optional(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

impl Env {
    pub fn from_env() -> Result<Self, ConfigError> {
        Ok(Self {
            table: optional(TABLE_ENV).ok_or(ConfigError::Missing(TABLE_ENV))?,
            state_machine_arn: optional(STATE_MACHINE_ENV),
            app_origin: optional(APP_ORIGIN_ENV),
            signing_key_secret: optional(SIGNING_KEY_SECRET_ENV),
            sealing_key_secret: optional(SEALING_KEY_SECRET_ENV),
            provider_key_secret: optional(PROVIDER_KEY_SECRET_ENV),
        })
    }
}

/// The string held in the secret `secret_id`. Errors name the secret, never its value.
pub async fn secret_string(
    client: &aws_sdk_secretsmanager::Client,
    secret_id: &str,
) -> Result<String, ConfigError> {
    let out = client
        .get_secret_value()
        .secret_id(secret_id)
        .send()
        .await
        .map_err(|e| ConfigError::Secret(format!("{secret_id}: {}", DisplayErrorContext(e))))?;
    out.secret_string()
        .map(|s| s.trim().to_owned())
        .ok_or_else(|| ConfigError::Secret(format!("{secret_id} holds no string")))
}

/// The signing key held (as hex, at least 32 bytes) in the secret `secret_id`.
pub async fn signing_key(
    client: &aws_sdk_secretsmanager::Client,
    secret_id: &str,
) -> Result<Vec<u8>, ConfigError> {
    let text = secret_string(client, secret_id).await?;
    key_from_hex(&text).map_err(|e| ConfigError::SigningKey(format!("{secret_id}: {e}")))
}

/// The credential-sealing key held (as hex, 32 bytes) in the secret `secret_id`.
pub async fn sealer(
    client: &aws_sdk_secretsmanager::Client,
    secret_id: &str,
) -> Result<Sealer, ConfigError> {
    let text = secret_string(client, secret_id).await?;
    let key = hex::decode(&text)
        .map_err(|_| ConfigError::SealingKey(format!("{secret_id} does not hold hex")))?;
    Sealer::new(&key).map_err(|e| ConfigError::SealingKey(format!("{secret_id}: {e}")))
}
