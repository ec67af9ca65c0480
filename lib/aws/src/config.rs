//! The functions' configuration: names from the environment that `template.yaml` sets, and
//! the keys (cookie signing, credential sealing, the provider's API key) from Secrets Manager,
//! never from the environment or the template.

use knowledge_assembly::AssemblyError;
use knowledge_core::ports::BackendError;
use knowledge_core::seal::Sealer;
use knowledge_egress::Egress;
use knowledge_http::cookie::{CookieSigner, Lifetime};

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
/// The bucket of the organisations' documents: their originals and their indexes.
pub const DOCUMENTS_BUCKET_ENV: &str = "DOCUMENTS_BUCKET";
/// The indexer's queue, for the function that sends it the index's removals.
pub const INDEXER_QUEUE_ENV: &str = "INDEXER_QUEUE_URL";
/// Where a function keeps its copies of the organisations' indexes; its `/tmp` unless set
/// (the tests give each deployment a folder of its own).
pub const INDEX_DIR_ENV: &str = "KNOWLEDGE_INDEX_DIR";
/// The folder of the embedding model's folder (the `EmbeddingModel` layer's `/opt/models`), for
/// the functions that search and index: hybrid search when the model loads, words alone
/// otherwise.
pub const EMBEDDING_MODEL_ENV: &str = "EMBEDDING_MODEL_DIR";
/// Hours a session cookie lasts without a request.
pub const SESSION_IDLE_ENV: &str = "SESSION_IDLE_HOURS";
/// Hours a call that asks its member waits (`ApprovalHours`, 1 to 168; 24 when unset).
pub const APPROVAL_HOURS_ENV: &str = "APPROVAL_HOURS";
/// Days a sign-in lasts at most.
pub const SESSION_MAX_ENV: &str = "SESSION_MAX_DAYS";
/// Whether addresses admins name may be private ones: `false` unless set to `true`.
pub use knowledge_egress::ALLOW_PRIVATE_ENV;

/// Why a cold start cannot build its function. Messages name the variable or the secret at
/// fault, never a secret's value; the cause follows as the error's source.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("environment variable {0} is not set")]
    Missing(&'static str),
    #[error("environment variable {0}: {1}")]
    Invalid(&'static str, String),
    #[error("the secret {secret} could not be read")]
    Secret {
        secret: String,
        #[source]
        source: BackendError,
    },
    #[error("the secret {0} holds no string")]
    NoString(String),
    /// The key a secret holds is not usable (not hex, too short).
    #[error("the key in the secret {secret}")]
    Key {
        secret: String,
        #[source]
        source: BackendError,
    },
    /// The provider settings are incomplete or wrong; the source names the variable.
    #[error("the agent provider's settings")]
    Agent(#[source] knowledge_providers::ConfigError),
    /// The HTTP client of the identity providers could not be built.
    #[error("the identity providers' client")]
    IdentityProvider(#[source] BackendError),
    /// The HTTP client of the integrations' authorization servers could not be built.
    #[error("the authorization servers' client")]
    AuthorizationServers(#[source] BackendError),
    #[error(transparent)]
    Assembly(#[from] AssemblyError),
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
    /// The documents' bucket, where the row uses documents.
    pub documents_bucket: Option<String>,
    /// The indexer's queue, where the row manages documents.
    pub indexer_queue_url: Option<String>,
    /// Where the index copies are kept; `/tmp/knowledge-index` when `None`.
    pub index_root: Option<std::path::PathBuf>,
    /// Where the embedding model is, for the rows that search and index.
    pub embedding_models: Option<std::path::PathBuf>,
    /// The session lifetime from `SESSION_IDLE_HOURS` and `SESSION_MAX_DAYS`; the default
    /// without them.
    pub lifetime: Lifetime,
    /// From `KNOWLEDGE_ALLOW_PRIVATE_DESTINATIONS`: public destinations only unless it is
    /// `true`.
    pub egress: Egress,
    /// How long a call that asks its member waits, from `APPROVAL_HOURS`.
    pub approval_wait: std::time::Duration,
}

/// The variable `name`, unless unset or empty.
pub fn optional(name: &str) -> Option<String> {
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
            documents_bucket: optional(DOCUMENTS_BUCKET_ENV),
            indexer_queue_url: optional(INDEXER_QUEUE_ENV),
            index_root: optional(INDEX_DIR_ENV).map(Into::into),
            embedding_models: optional(EMBEDDING_MODEL_ENV).map(Into::into),
            lifetime: lifetime_from_env()?,
            egress: egress_from_env()?,
            approval_wait: approval_wait_from_env()?,
        })
    }
}

/// The guard of outbound requests: public destinations only, unless the setting says `true`.
fn egress_from_env() -> Result<Egress, ConfigError> {
    match optional(ALLOW_PRIVATE_ENV) {
        None => Ok(Egress::PUBLIC_ONLY),
        Some(v) => Egress::parse(&v)
            .ok_or_else(|| ConfigError::Invalid(ALLOW_PRIVATE_ENV, "true or false".into())),
    }
}

/// How long a call that asks its member waits: `APPROVAL_HOURS`, 1 to 168.
fn approval_wait_from_env() -> Result<std::time::Duration, ConfigError> {
    use knowledge_core::domain::{APPROVAL_HOURS, APPROVAL_HOURS_MAX};
    let hours = match optional(APPROVAL_HOURS_ENV) {
        None => APPROVAL_HOURS,
        Some(v) => v
            .parse()
            .ok()
            .filter(|h| (1..=APPROVAL_HOURS_MAX).contains(h))
            .ok_or_else(|| {
                ConfigError::Invalid(APPROVAL_HOURS_ENV, format!("1 to {APPROVAL_HOURS_MAX}"))
            })?,
    };
    Ok(std::time::Duration::from_secs(3600 * u64::from(hours)))
}

/// The session lifetime the template sets (`SessionIdleHours`, `SessionMaxDays`).
fn lifetime_from_env() -> Result<Lifetime, ConfigError> {
    let default = Lifetime::default();
    let number = |name: &'static str, default: u64| match optional(name) {
        None => Ok(default),
        Some(v) => v
            .parse()
            .map_err(|_| ConfigError::Invalid(name, "a whole number".into())),
    };
    let idle = number(SESSION_IDLE_ENV, default.idle_secs / 3600)?;
    let max = number(SESSION_MAX_ENV, default.absolute_secs / 86_400)?;
    Lifetime::from_hours_and_days(idle, max).map_err(|e| ConfigError::Invalid(SESSION_IDLE_ENV, e))
}

/// The string held in the secret `secret_id`, without surrounding whitespace.
pub async fn secret_string(
    client: &aws_sdk_secretsmanager::Client, secret_id: &str,
) -> Result<String, ConfigError> {
    let out = client
        .get_secret_value()
        .secret_id(secret_id)
        .send()
        .await
        .map_err(|e| ConfigError::Secret {
            secret: secret_id.to_owned(),
            source: e.into(),
        })?;
    out.secret_string()
        .map(|s| s.trim().to_owned())
        .ok_or_else(|| ConfigError::NoString(secret_id.to_owned()))
}

/// What `decode` makes of the key held (as hex) in the secret `secret_id`. Errors name the
/// secret, with the decoding's error as the source.
async fn key_in_secret<K, E: Into<BackendError>>(
    client: &aws_sdk_secretsmanager::Client, secret_id: &str, decode: fn(&str) -> Result<K, E>,
) -> Result<K, ConfigError> {
    let text = secret_string(client, secret_id).await?;
    decode(&text).map_err(|e| ConfigError::Key {
        secret: secret_id.to_owned(),
        source: e.into(),
    })
}

/// The cookie signer of the key held (as hex, at least 32 bytes) in the secret `secret_id`.
pub async fn cookie_signer(
    client: &aws_sdk_secretsmanager::Client, secret_id: &str,
) -> Result<CookieSigner, ConfigError> {
    key_in_secret(client, secret_id, CookieSigner::from_hex).await
}

/// The credential sealer of the key held (as hex, 32 bytes) in the secret `secret_id`.
pub async fn sealer(
    client: &aws_sdk_secretsmanager::Client, secret_id: &str,
) -> Result<Sealer, ConfigError> {
    key_in_secret(client, secret_id, Sealer::from_hex).await
}
