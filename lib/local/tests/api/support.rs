//! Test harness: the real local service on an ephemeral loopback port, over a fresh data
//! directory, with a clock the tests can move forward and agents whose timing they control.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use knowledge_app::Settings;
use knowledge_app::operator::Operator;
use knowledge_asl::{Observer, Options, Tasks, TracingObserver};
use knowledge_core::adapters::agent::BuiltinAgent;
use knowledge_core::adapters::integrations::FixedIntegrations;
use knowledge_core::domain::Role;
use knowledge_core::ids::{OrgId, SessionId, SessionKey, UserId};
use knowledge_core::ports::{
    Agent, AgentAction, AgentError, AgentReply, AgentRequest, Integrations, TokenUsage,
};
use knowledge_core::seal::Sealer;
use knowledge_core::sso::{SsoChange, SsoSettings};
use knowledge_core::testing::ShiftedClock;
use knowledge_egress::Egress;
use knowledge_http::cookie::{COOKIE_NAME, CookieSigner};
use knowledge_local::{
    LocalService, LocalStore, LocalWorkflow, ServerLimits, SqliteStore, StepTasks,
};
use knowledge_oidc::OpenIdConnect;
use reqwest::header::HeaderMap;
use serde_json::{Value, json};
use tokio::sync::{Semaphore, mpsc};

pub const KEY: [u8; 32] = [42; 32];

/// Selects the store every test service runs on: `sqlite` (the default) or `dynamodb`.
pub const STORE_ENV: &str = "KNOWLEDGE_TEST_STORE";
/// The DynamoDB endpoint (moto on loopback, started by `scripts/test`) for the DynamoDB store.
pub const DYNAMODB_ENDPOINT_ENV: &str = "KNOWLEDGE_TEST_DYNAMODB_ENDPOINT";
const TABLE_FILE: &str = "dynamodb-table";

pub fn dynamodb_endpoint() -> String {
    std::env::var(DYNAMODB_ENDPOINT_ENV).unwrap_or_else(|_| {
        panic!(
            "{DYNAMODB_ENDPOINT_ENV} must name a DynamoDB endpoint; scripts/test starts moto on \
             loopback and sets it"
        )
    })
}

/// A DynamoDB store on a table of its own for the data directory `dir`: the table's name is
/// kept in `dir`, so that a service started again on the same directory finds the same data.
pub async fn dynamo_store(dir: &std::path::Path) -> knowledge_dynamo::DynamoStore {
    let path = dir.join(TABLE_FILE);
    let table = match std::fs::read_to_string(&path) {
        Ok(name) => name,
        Err(_) => {
            let name = format!("knowledge-test-{}", uuid::Uuid::new_v4().simple());
            std::fs::write(&path, &name).unwrap();
            name
        }
    };
    let client = knowledge_dynamo::connect(Some(&dynamodb_endpoint()), Default::default()).await;
    knowledge_dynamo::create_table_if_missing(&client, &table)
        .await
        .unwrap();
    knowledge_dynamo::DynamoStore::new(client, table)
}

pub use knowledge_store_tests::{mark_deleting, seed_session};

pub async fn open_store(dir: &std::path::Path) -> LocalStore {
    match std::env::var(STORE_ENV).as_deref() {
        Err(_) | Ok("sqlite") => LocalStore::Sqlite(SqliteStore::open(dir).unwrap()),
        Ok("dynamodb") => LocalStore::Dynamo(dynamo_store(dir).await),
        Ok(other) => panic!("{STORE_ENV}={other}: expected sqlite or dynamodb"),
    }
}
/// Bound on every wait for the service to reach a state; reaching it is signalled, not slept on.
pub const WAIT: Duration = Duration::from_secs(20);
/// The bound on waiting for every run to finish: a test may queue sixty turns, which on the
/// DynamoDB stand-in, on a loaded two-core machine, have taken over 20 s together.
pub const SETTLE: Duration = Duration::from_secs(90);

pub struct Reply {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: Value,
}

impl Reply {
    pub fn code(&self) -> &str {
        self.body["error"]["code"].as_str().unwrap_or("")
    }
    pub fn retry_after(&self) -> Option<u64> {
        self.headers.get("retry-after")?.to_str().ok()?.parse().ok()
    }
}

/// A signed-in user of an organisation.
#[derive(Clone)]
pub struct User {
    pub id: UserId,
    pub org: OrgId,
    pub cookie: String,
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

pub struct Api {
    pub base: String,
    pub origin: String,
    pub http: reqwest::Client,
    pub svc: LocalService,
    pub clock: Arc<ShiftedClock>,
    pub signer: CookieSigner,
    /// The service's sealing key.
    pub sealer: Arc<Sealer>,
    pub user: User,
    pub dir: Arc<tempfile::TempDir>,
    server: tokio::task::JoinHandle<()>,
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
        Self {
            origin,
            base,
            http: reqwest::Client::new(),
            svc,
            clock,
            signer,
            sealer: setup.sealer,
            user: User { id, org, cookie },
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
        let settings = SsoSettings {
            issuer: "https://idp.example.com".into(),
            client_id: "knowledge".into(),
            client_secret: Some("secret".into()),
            enabled: on,
            ..Default::default()
        };
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

    pub fn key(&self, session: &str) -> SessionKey {
        SessionKey {
            user: self.user.id.clone(),
            org: self.user.org.clone(),
            session: SessionId::parse(session).unwrap(),
        }
    }

    pub async fn send(&self, req: reqwest::RequestBuilder) -> Reply {
        let resp = req.send().await.expect("request reaches the server");
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let bytes = resp.bytes().await.unwrap();
        let body = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes).expect("JSON body")
        };
        Reply {
            status,
            headers,
            body,
        }
    }

    /// A POST as a browser of the application sends it: cookie, Origin, JSON.
    pub async fn post_as(&self, user: &User, path: &str, body: Value) -> Reply {
        self.send(
            self.http
                .post(format!("{}{path}", self.base))
                .header("cookie", &user.cookie)
                .header("origin", &self.origin)
                .json(&body),
        )
        .await
    }

    pub async fn post(&self, path: &str, body: Value) -> Reply {
        self.post_as(&self.user, path, body).await
    }

    /// A POST with the given headers and raw body, for request-rule tests.
    pub async fn post_raw(
        &self, path: &str, headers: &[(&str, &str)], body: impl Into<reqwest::Body>,
    ) -> Reply {
        let mut req = self.http.post(format!("{}{path}", self.base)).body(body);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        self.send(req).await
    }

    pub async fn get_as(&self, user: &User, path: &str) -> Reply {
        self.send(
            self.http
                .get(format!("{}{path}", self.base))
                .header("cookie", &user.cookie),
        )
        .await
    }

    pub async fn get(&self, path: &str) -> Reply {
        self.get_as(&self.user, path).await
    }

    pub async fn delete_as(&self, user: &User, session: &str) -> Reply {
        self.send(
            self.http
                .delete(format!(
                    "{}/api/managed-agents/session?sessionId={session}",
                    self.base
                ))
                .header("cookie", &user.cookie)
                .header("origin", &self.origin),
        )
        .await
    }

    /// A DELETE of the session route with cookie and Origin, for request-rule tests.
    pub async fn send_delete(&self, path_and_query: &str) -> Reply {
        self.send(
            self.http
                .delete(format!("{}{path_and_query}", self.base))
                .header("cookie", &self.user.cookie)
                .header("origin", &self.origin),
        )
        .await
    }

    pub async fn create(&self, text: &str) -> String {
        let r = self
            .post("/api/managed-agents/session", json!({ "text": text }))
            .await;
        assert_eq!(r.status, 200, "create failed: {}", r.body);
        r.body["id"].as_str().unwrap().to_owned()
    }

    pub async fn message(&self, session: &str, text: &str) -> Reply {
        self.post(
            "/api/managed-agents/message",
            json!({ "sessionId": session, "text": text }),
        )
        .await
    }

    pub async fn cancel(&self, session: &str) -> Reply {
        self.post(
            "/api/managed-agents/cancel",
            json!({ "sessionId": session }),
        )
        .await
    }

    pub async fn transcript(&self, session: &str) -> Reply {
        self.get(&format!(
            "/api/managed-agents/transcript?sessionId={session}"
        ))
        .await
    }

    /// Every event of the session, following cursors across pages.
    pub async fn all_events(&self, session: &str) -> Vec<Value> {
        let mut events: Vec<Value> = vec![];
        loop {
            let path = match events.last() {
                None => format!("/api/managed-agents/transcript?sessionId={session}"),
                Some(e) => format!(
                    "/api/managed-agents/transcript?sessionId={session}&sinceEventId={}",
                    e["id"].as_str().unwrap()
                ),
            };
            let r = self.get(&path).await;
            assert_eq!(r.status, 200, "{}", r.body);
            events.extend(r.body["events"].as_array().unwrap().iter().cloned());
            if !r.body["hasMore"].as_bool().unwrap() {
                return events;
            }
        }
    }

    /// Waits (bounded by [`SETTLE`]) until no workflow run is in flight.
    pub async fn settle(&self) {
        tokio::time::timeout(SETTLE, self.svc.workflow.idle())
            .await
            .expect("workflow runs finish");
    }
}

/// A docs folder indexed in memory and connected to the default organisation.
pub fn docs() -> Arc<dyn Integrations> {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("cancel.md"),
        "# Cancelling\n\nPOST the cancel endpoint to stop a running answer.\n\n\
         # Deleting\n\nDELETE the session to remove it for good.\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("limits.txt"),
        "Limits\n\nTen sessions a minute per user.\n",
    )
    .unwrap();
    let index = knowledge_docs::TantivyDocs::open(dir.path()).unwrap();
    Arc::new(
        FixedIntegrations::new().connect(OrgId::parse("org_default").unwrap(), Arc::new(index)),
    )
}

/// The `type` of each event.
pub fn kinds(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| e["type"].as_str().unwrap().to_owned())
        .collect()
}

/// An agent that answers like the built-in one, but only when the test lets it: each call
/// announces itself on `entered` and then waits for a permit.
pub struct GatedAgent {
    entered_tx: mpsc::UnboundedSender<String>,
    pub entered: tokio::sync::Mutex<mpsc::UnboundedReceiver<String>>,
    gate: Semaphore,
}

impl GatedAgent {
    pub fn new() -> Arc<Self> {
        let (tx, rx) = mpsc::unbounded_channel();
        Arc::new(Self {
            entered_tx: tx,
            entered: tokio::sync::Mutex::new(rx),
            gate: Semaphore::new(0),
        })
    }

    /// Waits (bounded) for the agent to be asked a question; returns the question.
    pub async fn asked(&self) -> String {
        let mut rx = self.entered.lock().await;
        tokio::time::timeout(WAIT, rx.recv())
            .await
            .expect("the agent is asked")
            .unwrap()
    }

    /// Lets `n` calls answer.
    pub fn release(&self, n: usize) {
        self.gate.add_permits(n);
    }
}

#[async_trait]
impl Agent for GatedAgent {
    async fn health(&self) -> Result<(), AgentError> {
        Ok(())
    }

    async fn respond(&self, request: AgentRequest) -> Result<AgentReply, AgentError> {
        let question = request.question().unwrap_or("").to_owned();
        let _ = self.entered_tx.send(question.clone());
        self.gate.acquire().await.expect("gate open").forget();
        Ok(AgentReply {
            action: AgentAction::Answer(format!("answer to: {question}")),
            usage: TokenUsage::default(),
            cost_micros: 0,
        })
    }
}

/// A provider that cannot be reached.
pub struct UnreachableAgent;

#[async_trait]
impl Agent for UnreachableAgent {
    async fn health(&self) -> Result<(), AgentError> {
        Err(AgentError::Unreachable("connection refused".into()))
    }

    async fn respond(&self, _: AgentRequest) -> Result<AgentReply, AgentError> {
        Err(AgentError::Unreachable("connection refused".into()))
    }
}

/// A provider that is reachable but fails every answer.
pub struct FailingAgent;

#[async_trait]
impl Agent for FailingAgent {
    async fn health(&self) -> Result<(), AgentError> {
        Ok(())
    }

    async fn respond(&self, _: AgentRequest) -> Result<AgentReply, AgentError> {
        Err(AgentError::Failed(
            "upstream answered 500 with secret detail".into(),
        ))
    }
}

/// A provider whose every answer costs `micros` millionths of a dollar.
pub struct PricedAgent {
    pub micros: u64,
}

#[async_trait]
impl Agent for PricedAgent {
    async fn health(&self) -> Result<(), AgentError> {
        Ok(())
    }

    async fn respond(&self, _: AgentRequest) -> Result<AgentReply, AgentError> {
        Ok(AgentReply {
            action: AgentAction::Answer("a priced answer".into()),
            usage: TokenUsage::default(),
            cost_micros: self.micros,
        })
    }
}
