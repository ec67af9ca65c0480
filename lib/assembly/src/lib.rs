//! The application assembled in one place. Each runtime reads its [`Settings`] once (the local
//! binary from its command line and data directory, a Lambda function from its environment and
//! the secrets it is given) and hands them, with its store and workflow engine, to [`App`],
//! which builds the use cases, the workflow steps and the HTTP routers from them.
//!
//! A setting a runtime leaves out is one its routes and steps do not use: the SCIM function
//! has no cookie signer, only the functions that ask the agent or reach the integrations have
//! the provider and the sealing key. Asking for a router that needs a missing setting is an
//! [`AssemblyError`] at start-up, never a failure at request time.

pub mod functions;
pub mod logs;
pub mod operator;
pub mod traces;
pub mod workflow;

use std::sync::{Arc, OnceLock};

use axum::Router;
use knowledge_core::adapters::integrations::FixedIntegrations;
use knowledge_core::admin::{AdminStores, Administration};
use knowledge_core::clock::{Clock, SystemClock};
use knowledge_core::connections::Connections;
use knowledge_core::documents::{DocumentLimits, DocumentStores, Documents, WithDocuments};
use knowledge_core::ports::{
    Agent, AuthorizationServers, IdentityDiscovery, IdentityProvider, IntegrationReach,
    Integrations, Originals, PassageIndex, Store, Workflow,
};
use knowledge_core::scim::Directory;
use knowledge_core::seal::Sealer;
use knowledge_core::service::{Deps, Opening, Service};
use knowledge_core::sso::SingleSignOn;
use knowledge_core::steps::{StepStores, Steps};
use knowledge_core::vault::{Vault, VaultTiming};
use knowledge_egress::Egress;
use knowledge_http::cookie::{CookieSigner, Lifetime};
use knowledge_http::{HttpConfig, Routes, ScimApi, SessionApi};
use knowledge_mcp::{StoredIntegrations, Timeouts};
use knowledge_web::Files;

/// A setting the requested part of the application needs was not given.
#[derive(Debug, thiserror::Error)]
#[error("{0} is not configured")]
pub struct AssemblyError(pub &'static str);

/// What the application is built from, read once per process.
#[derive(Clone)]
pub struct Settings {
    /// The application's own origin, `scheme://host[:port]` without a trailing slash: POST and
    /// DELETE must carry it, SCIM's `location`s are built on it, and cookies are `Secure`
    /// when it is `https`.
    pub app_origin: String,
    /// Signs and checks the session cookie; the session routes need it.
    pub cookie_signer: Option<Arc<CookieSigner>>,
    /// Opens members' sealed integration credentials; the integrations need it.
    pub sealer: Option<Arc<Sealer>>,
    /// The agent's provider; creating sessions and the `CallAgent` step need it.
    pub agent: Option<Arc<dyn Agent>>,
    /// Integrations that organisations reach without connecting them (the local docs search).
    pub fixed_integrations: Arc<dyn Integrations>,
    /// Bounds on every call to a connected MCP server.
    pub mcp_timeouts: Timeouts,
    /// Where requests to addresses admins name (MCP servers, identity providers) may go. The
    /// identity provider adapter is built with it by the runtime.
    pub egress: Egress,
    /// The organisations' OpenID providers; single sign-on needs it (and the sealer, for the
    /// client secrets).
    pub identity_provider: Option<Arc<dyn IdentityProvider>>,
    /// Their discovery alone, for an admin's test of a configuration where no identity
    /// provider is given (the admin function, which signs nobody in); the identity provider
    /// serves for it otherwise.
    pub identity_discovery: Option<Arc<dyn IdentityDiscovery>>,
    /// The authorization servers of OAuth integrations (discovery, registration, the code
    /// exchange, refresh, revocation); connecting, using and revoking OAuth grants need it
    /// (and the sealer). Built by the runtime where a function's row uses grants, so that the
    /// others link no OAuth client.
    pub authorization_servers: Option<Arc<dyn AuthorizationServers>>,
    /// How long a sign-in lasts.
    pub lifetime: Lifetime,
    /// See [`HttpConfig::buffered_export_max`]: `None` (streamed) unless the runtime buffers
    /// responses.
    pub buffered_export_max: Option<usize>,
    /// Where the browser app's files come from: built in, or a folder (development).
    pub app_files: Files,
    pub clock: Arc<dyn Clock>,
    /// Where the organisations' documents are kept, where the runtime keeps them (the local
    /// service; on AWS with the originals' bucket, to come): the documents' routes answer
    /// 500 without them.
    pub documents: Option<DocumentParts>,
    /// How long a call that asks its member waits for an answer before it expires.
    pub approval_wait: std::time::Duration,
}

/// What the documents' use cases are built from, beside the store.
#[derive(Clone)]
pub struct DocumentParts {
    pub originals: Arc<dyn Originals>,
    pub index: Arc<dyn PassageIndex>,
    pub limits: DocumentLimits,
}

impl Settings {
    /// Settings for `app_origin` (a trailing slash is dropped) with nothing else configured:
    /// no cookie signer, sealer or agent, no fixed integrations, public destinations only,
    /// the system clock.
    pub fn new(app_origin: &str) -> Self {
        Self {
            app_origin: app_origin.trim_end_matches('/').to_owned(),
            cookie_signer: None,
            sealer: None,
            agent: None,
            fixed_integrations: Arc::new(FixedIntegrations::new()),
            mcp_timeouts: Timeouts::default(),
            egress: Egress::PUBLIC_ONLY,
            identity_provider: None,
            identity_discovery: None,
            authorization_servers: None,
            lifetime: Lifetime::default(),
            buffered_export_max: None,
            app_files: Files::Embedded,
            clock: Arc::new(SystemClock),
            documents: None,
            approval_wait: std::time::Duration::from_secs(
                3600 * u64::from(knowledge_core::domain::APPROVAL_HOURS),
            ),
        }
    }

    fn http(&self) -> HttpConfig {
        HttpConfig {
            app_origin: self.app_origin.clone(),
            lifetime: self.lifetime,
            buffered_export_max: self.buffered_export_max,
        }
    }
}

/// The application over one store: builds the use cases, the steps and the routers.
#[derive(Clone)]
pub struct App {
    settings: Settings,
    store: Arc<dyn Store>,
    /// The organisations' connected integrations after the fixed ones, where added
    /// ([`App::with_stored_integrations`]).
    integrations: Option<Arc<dyn Integrations>>,
    /// Whether a member reaches any of them, which is all that creating a session asks: the
    /// same adapter where the integrations are added, or alone
    /// ([`App::with_integration_reach`]).
    reach: Option<Arc<dyn IntegrationReach>>,
    /// The integrations' authorization servers and the token vault, built at first use where
    /// the settings hold a sealer: one vault per process, so its single flight of refreshes
    /// spans every use.
    oauth: Arc<OnceLock<Option<OAuthParts>>>,
    /// The documents' use cases, one per process so that the routes that queue documents wake
    /// the workers that index them.
    documents: Option<Documents>,
}

/// What OAuth integrations are connected and used through.
#[derive(Clone)]
struct OAuthParts {
    servers: Arc<dyn AuthorizationServers>,
    vault: Arc<Vault>,
}

impl App {
    /// The application without the organisations' integrations: add them with
    /// [`App::with_stored_integrations`] where they are used, or
    /// [`App::with_integration_reach`] where only creating a session asks about them.
    pub fn new(settings: Settings, store: Arc<dyn Store>) -> Self {
        let documents = settings.documents.as_ref().map(|parts| {
            let stores = DocumentStores {
                documents: store.clone(),
                groups: store.clone(),
                orgs: store.clone(),
            };
            let (originals, index) = (parts.originals.clone(), parts.index.clone());
            Documents::new(
                stores,
                originals,
                index,
                settings.clock.clone(),
                parts.limits,
            )
        });
        Self {
            settings,
            store,
            integrations: None,
            reach: None,
            oauth: Arc::default(),
            documents,
        }
    }

    /// The documents' use cases, where the settings keep documents: the local service runs
    /// their workers.
    pub fn documents(&self) -> Option<&Documents> {
        self.documents.as_ref()
    }

    fn oauth(&self) -> Option<&OAuthParts> {
        (self.oauth)
            .get_or_init(|| Self::oauth_parts(&self.settings, &self.store))
            .as_ref()
    }

    /// The authorization servers and the vault; `None` without either the servers or a
    /// sealer.
    fn oauth_parts(settings: &Settings, store: &Arc<dyn Store>) -> Option<OAuthParts> {
        let sealer = settings.sealer.clone()?;
        let servers = settings.authorization_servers.clone()?;
        let vault = Arc::new(Vault::new(
            store.clone(),
            servers.clone(),
            sealer,
            settings.clock.clone(),
            VaultTiming::default(),
        ));
        Some(OAuthParts { servers, vault })
    }

    /// The same, reaching the organisations' connected integrations (MCP servers) after the
    /// fixed ones, when the settings hold a sealer (members' credentials are sealed), and the
    /// documents' search before them where the settings keep documents. A
    /// function of its own so that a binary that never calls it links no MCP client.
    pub fn with_stored_integrations(mut self) -> Self {
        if let Some(mut stored) = self.stored_integrations() {
            if let Some(oauth) = self.oauth() {
                stored = stored.with_vault(oauth.vault.clone());
            }
            let stored = Arc::new(stored);
            match &self.documents {
                Some(documents) => {
                    let with = WithDocuments::new(stored, documents.clone(), self.store.clone());
                    let with = Arc::new(with);
                    self.reach = Some(with.clone());
                    self.integrations = Some(with);
                }
                None => {
                    self.reach = Some(stored.clone());
                    self.integrations = Some(stored);
                }
            }
        }
        self
    }

    /// The same, knowing only whether a member reaches any of the organisations' integrations
    /// (what creating a session asks), when the settings hold a sealer. Builds no MCP client
    /// and names none, so a binary that calls only this links none; its steps and admin
    /// routes have no integrations.
    pub fn with_integration_reach(mut self) -> Self {
        if let Some(stored) = self.stored_integrations() {
            self.reach = Some(Arc::new(stored));
        }
        self
    }

    /// The stored integrations after the fixed ones; `None` without a sealer.
    fn stored_integrations(&self) -> Option<StoredIntegrations> {
        let sealer = self.settings.sealer.clone()?;
        Some(StoredIntegrations::new(
            self.store.clone(),
            sealer,
            self.settings.fixed_integrations.clone(),
            self.settings.mcp_timeouts,
            self.settings.egress,
        ))
    }

    /// The workflow steps, with the agent and the integrations where they are configured.
    pub fn steps(&self) -> Steps {
        let stores = StepStores::of(&self.store);
        let mut steps = Steps::new(stores, self.settings.clock.clone())
            .with_approval_wait(self.settings.approval_wait);
        if let Some(agent) = &self.settings.agent {
            steps = steps.with_agent(agent.clone());
        }
        if let Some(integrations) = &self.integrations {
            steps = steps.with_integrations(integrations.clone());
        }
        steps
    }

    /// The session use cases, starting runs on `workflow`; they create sessions only when the
    /// agent and the integrations (or only their reach) are configured.
    pub fn service(&self, workflow: Arc<dyn Workflow>) -> Service {
        let opening = match (&self.settings.agent, &self.reach) {
            (Some(agent), Some(reach)) => Some(Opening {
                agent: agent.clone(),
                integrations: reach.clone(),
            }),
            _ => None,
        };
        Service::new(Deps {
            store: self.store.clone(),
            workflow,
            clock: self.settings.clock.clone(),
            opening,
        })
    }

    /// The state of the session, `/api/auth` and admin routes of `endpoints`; with single
    /// sign-on or administration when one of them needs it. Errors: no cookie signer; no
    /// identity provider or sealer for single sign-on; no sealer for administration.
    fn session_api(
        &self, service: Service, endpoints: &[Routes],
    ) -> Result<SessionApi, AssemblyError> {
        let s = &self.settings;
        let signer = (s.cookie_signer.clone()).ok_or(AssemblyError("the cookie signing key"))?;
        let mut api = SessionApi::new(service.clone(), signer, s.http());
        if endpoints.iter().any(|r| r.administers()) {
            api = api.with_admin(self.administration(&service)?);
        }
        if endpoints.iter().any(|r| r.connects()) {
            api = api.with_connections(Arc::new(self.connections()?));
        }
        if let Some(documents) = &self.documents
            && endpoints.iter().any(|r| r.reads_documents())
        {
            api = api.with_documents(documents.clone());
        }
        if !endpoints.iter().any(|r| r.signs_in()) {
            return Ok(api);
        }
        let provider =
            (s.identity_provider.clone()).ok_or(AssemblyError("the identity provider"))?;
        let sealer = s.sealer.clone().ok_or(AssemblyError("the sealing key"))?;
        let sso = SingleSignOn::new(
            self.store.clone(),
            self.store.clone(),
            sealer,
            provider,
            s.clock.clone(),
            s.http().callback_base(),
        );
        Ok(api.with_sso(sso))
    }

    /// The admin use cases, with everything an admin action reaches: the sealer, the workflow
    /// (through `service`), the identity providers and the integrations. Errors: no sealer.
    fn administration(&self, service: &Service) -> Result<Administration, AssemblyError> {
        let s = &self.settings;
        let sealer = s.sealer.clone().ok_or(AssemblyError("the sealing key"))?;
        let mut admin = Administration::new(AdminStores::of(&self.store), s.clock.clone())
            .with_sealer(sealer)
            .with_workflow(service.workflow().clone());
        let discovery = match (&s.identity_provider, &s.identity_discovery) {
            (Some(provider), _) => Some(provider.clone() as Arc<dyn IdentityDiscovery>),
            (None, discovery) => discovery.clone(),
        };
        if let Some(discovery) = discovery {
            admin = admin.with_identity(discovery);
        }
        if let Some(integrations) = &self.integrations {
            admin = admin.with_integrations(integrations.clone());
        }
        if let Some(oauth) = self.oauth() {
            admin = admin
                .with_authorization_servers(oauth.servers.clone(), &s.app_origin)
                .with_vault(oauth.vault.clone());
        }
        Ok(admin)
    }

    /// The connections to OAuth integrations. Errors: no sealer.
    fn connections(&self) -> Result<Connections, AssemblyError> {
        let s = &self.settings;
        let oauth = (self.oauth()).ok_or(AssemblyError("the authorization servers' client"))?;
        let sealer = s.sealer.clone().ok_or(AssemblyError("the sealing key"))?;
        Ok(Connections::new(
            self.store.clone(),
            self.store.clone(),
            oauth.servers.clone(),
            oauth.vault.clone(),
            sealer,
            s.clock.clone(),
            &s.app_origin,
        ))
    }

    fn scim_api(&self, service: Service) -> ScimApi {
        let mut directory = Directory::new(
            self.store.clone(),
            self.store.clone(),
            self.store.clone(),
            service,
        );
        if let Some(oauth) = self.oauth() {
            directory = directory.with_vault(oauth.vault.clone());
        }
        ScimApi::new(directory, self.settings.http())
    }

    /// Every route, as the local service serves them: every function's. Errors: no cookie
    /// signer, sealer or identity provider.
    pub fn router(&self, workflow: Arc<dyn Workflow>) -> Result<Router, AssemblyError> {
        let service = self.service(workflow);
        let endpoints = functions::session_routes();
        let sessions = self.session_api(service.clone(), &endpoints)?;
        let app = knowledge_web::routes(self.settings.app_files.clone(), None);
        Ok(knowledge_http::router(
            sessions,
            self.scim_api(service),
            functions::document_json().into(),
            app,
            &endpoints,
        ))
    }

    /// The router of the Lambda function `function`, which serves routes or SCIM; a binary
    /// calls [`App::routes_router`] or [`App::scim_router`] instead, as its row says at compile
    /// time, so that it links only its own. Errors: those of the two; a function that serves
    /// neither (the document and the app's files are routed without an application:
    /// [`functions::document_json`], `knowledge_http::web_function`).
    pub fn function_router(
        &self, function: &functions::Function, workflow: Arc<dyn Workflow>,
    ) -> Result<Router, AssemblyError> {
        match function.serves {
            functions::Serves::Scim => Ok(self.scim_router(workflow)),
            functions::Serves::Routes(routes) => self.routes_router(routes, workflow),
            _ => Err(AssemblyError(
                "an application for a function that serves no routes",
            )),
        }
    }

    /// The router of a function that serves `routes` (a row's, evaluated at compile time where
    /// the function is built, so that it links no other function's handlers). Errors: no cookie
    /// signer; no sealer or identity provider, for single sign-on; no sealer, for
    /// administration.
    pub fn routes_router(
        &self, routes: Routes, workflow: Arc<dyn Workflow>,
    ) -> Result<Router, AssemblyError> {
        let sessions = self.session_api(self.service(workflow), &[routes])?;
        Ok(knowledge_http::session_function(sessions, routes))
    }

    /// The router of the SCIM function.
    pub fn scim_router(&self, workflow: Arc<dyn Workflow>) -> Router {
        knowledge_http::scim_function(self.scim_api(self.service(workflow)))
    }
}
