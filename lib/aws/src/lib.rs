//! The service on AWS: configuration from the Lambda environment, the Step Functions workflow
//! adapter, and the entry points that `functions/*/src/main.rs` call. Everything here is built
//! once per cold start and shared by the invocations of that instance.

pub mod config;
pub mod sfn;
pub mod task;

use std::sync::Arc;

use aws_config::SdkConfig;
use knowledge_core::agent::BuiltinAgent;
use knowledge_core::clock::SystemClock;
use knowledge_core::integrations::FixedIntegrations;
use knowledge_core::ports::{Agent, Integrations, Store, Workflow};
use knowledge_core::service::{Deps, Service};
use knowledge_core::steps::Steps;
use knowledge_dynamo::{DynamoStore, RequestCounter};
use knowledge_http::cookie::CookieSigner;
use knowledge_http::{AppState, Endpoint, HttpConfig};
use knowledge_mcp::{StoredIntegrations, Timeouts};
use knowledge_providers::agent_from_env;

pub use crate::config::{ConfigError, Env};
pub use crate::sfn::SfnWorkflow;
pub use crate::task::Handler;

/// The parts every function is built from.
#[derive(Clone)]
pub struct App {
    pub store: DynamoStore,
    pub workflow: SfnWorkflow,
    pub agent: Arc<dyn Agent>,
    pub integrations: Arc<dyn Integrations>,
}

/// What an endpoint's function needs besides [`App`]: the cookie signer and the origin.
#[derive(Clone)]
pub struct Http {
    pub signer: Arc<CookieSigner>,
    pub app_origin: String,
}

/// The application's origin, without a trailing slash. Errors: `APP_ORIGIN` is not set.
fn origin(env: &Env) -> Result<String, ConfigError> {
    env.app_origin
        .as_deref()
        .map(|o| o.trim_end_matches('/').to_owned())
        .ok_or(ConfigError::Missing(config::APP_ORIGIN_ENV))
}

impl Http {
    /// Reads the signing key from Secrets Manager.
    pub async fn load(shared: &SdkConfig, env: &Env) -> Result<Self, ConfigError> {
        let secret = env
            .signing_key_secret
            .as_deref()
            .ok_or(ConfigError::Missing(config::SIGNING_KEY_SECRET_ENV))?;
        let origin = origin(env)?;
        let secrets = aws_sdk_secretsmanager::Client::new(shared);
        let key = config::signing_key(&secrets, secret).await?;
        let signer = CookieSigner::new(&key).map_err(|e| ConfigError::SigningKey(e.to_string()))?;
        Ok(Self {
            signer: Arc::new(signer),
            app_origin: origin,
        })
    }

    /// For the SCIM function, which neither reads nor mints cookies and so is not given the
    /// signing key's secret: a signer with a random key of its own, which no cookie matches.
    pub fn without_cookies(env: &Env) -> Result<Self, ConfigError> {
        let origin = origin(env)?;
        let mut key = [0u8; 32];
        getrandom::fill(&mut key).map_err(|e| ConfigError::SigningKey(e.to_string()))?;
        let signer = CookieSigner::new(&key).map_err(|e| ConfigError::SigningKey(e.to_string()))?;
        Ok(Self {
            signer: Arc::new(signer),
            app_origin: origin,
        })
    }

    /// What `endpoint`'s function needs: the signing key for the session endpoints, none for
    /// SCIM.
    pub async fn for_endpoint(
        endpoint: Endpoint,
        shared: &SdkConfig,
        env: &Env,
    ) -> Result<Self, ConfigError> {
        match endpoint {
            Endpoint::Scim => Self::without_cookies(env),
            _ => Self::load(shared, env).await,
        }
    }
}

impl App {
    /// Builds the clients; DynamoDB requests are counted in `counter`.
    pub fn connect(shared: &SdkConfig, env: &Env, counter: RequestCounter) -> Self {
        let dynamodb =
            aws_sdk_dynamodb::Client::from_conf(knowledge_dynamo::config(shared, counter).build());
        Self {
            store: DynamoStore::new(dynamodb, &env.table),
            workflow: SfnWorkflow::new(
                aws_sdk_sfn::Client::new(shared),
                env.state_machine_arn.clone(),
            ),
            // The functions that use them replace these with the configured ones (`with_ai`).
            agent: Arc::new(BuiltinAgent),
            integrations: Arc::new(FixedIntegrations::new()),
        }
    }

    fn store(&self) -> Arc<dyn Store> {
        Arc::new(self.store.clone())
    }

    /// The router of one endpoint's function.
    pub fn router(&self, endpoint: Endpoint, http: &Http) -> axum::Router {
        let service = Service::new(Deps {
            store: self.store(),
            workflow: Arc::new(self.workflow.clone()) as Arc<dyn Workflow>,
            agent: self.agent.clone(),
            integrations: self.integrations.clone(),
            clock: Arc::new(SystemClock),
        });
        let state = AppState::new(
            service,
            http.signer.clone(),
            HttpConfig {
                app_origin: http.app_origin.clone(),
            },
        );
        knowledge_http::router_for(state, &[endpoint])
    }

    /// Replaces the built-in agent and the empty integrations by the configured ones, for the
    /// functions that use them: `uses` says which. The provider comes from the variables
    /// [`knowledge_providers::agent_from_env`] reads, with its API key from the secret named by
    /// `PROVIDER_API_KEY_SECRET_ARN`; the integrations are the organisations' MCP servers, with
    /// members' credentials opened by the key in `SEALING_KEY_SECRET_ARN`.
    /// Errors: a missing or wrong setting or secret, so the cold start fails loudly.
    pub async fn with_ai(
        mut self,
        shared: &SdkConfig,
        env: &Env,
        uses: Uses,
    ) -> Result<Self, ConfigError> {
        let secrets = aws_sdk_secretsmanager::Client::new(shared);
        if uses.agent {
            let api_key = match &env.provider_key_secret {
                Some(id) => Some(config::secret_string(&secrets, id).await?),
                None => None,
            };
            let configured = agent_from_env(|name| match name {
                "OPENAI_API_KEY" | "ANTHROPIC_API_KEY" => api_key.clone(),
                _ => std::env::var(name).ok(),
            })
            .map_err(|e| ConfigError::Agent(e.to_string()))?;
            tracing::info!(agent = %configured.description, "agent configured");
            self.agent = configured.agent;
        }
        if uses.integrations {
            let id = env
                .sealing_key_secret
                .as_deref()
                .ok_or(ConfigError::Missing(config::SEALING_KEY_SECRET_ENV))?;
            let sealer = config::sealer(&secrets, id).await?;
            self.integrations = Arc::new(StoredIntegrations::new(
                self.store(),
                Arc::new(sealer),
                Arc::new(FixedIntegrations::new()),
                Timeouts::default(),
            ));
        }
        Ok(self)
    }

    /// The workflow steps a task function runs.
    pub fn steps(&self) -> Steps {
        Steps::new(
            self.store(),
            self.agent.clone(),
            self.integrations.clone(),
            Arc::new(SystemClock),
        )
    }

    /// The task function of `handler`.
    pub fn task(&self, handler: Handler) -> task::TaskFunction {
        task::TaskFunction::new(self.steps(), self.store(), handler)
    }
}

/// Which of the configured agent and integrations a function uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Uses {
    pub agent: bool,
    pub integrations: bool,
}

impl Uses {
    /// Create session checks the provider's health and whether anything is connected.
    pub fn of_endpoint(endpoint: Endpoint) -> Self {
        let creates = endpoint == Endpoint::CreateSession;
        Self {
            agent: creates,
            integrations: creates,
        }
    }

    /// CallAgent asks the provider and lists the tools; RunTool calls them.
    pub fn of_handler(handler: Handler) -> Self {
        Self {
            agent: handler == Handler::CallAgent,
            integrations: matches!(handler, Handler::CallAgent | Handler::RunTool),
        }
    }
}

/// Logs the cold start's failure, so that Lambda reports a failed init with its reason
/// instead of serving half-configured.
fn init_failed(e: ConfigError) -> lambda_runtime::Error {
    tracing::error!(error = %e, "cold start failed");
    e.into()
}

/// The `main` of an endpoint's function: serves `endpoint` behind API Gateway.
pub async fn run_http(endpoint: Endpoint) -> Result<(), lambda_http::Error> {
    lambda_runtime::tracing::init_default_subscriber();
    let env = Env::from_env().map_err(init_failed)?;
    let shared = aws_config::load_from_env().await;
    let http = Http::for_endpoint(endpoint, &shared, &env)
        .await
        .map_err(init_failed)?;
    let app = App::connect(&shared, &env, RequestCounter::default())
        .with_ai(&shared, &env, Uses::of_endpoint(endpoint))
        .await
        .map_err(init_failed)?;
    lambda_http::run(app.router(endpoint, &http)).await
}

/// The `main` of a workflow task's function: runs `handler` for Step Functions.
pub async fn run_task(handler: Handler) -> Result<(), lambda_runtime::Error> {
    lambda_runtime::tracing::init_default_subscriber();
    let env = Env::from_env().map_err(init_failed)?;
    let shared = aws_config::load_from_env().await;
    let task = App::connect(&shared, &env, RequestCounter::default())
        .with_ai(&shared, &env, Uses::of_handler(handler))
        .await
        .map_err(init_failed)?
        .task(handler);
    lambda_runtime::run(lambda_runtime::service_fn(move |event| {
        let task = task.clone();
        async move { task.handle(event).await }
    }))
    .await
}
