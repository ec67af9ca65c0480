//! The core of the two HTTP test harnesses (the application in process,
//! `lib/assembly/tests/http`; the local service on a socket, `lib/local/tests/api`): a test
//! service's settings and cookie key, its store bootstrapped with the default organisation's
//! admin signed in, more users, and the wait for its runs. A harness adds only how it builds,
//! serves and reaches the application.

use std::sync::Arc;

use knowledge_asl::Options;
use knowledge_assembly::Settings;
use knowledge_assembly::operator::Operator;
use knowledge_assembly::workflow::LocalWorkflow;
use knowledge_core::domain::{Plan, Role};
use knowledge_core::ids::{OrgId, UserId};
use knowledge_core::ports::{Agent, Integrations, Store};
use knowledge_core::seal::Sealer;
use knowledge_core::sso::SsoChange;
use knowledge_core::testing::ShiftedClock;
use knowledge_egress::Egress;
use knowledge_http::cookie::{COOKIE_NAME, CookieSigner};
use knowledge_oauth::{BoundedHttp, HttpAuthorizationServers};
use knowledge_oidc::OpenIdConnect;

use crate::client::{Client, SETTLE, Transport, User};

/// The key every test service signs its session cookies with.
pub const KEY: [u8; 32] = [42; 32];

/// Retry and Wait delays of the state machine, scaled down a thousandfold: the tests check how
/// often a step is retried and what follows, not how long the backoff lasts.
pub const FAST: Options = Options { delay_scale: 0.001 };

/// How long a cookie minted here stays valid, in seconds: longer than any test.
const COOKIE_SECS: u64 = 3600;

/// What a test service starts from, before its harness builds and serves it.
pub struct Basis {
    /// Its data directory.
    pub dir: Arc<tempfile::TempDir>,
    /// Its clock, which the tests move forward.
    pub clock: Arc<ShiftedClock>,
    /// Seals the members' credentials of connected integrations.
    pub sealer: Arc<Sealer>,
}

impl Basis {
    /// A service on `dir` (which may hold another service's data), or on a fresh temporary
    /// directory, with a clock at the present.
    pub fn new(dir: Option<Arc<tempfile::TempDir>>, sealer: Arc<Sealer>) -> Self {
        Self {
            dir: dir.unwrap_or_else(|| Arc::new(tempfile::tempdir().unwrap())),
            clock: Arc::new(ShiftedClock::default()),
            sealer,
        }
    }

    /// The settings of the application at `origin`: cookies signed with [`KEY`], credentials
    /// sealed with [`Basis::sealer`], time from [`Basis::clock`], and the OpenID and
    /// authorization-server clients reaching only what `egress` lets through.
    pub fn settings(
        &self, origin: &str, agent: Arc<dyn Agent>, integrations: Arc<dyn Integrations>,
        egress: Egress,
    ) -> Settings {
        Settings {
            cookie_signer: Some(Arc::new(CookieSigner::new(&KEY).unwrap())),
            sealer: Some(self.sealer.clone()),
            agent: Some(agent),
            fixed_integrations: integrations,
            identity_provider: Some(Arc::new(OpenIdConnect::new(egress).unwrap())),
            authorization_servers: Some(Arc::new(HttpAuthorizationServers::new(
                BoundedHttp::new(egress).unwrap(),
            ))),
            egress,
            clock: self.clock.clone(),
            ..Settings::new(origin)
        }
    }

    /// The service, built on this basis over `store` with its runs on `workflow`, as its tests
    /// reach it: at `base` through `transport`, for the application at `origin`. Bootstraps
    /// `store` (the default organisation and its admin) and signs that admin in.
    pub async fn serve(
        self, base: &str, origin: &str, transport: Arc<dyn Transport>, store: Arc<dyn Store>,
        workflow: LocalWorkflow,
    ) -> Harness {
        Operator {
            store: store.clone(),
        }
        .bootstrap()
        .await
        .unwrap();
        let signer = CookieSigner::new(&KEY).unwrap();
        let (id, org) = (
            UserId::parse("usr_default").unwrap(),
            OrgId::parse("org_default").unwrap(),
        );
        let cookie = cookie(&signer, &id, &org);
        let user = User { id, org, cookie };
        Harness {
            client: Client::new(base, origin, user, transport),
            clock: self.clock,
            signer,
            sealer: self.sealer,
            dir: self.dir,
            store,
            workflow,
        }
    }
}

/// A test service as its tests reach it, however it is served: a client signed in as the
/// default organisation's admin (through [`Deref`](std::ops::Deref): `api.post(..)`,
/// `api.user`), its clock, keys and data directory, and its store through the operator's
/// commands.
pub struct Harness {
    pub client: Client,
    pub clock: Arc<ShiftedClock>,
    /// Mints session cookies as the service does ([`KEY`]).
    pub signer: CookieSigner,
    /// The service's sealing key.
    pub sealer: Arc<Sealer>,
    pub dir: Arc<tempfile::TempDir>,
    store: Arc<dyn Store>,
    workflow: LocalWorkflow,
}

impl std::ops::Deref for Harness {
    type Target = Client;

    fn deref(&self) -> &Client {
        &self.client
    }
}

impl Harness {
    pub fn clock_now(&self) -> knowledge_core::clock::Timestamp {
        knowledge_core::clock::Clock::now(self.clock.as_ref())
    }

    /// The operator's commands on the service's store.
    pub fn admin(&self) -> Operator {
        Operator {
            store: self.store.clone(),
        }
    }

    /// Switches single sign-on on for `org` (or off), with a provider no test reaches: what
    /// SCIM needs.
    pub async fn set_sso(&self, org: &OrgId, on: bool) {
        let settings = crate::sso_no_test_reaches(on);
        (self.admin())
            .configure_sso(org, &SsoChange::Set(settings), self.sealer.clone())
            .await
            .unwrap();
    }

    /// The `cookie` header of `user` signed in to `org`, valid for an hour.
    pub fn cookie(&self, user: &UserId, org: &OrgId) -> String {
        cookie(&self.signer, user, org)
    }

    /// A new member (a viewer) of `org`, which is created when absent, signed in.
    pub async fn new_user(&self, org: &OrgId) -> User {
        if self.store.get_org(org).await.unwrap().is_none() {
            self.admin()
                .create_org(Some(org.clone()), "other", Plan::Pro)
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
        tokio::time::timeout(SETTLE, self.workflow.idle())
            .await
            .expect("workflow runs finish");
    }
}

/// The `cookie` header of `user` signed in to `org` with `signer`, valid for an hour.
fn cookie(signer: &CookieSigner, user: &UserId, org: &OrgId) -> String {
    format!(
        "{COOKIE_NAME}={}",
        signer.mint(user, org, COOKIE_SECS).unwrap()
    )
}
