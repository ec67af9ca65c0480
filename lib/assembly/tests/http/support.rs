//! Test harness: the assembled application in process, answered through its router (tower's
//! `oneshot`, no socket), over the transient store (the default), SQLite or DynamoDB as
//! `KNOWLEDGE_TEST_STORE` picks ([`open_store`]), with the in-process workflow, a clock the
//! tests can move forward and agents whose timing they control. What it shares with
//! `lib/local/tests/api` (settings, cookies, users, waits) is `knowledge_test_support`'s.

use std::sync::Arc;

use async_trait::async_trait;
use knowledge_asl::TracingObserver;
use knowledge_assembly::workflow::{LocalWorkflow, StepTasks};
use knowledge_assembly::{App, DocumentParts};
use knowledge_core::adapters::agent::BuiltinAgent;
use knowledge_core::adapters::integrations::FixedIntegrations;
use knowledge_core::documents::{DocumentLimits, Documents, Workers};
use knowledge_core::ports::{Agent, Integrations, Store, StoredRows, Workflow};
use knowledge_core::seal::Sealer;
use knowledge_core::service::Service;
use knowledge_egress::Egress;
use knowledge_ingest::Ingest;
use knowledge_local::FolderOriginals;
use knowledge_search::{PassageIndex, TantivyIndex};
use knowledge_test_support::stores::{Opened, TestStore};
use knowledge_test_support::{Basis, Harness};
use tower::ServiceExt;

/// Where requests to the application go: it is served at no address, only in process.
pub const BASE: &str = "http://app.test";

/// Most bytes of an answer the harness reads.
const ANSWER_LIMIT: usize = 16 << 20;

pub use knowledge_store_tests::seed_session;
pub use knowledge_test_support::{
    FAST, FailingAgent, GatedAgent, KEY, PricedAgent, Reply, Transport, UnreachableAgent, User,
    WAIT, docs, kinds,
};

/// A store, and what the tests read of it beyond the ports.
pub trait RowStore: Store + StoredRows {}

impl<T: Store + StoredRows + ?Sized> RowStore for T {}

/// The store of the data directory `dir` that `KNOWLEDGE_TEST_STORE` names: `memory` (the
/// default), `sqlite`, or `dynamodb` (on the endpoint in `KNOWLEDGE_TEST_DYNAMODB_ENDPOINT`,
/// moto on loopback in `scripts/test`).
pub async fn open_store(dir: &std::path::Path) -> Arc<dyn RowStore> {
    let chosen = TestStore::from_env(TestStore::Transient, &TestStore::ALL);
    match chosen.open(dir).await {
        Opened::Transient(store) => store,
        Opened::Sqlite(store) => Arc::new(store),
        Opened::Dynamodb(store) => Arc::new(store),
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
    /// A store to use instead of the one [`open_store`] opens (SQLite for a test of several
    /// processes on one file, say).
    pub store: Option<Arc<dyn RowStore>>,
    /// Responses buffered whole, exports bounded to these bytes, as on Lambda.
    pub buffered_export_max: Option<usize>,
    /// How long a call that asks its member waits, when not the default.
    pub approval_wait: Option<std::time::Duration>,
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
            approval_wait: None,
        }
    }
}

/// A service in process and what its tests reach of it (through [`Deref`](std::ops::Deref):
/// the [`Harness`], and through it the client, `api.post(..)`, `api.user`), signed in as the
/// default organisation's admin.
pub struct Api {
    pub harness: Harness,
    pub svc: Svc,
}

impl std::ops::Deref for Api {
    type Target = Harness;

    fn deref(&self) -> &Harness {
        &self.harness
    }
}

/// The parts of the service the tests read.
pub struct Svc {
    pub store: Arc<dyn RowStore>,
    pub workflow: LocalWorkflow,
    /// The documents' workers, which the tests drive ([`Svc::index_all`]) instead of running.
    pub workers: Workers,
    /// The documents' use cases, for what no route does (a folder's sync).
    pub documents: Documents,
    /// The session use cases, for what no route does (the sweep).
    pub service: Service,
}

impl Svc {
    /// Indexes every document queued, one at a time, until none is left.
    pub async fn index_all(&self) {
        while let Some(outcome) = self.workers.index_next().await.unwrap() {
            tracing::debug!(?outcome, "indexed");
        }
    }
}

/// The bounds on documents in the tests: small enough to reach.
pub const DOCUMENT_LIMITS: DocumentLimits = DocumentLimits {
    max_file_bytes: 1 << 20,
    free_bytes: 4 << 20,
    pro_bytes: 4 << 20,
    business_bytes: 4 << 20,
};

/// The documents' parts of a service on `dir`: originals in it, the index in memory.
fn document_parts(dir: &std::path::Path) -> DocumentParts {
    DocumentParts {
        originals: Arc::new(FolderOriginals::in_data_dir(dir)),
        index: Arc::new(TantivyIndex::new(Arc::new(PassageIndex::in_memory()))),
        limits: DOCUMENT_LIMITS,
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
        let store = match setup.store {
            Some(store) => store,
            None => open_store(basis.dir.path()).await,
        };
        let origin = setup.origin.unwrap_or_else(|| BASE.to_owned());
        let defaults = basis.settings(&origin, setup.agent, setup.integrations, setup.egress);
        let settings = knowledge_assembly::Settings {
            buffered_export_max: setup.buffered_export_max,
            documents: Some(document_parts(basis.dir.path())),
            approval_wait: setup.approval_wait.unwrap_or(defaults.approval_wait),
            ..defaults
        };
        let app = App::new(settings, store.clone()).with_stored_integrations();
        let documents = (app.documents().cloned()).expect("the documents' parts are given");
        let workers = documents.workers(Arc::new(Ingest::default()));
        let steps = app.steps();
        let workflow = LocalWorkflow::new(
            Arc::new(StepTasks(steps.clone())),
            Arc::new(TracingObserver),
            FAST,
            steps.clock(),
        )
        .unwrap();
        let engine: Arc<dyn Workflow> = Arc::new(workflow.clone());
        let service = app.service(engine.clone());
        let router = app.router(engine).unwrap();
        let transport = Arc::new(InProcess { router });
        let served = basis.serve(BASE, &origin, transport, store.clone(), workflow.clone());
        let harness = served.await;
        Self {
            harness,
            svc: Svc {
                store,
                workflow,
                workers,
                documents,
                service,
            },
        }
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
