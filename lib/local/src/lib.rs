//! The local service: the HTTP router over the embedded SQLite store (or DynamoDB) and the
//! in-process workflow, assembled in one process. The `knowledge` binary and the integration tests both build it here.

pub mod admin;
pub mod asl;
pub mod server;
pub mod sqlite;
pub mod store;
pub mod workflow;

use std::path::Path;
use std::sync::Arc;

use knowledge_core::clock::Clock;
use knowledge_core::ports::{Agent, Integrations, Workflow};
use knowledge_core::seal::Sealer;
use knowledge_core::service::{Deps, Service};
use knowledge_core::steps::Steps;
use knowledge_http::cookie::{CookieSigner, key_from_hex};
use knowledge_http::{AppState, HttpConfig};
use tokio::net::TcpListener;

pub use crate::server::ServerLimits;
pub use crate::sqlite::SqliteStore;
pub use crate::store::LocalStore;
pub use crate::workflow::{LocalWorkflow, StepTasks};

/// Environment variable that supplies the cookie-signing key (hex, at least 32 bytes) instead of
/// the key file in the data directory.
pub const SIGNING_KEY_ENV: &str = "KNOWLEDGE_SIGNING_KEY";
const SIGNING_KEY_FILE: &str = "signing.key";
/// Environment variable that supplies the key sealing members' integration credentials (hex,
/// 32 bytes) instead of the key file in the data directory.
pub const SEALING_KEY_ENV: &str = "KNOWLEDGE_SEALING_KEY";
const SEALING_KEY_FILE: &str = "sealing.key";

/// Errors of assembling or running the local service.
#[derive(Debug, thiserror::Error)]
pub enum LocalError {
    #[error("store: {0}")]
    Store(#[from] knowledge_core::ports::StoreError),
    #[error("key: {0}")]
    Key(String),
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    StateMachine(#[from] asl::LoadError),
    #[error(transparent)]
    Core(#[from] knowledge_core::CoreError),
}

/// The cookie-signing key: from [`SIGNING_KEY_ENV`] when set, else from `signing.key` in the
/// data directory, created (random, mode 0600) on first use.
pub fn signing_key(data_dir: &Path) -> Result<Vec<u8>, LocalError> {
    key(data_dir, SIGNING_KEY_ENV, SIGNING_KEY_FILE)
}

/// The key that seals members' integration credentials: from [`SEALING_KEY_ENV`] when set,
/// else from `sealing.key` in the data directory, created (random, mode 0600) on first use.
/// Losing it makes the stored credentials unreadable, not readable by others.
pub fn sealer(data_dir: &Path) -> Result<Sealer, LocalError> {
    let key = key(data_dir, SEALING_KEY_ENV, SEALING_KEY_FILE)?;
    Sealer::new(&key).map_err(|e| LocalError::Key(format!("{SEALING_KEY_FILE}: {e}")))
}

/// A 32-byte key from the environment variable `env` (hex), else from `file` in the data
/// directory, created on first use; concurrent first uses agree on one key.
fn key(data_dir: &Path, env: &str, file: &str) -> Result<Vec<u8>, LocalError> {
    let decode = |hex_text: &str, from: &str| {
        key_from_hex(hex_text).map_err(|e| LocalError::Key(format!("{from}: {e}")))
    };
    if let Ok(value) = std::env::var(env) {
        return decode(&value, env);
    }
    let path = data_dir.join(file);
    match std::fs::read_to_string(&path) {
        Ok(text) => decode(&text, file),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(data_dir)?;
            let mut key = [0u8; 32];
            getrandom::fill(&mut key).map_err(|e| LocalError::Key(e.to_string()))?;
            match write_private(&path, &hex::encode(key)) {
                Ok(()) => Ok(key.to_vec()),
                // Another process created it first: use theirs.
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    decode(&std::fs::read_to_string(&path)?, file)
                }
                Err(e) => Err(e.into()),
            }
        }
        Err(e) => Err(e.into()),
    }
}

/// Publishes `text` at `path`, readable by its owner only, atomically: it is written and synced
/// under a temporary name, then hard-linked into place, which fails if `path` exists. A reader
/// never sees a partial file, and a crash leaves no empty one.
fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let written = options.open(&tmp).and_then(|mut f| {
        f.write_all(text.as_bytes())?;
        f.sync_all()
    });
    let published = written.and_then(|()| std::fs::hard_link(&tmp, path));
    let _ = std::fs::remove_file(&tmp);
    published
}

/// The parts of a running local service, kept by whoever built it.
#[derive(Clone)]
pub struct LocalService {
    pub store: LocalStore,
    pub workflow: LocalWorkflow,
    pub state: AppState,
}

/// What the local service is built from.
pub struct Parts {
    pub store: LocalStore,
    pub agent: Arc<dyn Agent>,
    pub integrations: Arc<dyn Integrations>,
    pub clock: Arc<dyn Clock>,
    pub signing_key: Vec<u8>,
    pub app_origin: String,
}

impl LocalService {
    /// The local service with the agent state machine run by the local engine.
    pub fn new(parts: Parts) -> Result<Self, LocalError> {
        Self::with_workflow(parts, |steps| {
            LocalWorkflow::new(
                Arc::new(StepTasks(steps)),
                Arc::new(asl::TracingObserver),
                asl::Options::default(),
            )
        })
    }

    /// The local service with the workflow `make` builds over the workflow steps; tests use it
    /// to observe the engine's transitions or to deliver steps twice.
    pub fn with_workflow(
        parts: Parts,
        make: impl FnOnce(Steps) -> Result<LocalWorkflow, asl::LoadError>,
    ) -> Result<Self, LocalError> {
        let store = parts.store.shared();
        let workflow = make(Steps::new(
            store.clone(),
            parts.agent.clone(),
            parts.integrations.clone(),
            parts.clock.clone(),
        ))?;
        let service = Service::new(Deps {
            store,
            workflow: Arc::new(workflow.clone()) as Arc<dyn Workflow>,
            agent: parts.agent,
            integrations: parts.integrations,
            clock: parts.clock,
        });
        let signer =
            CookieSigner::new(&parts.signing_key).map_err(|e| LocalError::Key(e.to_string()))?;
        let config = HttpConfig {
            app_origin: parts.app_origin.trim_end_matches('/').to_owned(),
        };
        let state = AppState::new(service, Arc::new(signer), config);
        Ok(Self {
            store: parts.store,
            workflow,
            state,
        })
    }

    /// Finishes the deletes the previous process was cut off in; run before
    /// [`LocalService::resume_runs`], so that no run of a session being deleted is resumed.
    pub async fn finish_deletes(&self) -> Result<usize, LocalError> {
        Ok(self.state.service.finish_deletes().await?)
    }

    /// Restarts the runs that were in flight when the previous process stopped.
    pub async fn resume_runs(&self) -> Result<usize, LocalError> {
        let running = self.store.running_sessions().await?;
        for (key, run) in &running {
            if let Err(e) = self.workflow.start(key, run).await {
                tracing::error!(error = %e, session = %key.session, "could not resume run");
            }
        }
        Ok(running.len())
    }

    /// Serves the API on `listener`, with every client read bounded by `limits` (see
    /// [`server`]), until `shutdown` resolves; then lets in-flight requests finish.
    pub async fn serve(
        &self,
        listener: TcpListener,
        limits: ServerLimits,
        shutdown: impl std::future::Future<Output = ()>,
    ) {
        let router = knowledge_http::router(self.state.clone());
        server::serve(listener, router, limits, shutdown).await;
    }
}
