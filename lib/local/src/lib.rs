//! The local service: the HTTP router over the embedded SQLite store (or DynamoDB) and the
//! in-process workflow, assembled in one process. The `knowledge` binary and the integration tests both build it here.

pub mod admin;
pub mod asl;
pub mod server;
pub mod store;
pub mod workflow;

use std::path::Path;
use std::sync::Arc;

use axum::Router;
use knowledge_app::{App, AssemblyError, Settings};
use knowledge_core::error::Chain;
use knowledge_core::ports::{BackendError, Workflow};
use knowledge_core::seal::Sealer;
use knowledge_core::service::Service;
use knowledge_core::steps::Steps;
use knowledge_http::cookie::CookieSigner;
use tokio::net::TcpListener;

pub use crate::server::ServerLimits;
pub use crate::store::LocalStore;
pub use crate::workflow::{LocalWorkflow, StepTasks};
pub use knowledge_sqlite::SqliteStore;

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
    /// The key from `from` (a variable or a file) is not usable.
    #[error("the key in {from}")]
    Key {
        from: String,
        #[source]
        source: BackendError,
    },
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    StateMachine(#[from] asl::LoadError),
    #[error(transparent)]
    Core(#[from] knowledge_core::CoreError),
    #[error(transparent)]
    Assembly(#[from] AssemblyError),
}

impl LocalError {
    fn key(from: &str, source: impl Into<BackendError>) -> Self {
        Self::Key {
            from: from.to_owned(),
            source: source.into(),
        }
    }
}

/// The cookie signer of the key from [`SIGNING_KEY_ENV`] when set, else from `signing.key` in
/// the data directory, created (random, mode 0600) on first use.
pub fn cookie_signer(data_dir: &Path) -> Result<CookieSigner, LocalError> {
    let (text, from) = key_text(data_dir, SIGNING_KEY_ENV, SIGNING_KEY_FILE)?;
    CookieSigner::from_hex(&text).map_err(|e| LocalError::key(from, e))
}

/// The sealer of members' integration credentials, with the key from [`SEALING_KEY_ENV`] when
/// set, else from `sealing.key` in the data directory, created (random, mode 0600) on first
/// use. Losing it makes the stored credentials unreadable, not readable by others.
pub fn sealer(data_dir: &Path) -> Result<Sealer, LocalError> {
    let (text, from) = key_text(data_dir, SEALING_KEY_ENV, SEALING_KEY_FILE)?;
    Sealer::from_hex(&text).map_err(|e| LocalError::key(from, e))
}

/// The file in the data directory where `serve` records the origin it serves on, so that the
/// commands that print links and URLs (`signin-link`, `sso show`, `cookie`) follow it.
const SERVED_ORIGIN_FILE: &str = "served-origin";

/// Records `origin` as the one `serve` serves `data_dir` on (replaced whole, never torn).
pub fn record_served_origin(data_dir: &Path, origin: &str) -> std::io::Result<()> {
    std::fs::create_dir_all(data_dir)?;
    let partial = data_dir.join(format!("{SERVED_ORIGIN_FILE}.partial"));
    std::fs::write(&partial, origin)?;
    std::fs::rename(partial, data_dir.join(SERVED_ORIGIN_FILE))
}

/// The origin `serve` last recorded for `data_dir`, if any.
pub fn served_origin(data_dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string(data_dir.join(SERVED_ORIGIN_FILE)).ok()?;
    Some(text.trim().to_owned()).filter(|o| o.starts_with("http"))
}

/// The hex text of a key, with where it came from: the environment variable `env`, else `file`
/// in the data directory, created with a random 32-byte key on first use; concurrent first
/// uses agree on one key.
fn key_text<'a>(
    data_dir: &Path, env: &'a str, file: &'a str,
) -> Result<(String, &'a str), LocalError> {
    if let Ok(value) = std::env::var(env) {
        return Ok((value, env));
    }
    let path = data_dir.join(file);
    match std::fs::read_to_string(&path) {
        Ok(text) => Ok((text, file)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(data_dir)?;
            let mut key = [0u8; 32];
            getrandom::fill(&mut key).map_err(|e| LocalError::key(file, e))?;
            let text = hex::encode(key);
            match write_private(&path, &text) {
                Ok(()) => Ok((text, file)),
                // Another process created it first: use theirs.
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    Ok((std::fs::read_to_string(&path)?, file))
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
    pub service: Service,
    router: Router,
}

impl LocalService {
    /// The local service with the agent state machine run by the local engine.
    pub fn new(settings: Settings, store: LocalStore) -> Result<Self, LocalError> {
        Self::with_workflow(settings, store, |steps| {
            let clock = steps.clock();
            LocalWorkflow::new(
                Arc::new(StepTasks(steps)),
                Arc::new(asl::TracingObserver),
                asl::Options::default(),
                clock,
            )
        })
    }

    /// The local service with the workflow `make` builds over the workflow steps; tests use it
    /// to observe the engine's transitions or to deliver steps twice.
    pub fn with_workflow(
        settings: Settings, store: LocalStore,
        make: impl FnOnce(Steps) -> Result<LocalWorkflow, asl::LoadError>,
    ) -> Result<Self, LocalError> {
        let app = App::new(settings, store.shared()).with_stored_integrations();
        let workflow = make(app.steps())?;
        let engine: Arc<dyn Workflow> = Arc::new(workflow.clone());
        Ok(Self {
            store,
            service: app.service(engine.clone()),
            router: app.router(engine)?,
            workflow,
        })
    }

    /// Finishes the deletes the previous process was cut off in; run before
    /// [`LocalService::resume_runs`], so that no run of a session being deleted is resumed.
    pub async fn finish_deletes(&self) -> Result<usize, LocalError> {
        Ok(self.service.finish_deletes().await?)
    }

    /// Restarts the runs that were in flight when the previous process stopped, each in a new
    /// execution (the claim of the dead one is handed to it).
    pub async fn resume_runs(&self) -> Result<usize, LocalError> {
        let running = self.store.running_sessions().await?;
        for (key, _) in &running {
            if let Err(e) = self.service.resume_run(key).await {
                tracing::error!(error = %Chain(&e), session = %key.session, "could not resume run");
            }
        }
        Ok(running.len())
    }

    /// Serves the API on `listener`, with every client read bounded by `limits` (see
    /// [`server`]), until `shutdown` resolves; then lets in-flight requests finish.
    pub async fn serve(
        &self, listener: TcpListener, limits: ServerLimits,
        shutdown: impl std::future::Future<Output = ()>,
    ) {
        server::serve(listener, self.router.clone(), limits, shutdown).await;
    }
}
