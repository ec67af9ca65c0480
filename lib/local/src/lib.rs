//! The local service: the HTTP router over the embedded SQLite store (or DynamoDB) and the
//! in-process workflow, assembled in one process. The `knowledge` binary and the integration tests both build it here.

pub mod admin;
pub mod documents;
pub mod metrics;
pub mod model;
pub mod originals;
pub mod server;
pub mod store;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use knowledge_assembly::{App, AssemblyError, Settings};
use knowledge_core::documents::{Documents, SweptUploads};
use knowledge_core::error::Chain;
use knowledge_core::ports::{BackendError, Workflow};
use knowledge_core::seal::Sealer;
use knowledge_core::service::Service;
use knowledge_core::steps::Steps;
use knowledge_http::cookie::CookieSigner;
use tokio::net::TcpListener;

pub use crate::originals::FolderOriginals;
pub use crate::server::ServerLimits;
pub use crate::store::LocalStore;
pub use knowledge_assembly::workflow::{LocalWorkflow, StepTasks};
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
    #[error("store")]
    Store(#[from] knowledge_core::ports::StoreError),
    /// The key from `from` (a variable or a file) is not usable.
    #[error("the key in {from}")]
    Key {
        from: String,
        #[source]
        source: BackendError,
    },
    #[error("a file of the data directory")]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    StateMachine(#[from] knowledge_asl::LoadError),
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

/// The file in the data directory naming the instance that serves it.
const INSTANCE_FILE: &str = "instance";

/// The instance id of the service over `data_dir`: 16 random hex digits in `<data-dir>/instance`,
/// made on first use. A restarted process is the same instance, and knows the runs whose
/// executions carry its id as its own, and dead; two processes on one table need two data
/// directories.
pub fn instance_id(data_dir: &Path) -> Result<String, LocalError> {
    let path = data_dir.join(INSTANCE_FILE);
    if let Ok(text) = std::fs::read_to_string(&path)
        && let Some(id) = Some(text.trim())
            .filter(|t| !t.is_empty() && t.bytes().all(|b| b.is_ascii_alphanumeric()))
    {
        return Ok(id.to_owned());
    }
    std::fs::create_dir_all(data_dir)?;
    let mut random = [0u8; 8];
    getrandom::fill(&mut random).map_err(|e| LocalError::key(INSTANCE_FILE, e))?;
    let id = hex::encode(random);
    // Concurrent first starts agree on the file's content: the second link fails, and both
    // read what the first wrote.
    match write_private(&path, &id) {
        Ok(()) => Ok(id),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            Ok(std::fs::read_to_string(&path)?.trim().to_owned())
        }
        Err(e) => Err(e.into()),
    }
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

/// How often `serve` looks for runs whose execution died (a process killed mid-turn, an
/// execution that ended without finishing), by default.
pub const SWEEP_EVERY: Duration = Duration::from_secs(60);

/// The parts of a running local service, kept by whoever built it.
#[derive(Clone)]
pub struct LocalService {
    pub store: LocalStore,
    pub workflow: LocalWorkflow,
    pub service: Service,
    router: Router,
    /// How often [`LocalService::serve`] sweeps for dead runs.
    sweep_every: Duration,
    /// The documents' use cases, where it keeps documents.
    pub documents: Option<knowledge_core::documents::Documents>,
    /// The workers that index queued documents while it serves, where it keeps documents.
    pub workers: Option<knowledge_core::documents::Workers>,
}

impl LocalService {
    /// The local service with the agent state machine run by the local engine, its executions
    /// named after `instance` (see [`instance_id`]), so that the next start of the same
    /// instance knows its runs.
    pub fn new(settings: Settings, store: LocalStore, instance: &str) -> Result<Self, LocalError> {
        Self::with_workflow(settings, store, |steps| {
            let clock = steps.clock();
            let engine = LocalWorkflow::new(
                Arc::new(StepTasks(steps)),
                Arc::new(knowledge_asl::TracingObserver),
                knowledge_asl::Options::default(),
                clock,
            )?;
            Ok(engine.for_instance(instance))
        })
    }

    /// The same service sweeping for dead runs every `every` while it serves.
    pub fn sweeping_every(mut self, every: Duration) -> Self {
        self.sweep_every = every;
        self
    }

    /// The same service answering `routes` too (before its own, which they must not overlap):
    /// the metrics' endpoint.
    pub fn serving_also(mut self, routes: Router) -> Self {
        self.router = routes.merge(self.router);
        self
    }

    /// The local service with the workflow `make` builds over the workflow steps; tests use it
    /// to observe the engine's transitions or to deliver steps twice.
    pub fn with_workflow(
        settings: Settings, store: LocalStore,
        make: impl FnOnce(Steps) -> Result<LocalWorkflow, knowledge_asl::LoadError>,
    ) -> Result<Self, LocalError> {
        let app = App::new(settings, store.shared()).with_stored_integrations();
        let workflow = make(app.steps())?;
        let engine: Arc<dyn Workflow> = Arc::new(workflow.clone());
        Ok(Self {
            store,
            service: app.service(engine.clone()),
            router: app.router(engine)?,
            documents: app.documents().cloned(),
            workers: app.documents().map(|d| d.workers(documents::parser())),
            workflow,
            sweep_every: SWEEP_EVERY,
        })
    }

    /// The same, its workers reading files with `parser` (by default in this process, with
    /// the default bounds: `documents::parser`).
    pub fn parsing_with(mut self, parser: Arc<dyn knowledge_core::ports::Parser>) -> Self {
        self.workers = self.documents.as_ref().map(|d| d.workers(parser));
        self
    }

    /// Finishes the deletes the previous process was cut off in; run before
    /// [`LocalService::resume_runs`], so that no run of a session being deleted is resumed.
    pub async fn finish_deletes(&self) -> Result<usize, LocalError> {
        Ok(self.service.finish_deletes().await?)
    }

    /// Restarts the runs that were in flight when the previous process of this instance
    /// stopped, each in a new execution (the claim of the dead one is handed to it), or ends
    /// their turn as failed when it has killed too many executions. On the embedded store every
    /// run was this process's; on DynamoDB, those whose claim names an execution of this
    /// instance (another process may be serving the same table).
    pub async fn resume_runs(&self) -> Result<usize, LocalError> {
        let running = (self.store)
            .own_runs(self.workflow.execution_prefix())
            .await?;
        let mut resumed = 0;
        for key in &running {
            match self.service.resume_run(key).await {
                Ok(true) => resumed += 1,
                Ok(false) => {}
                Err(e) => {
                    tracing::error!(error = %Chain(&e), session = %key.session, "could not resume run");
                }
            }
        }
        Ok(resumed)
    }

    /// Settles what the previous process left of the documents, before the workers start: on
    /// the embedded store, whose only process this is, the leases its killed workers held are
    /// released, so that their documents are indexed at once rather than in five minutes (on
    /// DynamoDB other processes may hold leases, which are left to run out); then the uploads
    /// cut short are swept once ([`Documents::sweep`]). Nothing to do without documents.
    pub async fn recover_documents(&self) -> Result<Recovered, LocalError> {
        let Some(documents) = &self.documents else {
            return Ok(Recovered::default());
        };
        let released = match &self.store {
            LocalStore::Sqlite(_) => documents.release_leases().await?,
            #[cfg(feature = "dynamodb")]
            LocalStore::Dynamo(_) => 0,
        };
        let uploads = documents.sweep(self.service.clock().now()).await?;
        Ok(Recovered { released, uploads })
    }

    /// Serves the API on `listener`, with every client read bounded by `limits` (see
    /// [`server`]), until `shutdown` resolves; then lets in-flight requests finish. Meanwhile
    /// it sweeps for runs whose execution died and for uploads cut short, every
    /// [`LocalService::sweeping_every`].
    pub async fn serve(
        &self, listener: TcpListener, limits: ServerLimits,
        shutdown: impl std::future::Future<Output = ()>,
    ) {
        let (service, documents) = (self.service.clone(), self.documents.clone());
        let sweeper = tokio::spawn(sweep_every(service, documents, self.sweep_every));
        let workers = (self.workers.as_ref())
            .map(|w| documents::spawn(w, documents::WORKERS))
            .unwrap_or_default();
        let exporter = knowledge_core::trace::enabled().then(|| tokio::spawn(export_every()));
        server::serve(listener, self.router.clone(), limits, shutdown).await;
        sweeper.abort();
        workers.iter().for_each(|w| w.abort());
        if let Some(exporter) = exporter {
            exporter.abort();
            knowledge_assembly::traces::flush().await;
        }
    }
}

/// Exports the finished spans every [`knowledge_assembly::traces::schedule_delay`], off the
/// requests' path, for as long as it is not aborted.
async fn export_every() {
    let mut ticks = tokio::time::interval(knowledge_assembly::traces::schedule_delay());
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        knowledge_assembly::traces::flush().await;
    }
}

/// Sweeps for dead runs, and for uploads cut short where it keeps `documents`, every `every`,
/// for as long as it is not aborted; a failed sweep is logged and the next one tries again.
async fn sweep_every(service: Service, documents: Option<Documents>, every: Duration) {
    let mut ticks = tokio::time::interval(every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticks.tick().await; // the first tick is now: the start resumed the runs already
    loop {
        ticks.tick().await;
        if let Err(e) = service.sweep().await {
            tracing::error!(error = %Chain(&e), "the sweep for dead runs failed");
        }
        if let Some(documents) = &documents
            && let Err(e) = documents.sweep(service.clock().now()).await
        {
            tracing::error!(error = %Chain(&e), "the sweep for uploads cut short failed");
        }
    }
}

/// What [`LocalService::recover_documents`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Recovered {
    /// Leases of the previous process's workers released.
    pub released: usize,
    /// The uploads cut short it settled.
    pub uploads: SweptUploads,
}
