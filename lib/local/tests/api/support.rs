//! Test harness: the real local service on an ephemeral loopback port, over a fresh data
//! directory, with a clock the tests can move forward and agents whose timing they control.

use std::sync::Arc;

use knowledge_app::Settings;
use knowledge_app::operator::Operator;
use knowledge_asl::{Observer, Options, Tasks, TracingObserver};
use knowledge_core::adapters::agent::BuiltinAgent;
use knowledge_core::adapters::integrations::FixedIntegrations;
use knowledge_core::ids::{OrgId, UserId};
use knowledge_core::ports::{Agent, Integrations};
use knowledge_core::seal::Sealer;
use knowledge_core::sso::SsoChange;
use knowledge_core::testing::ShiftedClock;
use knowledge_egress::Egress;
use knowledge_http::cookie::{COOKIE_NAME, CookieSigner};
use knowledge_local::{
    LocalService, LocalStore, LocalWorkflow, ServerLimits, SqliteStore, StepTasks,
};
use knowledge_oidc::OpenIdConnect;

pub const KEY: [u8; 32] = [42; 32];

/// Selects the store every test service runs on: `sqlite` (the default) or `dynamodb`.
pub const STORE_ENV: &str = "KNOWLEDGE_TEST_STORE";
pub use knowledge_store_tests::mark_deleting;
pub use knowledge_test_support::stores::{dynamo_store, dynamodb_endpoint};
pub use knowledge_test_support::{
    Client, GatedAgent, Network, PricedAgent, SETTLE, User, WAIT, docs, kinds,
};

pub async fn open_store(dir: &std::path::Path) -> LocalStore {
    match std::env::var(STORE_ENV).as_deref() {
        Err(_) | Ok("sqlite") => LocalStore::Sqlite(SqliteStore::open(dir).unwrap()),
        Ok("dynamodb") => LocalStore::Dynamo(dynamo_store(dir).await),
        Ok(other) => panic!("{STORE_ENV}={other}: expected sqlite or dynamodb"),
    }
}
/// Retry and Wait delays of the state machine, scaled down a thousandfold: the tests check how
/// often a step is retried and what follows, not how long the backoff lasts.
pub const FAST: Options = Options { delay_scale: 0.001 };

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
        }
    }
}

/// A service on loopback and a client of it (through [`Deref`](std::ops::Deref): `api.post(..)`,
/// `api.user`), signed in as the default organisation's admin.
pub struct Api {
    pub client: Client,
    pub svc: LocalService,
    pub clock: Arc<ShiftedClock>,
    /// The service's sealing key.
    pub sealer: Arc<Sealer>,
    pub dir: Arc<tempfile::TempDir>,
    server: tokio::task::JoinHandle<()>,
}

impl std::ops::Deref for Api {
    type Target = Client;

    fn deref(&self) -> &Client {
        &self.client
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
        let dir = setup
            .dir
            .unwrap_or_else(|| Arc::new(tempfile::tempdir().unwrap()));
        let store = open_store(dir.path()).await;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let origin = setup.origin.unwrap_or_else(|| base.clone());
        let clock = Arc::new(ShiftedClock::default());
        let (observer, wrap, limits) = (setup.observer, setup.wrap, setup.limits);
        let sweep_every = setup.sweep_every;
        let settings = Settings {
            cookie_signer: Some(Arc::new(CookieSigner::new(&KEY).unwrap())),
            sealer: Some(setup.sealer.clone()),
            agent: Some(setup.agent),
            fixed_integrations: setup.integrations,
            identity_provider: Some(Arc::new(OpenIdConnect::new(setup.egress).unwrap())),
            authorization_servers: Some(Arc::new(knowledge_oauth::HttpAuthorizationServers::new(
                knowledge_oauth::BoundedHttp::new(setup.egress).unwrap(),
            ))),
            egress: setup.egress,
            clock: clock.clone(),
            ..Settings::new(&origin)
        };
        let svc = LocalService::with_workflow(settings, store.clone(), move |steps| {
            let clock = steps.clock();
            LocalWorkflow::new(wrap(Arc::new(StepTasks(steps))), observer, FAST, clock)
        })
        .unwrap()
        .sweeping_every(sweep_every);
        let server = {
            let svc = svc.clone();
            tokio::spawn(async move { svc.serve(listener, limits, std::future::pending()).await })
        };
        let signer = CookieSigner::new(&KEY).unwrap();
        let org = OrgId::parse("org_default").unwrap();
        Operator {
            store: store.shared(),
        }
        .bootstrap()
        .await
        .unwrap();
        let id = UserId::parse("usr_default").unwrap();
        let cookie = format!("{COOKIE_NAME}={}", signer.mint(&id, &org, 3600).unwrap());
        let user = User { id, org, cookie };
        Self {
            client: Client::new(&base, &origin, user, Arc::new(Network)),
            svc,
            clock,
            sealer: setup.sealer,
            dir,
            server,
        }
    }

    pub fn clock_now(&self) -> knowledge_core::clock::Timestamp {
        knowledge_core::clock::Clock::now(self.clock.as_ref())
    }

    pub fn admin(&self) -> Operator {
        Operator {
            store: self.svc.store.shared(),
        }
    }

    /// Switches single sign-on on for `org` (or off), with a provider no test reaches: what
    /// SCIM needs.
    pub async fn set_sso(&self, org: &OrgId, on: bool) {
        let settings = knowledge_test_support::sso_no_test_reaches(on);
        (self.admin())
            .configure_sso(org, &SsoChange::Set(settings), self.sealer.clone())
            .await
            .unwrap();
    }

    /// Waits (bounded by [`SETTLE`]) until no workflow run is in flight.
    pub async fn settle(&self) {
        tokio::time::timeout(SETTLE, self.svc.workflow.idle())
            .await
            .expect("workflow runs finish");
    }
}
