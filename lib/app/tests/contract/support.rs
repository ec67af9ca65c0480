//! Test harness: the assembled application in process, answered through its router (tower's
//! `oneshot`, no socket), over the in-memory store, SQLite or DynamoDB, with the in-process
//! workflow, a clock the tests can move forward and agents whose timing they control.
//! `KNOWLEDGE_CONTRACT_STORE` picks the store ([`STORE_ENV`]).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, LazyLock, Mutex};

use async_trait::async_trait;
use knowledge_app::operator::Operator;
use knowledge_app::workflow::{LocalWorkflow, StepTasks};
use knowledge_app::{App, Settings};
use knowledge_asl::{Options, TracingObserver};
use knowledge_core::adapters::agent::BuiltinAgent;
use knowledge_core::adapters::integrations::FixedIntegrations;
use knowledge_core::domain::Role;
use knowledge_core::ids::{OrgId, UserId};
use knowledge_core::ports::{Agent, Integrations, Store, StoredRows, Workflow};
use knowledge_core::seal::Sealer;
use knowledge_core::sso::SsoChange;
use knowledge_core::testing::{MemoryStore, ShiftedClock};
use knowledge_egress::Egress;
use knowledge_http::cookie::{COOKIE_NAME, CookieSigner};
use knowledge_oauth::{BoundedHttp, HttpAuthorizationServers};
use knowledge_oidc::OpenIdConnect;
use knowledge_sqlite::SqliteStore;
use tower::ServiceExt;

pub const KEY: [u8; 32] = [42; 32];

/// Selects the store: `memory` (the default), `sqlite`, or `dynamodb` (on the endpoint in
/// `KNOWLEDGE_TEST_DYNAMODB_ENDPOINT`, moto on loopback in `scripts/test`).
pub const STORE_ENV: &str = "KNOWLEDGE_CONTRACT_STORE";

/// Where requests to the application go: it is served at no address, only in process.
pub const BASE: &str = "http://app.test";

/// Most bytes of an answer the harness reads.
const ANSWER_LIMIT: usize = 16 << 20;

pub use knowledge_store_tests::seed_session;
pub use knowledge_test_support::{
    Client, FailingAgent, GatedAgent, PricedAgent, Reply, SETTLE, Transport, UnreachableAgent,
    User, WAIT, docs, kinds,
};

/// The in-memory stores by data directory, so that two services "on one data directory" share
/// one, as two local services on one SQLite file do.
static MEMORY: LazyLock<Mutex<HashMap<PathBuf, Arc<MemoryStore>>>> =
    LazyLock::new(Default::default);

/// A store, and what the tests read of it beyond the ports.
pub trait TestStore: Store + StoredRows {}

impl<T: Store + StoredRows + ?Sized> TestStore for T {}

/// The store of the data directory `dir`, as [`STORE_ENV`] selects.
pub async fn open_store(dir: &std::path::Path) -> Arc<dyn TestStore> {
    match std::env::var(STORE_ENV).as_deref() {
        Err(_) | Ok("memory") => {
            let mut stores = MEMORY.lock().unwrap();
            stores.entry(dir.to_owned()).or_default().clone()
        }
        Ok("sqlite") => Arc::new(SqliteStore::open(dir).unwrap()),
        Ok("dynamodb") => Arc::new(knowledge_test_support::stores::dynamo_store(dir).await),
        Ok(other) => panic!("{STORE_ENV}={other}: expected memory, sqlite or dynamodb"),
    }
}

/// Sends requests as a client would: to the application in process when they are addressed to
/// [`BASE`], over the network otherwise (an identity provider), each with the client it was
/// built on (so with its redirect policy).
pub struct InProcess {
    router: axum::Router,
}

#[async_trait]
impl Transport for InProcess {
    async fn execute(&self, req: reqwest::RequestBuilder) -> reqwest::Response {
        let (client, req) = req.build_split();
        let req = req.expect("a well-formed request");
        if !req.url().as_str().starts_with(BASE) {
            return client
                .execute(req)
                .await
                .expect("the request reaches its server");
        }
        let req = http::Request::try_from(req).expect("an HTTP request");
        let (mut parts, body) = req.into_parts();
        // The server sees the path and query, as over a socket, and the host as a header.
        parts.uri = parts
            .uri
            .path_and_query()
            .unwrap()
            .as_str()
            .parse()
            .unwrap();
        parts
            .headers
            .entry(http::header::HOST)
            .or_insert(http::HeaderValue::from_static("app.test"));
        let req = http::Request::from_parts(parts, axum::body::Body::new(body));
        let (method, path) = (req.method().to_string(), req.uri().path().to_owned());
        let answer = self.router.clone().oneshot(req).await.unwrap();
        knowledge_test_support::documented::check(&method, &path, answer.status().as_u16());
        let (parts, body) = answer.into_parts();
        let bytes = axum::body::to_bytes(body, ANSWER_LIMIT).await.unwrap();
        reqwest::Response::from(http::Response::from_parts(parts, bytes))
    }
}

/// Retry and Wait delays of the state machine, scaled down a thousandfold: the tests check how
/// often a step is retried and what follows, not how long the backoff lasts.
pub const FAST: Options = Options { delay_scale: 0.001 };

/// What a test service is built from.
pub struct Setup {
    pub agent: Arc<dyn Agent>,
    /// Integrations every organisation reaches without connecting them; the ones connected in
    /// the store follow them.
    pub integrations: Arc<dyn Integrations>,
    /// Seals the members' credentials of connected integrations.
    pub sealer: Arc<Sealer>,
    /// A data directory that may hold another service's data.
    pub dir: Option<Arc<tempfile::TempDir>>,
    /// The application's origin, when it is not [`BASE`] (an `https` origin behind a proxy,
    /// say).
    pub origin: Option<String>,
    /// Where requests to addresses admins name may go: anywhere, as locally by default.
    pub egress: Egress,
    /// A store to use instead of the one [`STORE_ENV`] selects (SQLite for a test of several
    /// processes on one file, say).
    pub store: Option<Arc<dyn TestStore>>,
    /// Responses buffered whole, exports bounded to these bytes, as on Lambda.
    pub buffered_export_max: Option<usize>,
}

impl Setup {
    pub fn new(agent: Arc<dyn Agent>) -> Self {
        Self {
            agent,
            integrations: Arc::new(FixedIntegrations::new()),
            sealer: Arc::new(Sealer::new(&[9; 32]).unwrap()),
            dir: None,
            origin: None,
            egress: Egress::ANYWHERE,
            store: None,
            buffered_export_max: None,
        }
    }
}

/// A service in process and a client of it (through [`Deref`](std::ops::Deref): `api.post(..)`,
/// `api.user`), signed in as the default organisation's admin.
pub struct Api {
    pub client: Client,
    pub svc: Svc,
    pub clock: Arc<ShiftedClock>,
    pub signer: CookieSigner,
    /// The service's sealing key.
    pub sealer: Arc<Sealer>,
    pub dir: Arc<tempfile::TempDir>,
}

impl std::ops::Deref for Api {
    type Target = Client;

    fn deref(&self) -> &Client {
        &self.client
    }
}

/// The parts of the service the tests read.
pub struct Svc {
    pub store: Arc<dyn TestStore>,
    pub workflow: LocalWorkflow,
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
        let store = match setup.store {
            Some(store) => store,
            None => open_store(dir.path()).await,
        };
        let origin = setup.origin.unwrap_or_else(|| BASE.to_owned());
        let clock = Arc::new(ShiftedClock::default());
        let settings = Settings {
            cookie_signer: Some(Arc::new(CookieSigner::new(&KEY).unwrap())),
            sealer: Some(setup.sealer.clone()),
            agent: Some(setup.agent),
            fixed_integrations: setup.integrations,
            identity_provider: Some(Arc::new(OpenIdConnect::new(setup.egress).unwrap())),
            authorization_servers: Some(Arc::new(HttpAuthorizationServers::new(
                BoundedHttp::new(setup.egress).unwrap(),
            ))),
            egress: setup.egress,
            clock: clock.clone(),
            buffered_export_max: setup.buffered_export_max,
            ..Settings::new(&origin)
        };
        let app = App::new(settings, store.clone()).with_stored_integrations();
        let steps = app.steps();
        let workflow = LocalWorkflow::new(
            Arc::new(StepTasks(steps.clone())),
            Arc::new(TracingObserver),
            FAST,
            steps.clock(),
        )
        .unwrap();
        let engine: Arc<dyn Workflow> = Arc::new(workflow.clone());
        let router = app.router(engine).unwrap();
        let signer = CookieSigner::new(&KEY).unwrap();
        let org = OrgId::parse("org_default").unwrap();
        Operator {
            store: store.clone(),
        }
        .bootstrap()
        .await
        .unwrap();
        let id = UserId::parse("usr_default").unwrap();
        let cookie = format!("{COOKIE_NAME}={}", signer.mint(&id, &org, 3600).unwrap());
        let user = User { id, org, cookie };
        Self {
            client: Client::new(BASE, &origin, user, Arc::new(InProcess { router })),
            svc: Svc { store, workflow },
            clock,
            signer,
            sealer: setup.sealer,
            dir,
        }
    }

    pub fn clock_now(&self) -> knowledge_core::clock::Timestamp {
        knowledge_core::clock::Clock::now(self.clock.as_ref())
    }

    pub fn admin(&self) -> Operator {
        Operator {
            store: self.svc.store.clone(),
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

    pub fn cookie(&self, user: &UserId, org: &OrgId) -> String {
        format!(
            "{COOKIE_NAME}={}",
            self.signer.mint(user, org, 3600).unwrap()
        )
    }

    /// A new member of `org` (created when absent) with its cookie.
    pub async fn new_user(&self, org: &OrgId) -> User {
        if self.svc.store.get_org(org).await.unwrap().is_none() {
            self.admin()
                .create_org(
                    Some(org.clone()),
                    "other",
                    knowledge_core::domain::Plan::Pro,
                )
                .await
                .unwrap();
        }
        let m = self
            .admin()
            .add_member(org, None, Role::Viewer)
            .await
            .unwrap();
        User {
            cookie: self.cookie(&m.user, org),
            id: m.user,
            org: org.clone(),
        }
    }

    /// Waits (bounded by [`SETTLE`]) until no workflow run is in flight.
    pub async fn settle(&self) {
        tokio::time::timeout(SETTLE, self.svc.workflow.idle())
            .await
            .expect("workflow runs finish");
    }
}

/// A request to the admin API (`/api/admin` + `path`) as the app sends it: `user`'s cookie,
/// the application's Origin, a JSON body.
pub async fn admin_as(
    api: &Api, user: &User, method: reqwest::Method, path: &str, body: Option<serde_json::Value>,
) -> Reply {
    let mut req = (api.http)
        .request(method, format!("{}/api/admin{path}", api.base))
        .header("cookie", &user.cookie)
        .header("origin", &api.origin);
    if let Some(body) = body {
        req = req.json(&body);
    }
    api.send(req).await
}

/// [`admin_as`] the default user, an admin of the default organisation.
pub async fn admin(
    api: &Api, method: reqwest::Method, path: &str, body: Option<serde_json::Value>,
) -> Reply {
    admin_as(api, &api.user, method, path, body).await
}
