//! Test harness: the real local service on an ephemeral loopback port, over a fresh data
//! directory on SQLite (the default) or DynamoDB as `KNOWLEDGE_TEST_STORE` picks
//! ([`open_store`]), with a clock the tests can move forward and agents whose timing they
//! control. What it shares with `lib/assembly/tests/http` (settings, cookies, users, waits) is
//! `knowledge_test_support`'s.

use std::sync::Arc;

use knowledge_asl::{Observer, Tasks, TracingObserver};
use knowledge_core::adapters::agent::BuiltinAgent;
use knowledge_core::adapters::integrations::FixedIntegrations;
use knowledge_core::ports::{Agent, Integrations};
use knowledge_core::seal::Sealer;
use knowledge_egress::Egress;
use knowledge_local::{LocalService, LocalStore, LocalWorkflow, ServerLimits, StepTasks};
use knowledge_test_support::stores::{Opened, TestStore};
use knowledge_test_support::{Basis, FAST, Harness};

pub use knowledge_store_tests::mark_deleting;
pub use knowledge_test_support::stores::dynamodb_endpoint;
pub use knowledge_test_support::{GatedAgent, Network, PricedAgent, SETTLE, WAIT, docs, kinds};

/// The store of the data directory `dir` that `KNOWLEDGE_TEST_STORE` names: `sqlite` (the
/// default) or `dynamodb` (on the endpoint in `KNOWLEDGE_TEST_DYNAMODB_ENDPOINT`).
pub async fn open_store(dir: &std::path::Path) -> LocalStore {
    let chosen = TestStore::from_env(TestStore::Sqlite, &[TestStore::Sqlite, TestStore::Dynamodb]);
    match chosen.open(dir).await {
        Opened::Sqlite(store) => LocalStore::Sqlite(store),
        Opened::Dynamodb(store) => LocalStore::Dynamo(store),
        Opened::Transient(_) => unreachable!("the local service has no transient store"),
    }
}

/// Wraps the step handlers of a test service.
pub type WrapTasks = fn(Arc<dyn Tasks>) -> Arc<dyn Tasks>;

/// What a test service is built from.
pub struct Setup {
    pub agent: Arc<dyn Agent>,
    /// Integrations every organisation reaches without connecting them; the ones connected in
    /// the store follow them.
    pub integrations: Arc<dyn Integrations>,
    /// Seals the members' credentials of connected integrations.
    pub sealer: Arc<Sealer>,
    /// Sees every state transition of every run, before the state runs.
    pub observer: Arc<dyn Observer>,
    /// Wraps the step handlers, to deliver steps twice or make them fail.
    pub wrap: WrapTasks,
    /// A data directory that may hold another service's data.
    pub dir: Option<Arc<tempfile::TempDir>>,
    /// The server's bounds on slow clients.
    pub limits: ServerLimits,
    /// The application's origin, when it is not the server's own address (an `https` origin
    /// behind a proxy, say).
    pub origin: Option<String>,
    /// Where requests to addresses admins name may go: anywhere, as locally by default.
    pub egress: Egress,
    /// How often the service sweeps for dead runs while it serves.
    pub sweep_every: std::time::Duration,
    /// Whether it keeps documents (originals and index in its data directory, workers).
    pub documents: bool,
}

impl Setup {
    pub fn new(agent: Arc<dyn Agent>) -> Self {
        Self {
            agent,
            integrations: Arc::new(FixedIntegrations::new()),
            sealer: Arc::new(Sealer::new(&[9; 32]).unwrap()),
            observer: Arc::new(TracingObserver),
            wrap: |tasks| tasks,
            dir: None,
            limits: ServerLimits::default(),
            origin: None,
            egress: Egress::ANYWHERE,
            sweep_every: knowledge_local::SWEEP_EVERY,
            documents: false,
        }
    }
}

/// A service on loopback and what its tests reach of it (through [`Deref`](std::ops::Deref):
/// the [`Harness`], and through it the client, `api.post(..)`, `api.user`), signed in as the
/// default organisation's admin.
pub struct Api {
    pub harness: Harness,
    pub svc: LocalService,
    server: tokio::task::JoinHandle<()>,
}

impl std::ops::Deref for Api {
    type Target = Harness;

    fn deref(&self) -> &Harness {
        &self.harness
    }
}

impl Drop for Api {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl Api {
    pub async fn start() -> Self {
        Self::start_with(Arc::new(BuiltinAgent)).await
    }

    pub async fn start_with(agent: Arc<dyn Agent>) -> Self {
        Self::start_setup(Setup::new(agent)).await
    }

    /// A service over `dir`, which may already hold another service's data.
    pub async fn start_on(dir: Arc<tempfile::TempDir>, agent: Arc<dyn Agent>) -> Self {
        Self::start_setup(Setup {
            dir: Some(dir),
            ..Setup::new(agent)
        })
        .await
    }

    pub async fn start_setup(setup: Setup) -> Self {
        let basis = Basis::new(setup.dir, setup.sealer);
        let store = open_store(basis.dir.path()).await;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let origin = setup.origin.unwrap_or_else(|| base.clone());
        let (observer, wrap, limits) = (setup.observer, setup.wrap, setup.limits);
        let mut settings = basis.settings(&origin, setup.agent, setup.integrations, setup.egress);
        if setup.documents {
            let limits = knowledge_core::documents::DocumentLimits::DEFAULT;
            settings.documents = Some(knowledge_local::documents::parts(
                basis.dir.path(),
                limits,
                None,
            ));
        }
        let svc = LocalService::with_workflow(settings, store.clone(), move |steps| {
            let clock = steps.clock();
            LocalWorkflow::new(wrap(Arc::new(StepTasks(steps))), observer, FAST, clock)
        })
        .unwrap()
        .sweeping_every(setup.sweep_every);
        let server = {
            let svc = svc.clone();
            tokio::spawn(async move { svc.serve(listener, limits, std::future::pending()).await })
        };
        let (transport, workflow) = (Arc::new(Network), svc.workflow.clone());
        let harness = (basis.serve(&base, &origin, transport, store.shared(), workflow)).await;
        Self {
            harness,
            svc,
            server,
        }
    }
}
