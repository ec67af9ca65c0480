//! The service on AWS: each Lambda function's settings read from its environment and the
//! secrets it is given, the Step Functions workflow adapter, and the entry points that
//! `functions/*/src/main.rs` call. Everything here is built once per cold start and shared by
//! the invocations of that instance; the application itself is assembled by `knowledge_app`.

pub mod config;
pub mod parts;
pub mod sfn;
pub mod sweep;
pub mod task;

use std::sync::Arc;

use aws_config::SdkConfig;
use knowledge_app::{App, Settings};
use knowledge_core::ports::Workflow;
use knowledge_dynamo::{DynamoStore, RequestCounter};

pub use crate::config::{ConfigError, Env};
pub use crate::parts::Parts;
pub use crate::sfn::SfnWorkflow;
pub use knowledge_core::steps::Handler;
pub use knowledge_http::Endpoint;

/// A Lambda function: an endpoint behind API Gateway, a Task of the state machine, or the
/// scheduled sweep for runs whose execution died.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Function {
    Endpoint(Endpoint),
    Task(Handler),
    Sweep,
}

impl Function {
    /// The function's name in `functions/`, `template.yaml` (in PascalCase) and `events/`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Endpoint(e) => e.function_name(),
            Self::Task(h) => h.function_name(),
            Self::Sweep => "sweep",
        }
    }

    /// Every endpoint but SCIM, the OpenAPI document and the app's files reads and mints
    /// session cookies.
    const fn uses_cookies(self) -> bool {
        matches!(self, Self::Endpoint(e) if !matches!(e, Endpoint::Scim | Endpoint::OpenApi | Endpoint::Web))
    }

    /// Create session checks the provider's health; `CallAgent` asks it.
    const fn uses_agent(self) -> bool {
        match self {
            Self::Endpoint(e) => matches!(e, Endpoint::CreateSession),
            Self::Task(h) => h.asks_agent(),
            Self::Sweep => false,
        }
    }

    /// Create session checks whether anything is connected; `CallAgent` lists the tools and
    /// `RunTool` calls them; the admin function tests integrations by listing their tools.
    const fn uses_integrations(self) -> bool {
        match self {
            Self::Endpoint(e) => matches!(e, Endpoint::CreateSession | Endpoint::Admin),
            Self::Task(h) => h.uses_integrations(),
            Self::Sweep => false,
        }
    }

    /// Of those, create session only asks whether a member reaches any integration: it needs
    /// no MCP client ([`knowledge_app::App::with_integration_reach`]).
    const fn only_asks_integration_reach(self) -> bool {
        matches!(self, Self::Endpoint(Endpoint::CreateSession))
    }

    /// Single sign-on's login and callback reach the identity providers, with the client
    /// secrets they open; the admin function seals those secrets and tests providers.
    const fn uses_sso(self) -> bool {
        matches!(self, Self::Endpoint(e) if e.needs_sso() || matches!(e, Endpoint::Admin))
    }

    /// Of those, login and callback sign people in; the admin function only runs a provider's
    /// discovery, so it links no code exchange or token verification.
    const fn signs_in(self) -> bool {
        matches!(self, Self::Endpoint(e) if e.needs_sso())
    }
}

/// The settings of the cold start of `parts.function`: the application's origin from
/// `APP_ORIGIN` (which every endpoint needs), and from Secrets Manager only the keys and the
/// provider API key that the function uses. The provider's other settings are the variables
/// [`knowledge_providers::agent_from_env`] reads. Errors: a missing or wrong setting or secret,
/// so the cold start fails loudly.
pub async fn settings(
    parts: Parts, shared: &SdkConfig, env: &Env,
) -> Result<Settings, ConfigError> {
    let function = parts.function;
    let origin = match (function, env.app_origin.as_deref()) {
        (_, Some(origin)) => origin,
        // The steps build no URL and check no origin.
        (Function::Task(_) | Function::Sweep, None) => "",
        (Function::Endpoint(_), None) => return Err(ConfigError::Missing(config::APP_ORIGIN_ENV)),
    };
    let mut settings = Settings::new(origin);
    settings.lifetime = env.lifetime;
    settings.egress = env.egress;
    let secrets = aws_sdk_secretsmanager::Client::new(shared);
    let secret =
        |id: &Option<String>, var: &'static str| id.clone().ok_or(ConfigError::Missing(var));
    if function.uses_cookies() {
        let id = secret(&env.signing_key_secret, config::SIGNING_KEY_SECRET_ENV)?;
        settings.cookie_signer = Some(Arc::new(config::cookie_signer(&secrets, &id).await?));
    }
    if function.uses_integrations() || function.uses_sso() {
        let id = secret(&env.sealing_key_secret, config::SEALING_KEY_SECRET_ENV)?;
        settings.sealer = Some(Arc::new(config::sealer(&secrets, &id).await?));
    }
    if let Some(identity_provider) = parts.identity_provider {
        settings.identity_provider = Some(identity_provider(env.egress)?);
    }
    if let Some(identity_discovery) = parts.identity_discovery {
        settings.identity_discovery = Some(identity_discovery(env.egress)?);
    }
    if let Some(agent) = parts.agent {
        let api_key = match &env.provider_key_secret {
            Some(id) => Some(config::secret_string(&secrets, id).await?),
            None => None,
        };
        settings.agent = Some(agent(&|name| match name {
            "OPENAI_API_KEY" | "ANTHROPIC_API_KEY" => api_key.clone(),
            _ => std::env::var(name).ok(),
        })?);
    }
    Ok(settings)
}

/// One function's cold start: its clients, and the application assembled over them.
#[derive(Clone)]
pub struct ColdStart {
    pub store: DynamoStore,
    pub workflow: SfnWorkflow,
    pub app: App,
    /// The routes of an endpoint's function ([`Parts::routes`]).
    routes: knowledge_http::Routes,
}

impl ColdStart {
    /// Builds the clients over `settings`, with the integrations when `parts` has them;
    /// DynamoDB requests are counted in `counter`.
    pub fn new(
        shared: &SdkConfig, env: &Env, settings: Settings, parts: Parts, counter: RequestCounter,
    ) -> Self {
        let dynamodb =
            aws_sdk_dynamodb::Client::from_conf(knowledge_dynamo::config(shared, counter).build());
        let store = DynamoStore::new(dynamodb, &env.table);
        let app = App::new(settings, Arc::new(store.clone()));
        Self {
            app: match parts.integrations {
                Some(integrations) => integrations(app),
                None => app,
            },
            store,
            workflow: SfnWorkflow::new(
                aws_sdk_sfn::Client::new(shared),
                env.state_machine_arn.clone(),
            ),
            routes: parts.routes,
        }
    }

    /// Reads the settings of the function `parts` are of, and builds its clients and `parts`.
    pub async fn load(
        parts: Parts, shared: &SdkConfig, env: &Env, counter: RequestCounter,
    ) -> Result<Self, ConfigError> {
        let settings = settings(parts, shared, env).await?;
        Ok(Self::new(shared, env, settings, parts, counter))
    }

    /// The router of `endpoint`'s function. Errors: a setting the endpoint needs is missing.
    pub fn router(&self, endpoint: Endpoint) -> Result<axum::Router, ConfigError> {
        let workflow: Arc<dyn Workflow> = Arc::new(self.workflow.clone());
        Ok(self.app.endpoint_router(endpoint, self.routes, workflow)?)
    }

    /// The task function of `handler`.
    pub fn task(&self, handler: Handler) -> task::TaskFunction {
        task::TaskFunction::new(self.app.steps(), Arc::new(self.store.clone()), handler)
    }

    /// The sweep function: the session use cases, starting executions on Step Functions.
    pub fn sweep(&self) -> sweep::SweepFunction {
        let workflow: Arc<dyn Workflow> = Arc::new(self.workflow.clone());
        sweep::SweepFunction::new(self.app.service(workflow))
    }
}

/// Logs the cold start's failure with its causes, so that Lambda reports a failed init with
/// its reason instead of serving half-configured.
fn init_failed(e: ConfigError) -> lambda_runtime::Error {
    tracing::error!(error = %knowledge_core::error::Chain(&e), "cold start failed");
    e.into()
}

/// The cold start of the function `parts` are of, from the environment Lambda gives it.
async fn start(parts: Parts) -> Result<ColdStart, lambda_runtime::Error> {
    let env = Env::from_env().map_err(init_failed)?;
    let shared = knowledge_dynamo::sdk_config_loader().load().await;
    let counter = RequestCounter::default();
    ColdStart::load(parts, &shared, &env, counter)
        .await
        .map_err(init_failed)
}

/// Serves `endpoint` behind API Gateway with `parts` ([`Parts::of`] the endpoint's function,
/// evaluated at compile time: use [`endpoint_main!`]).
pub async fn run_http(endpoint: Endpoint, parts: Parts) -> Result<(), lambda_http::Error> {
    lambda_runtime::tracing::init_default_subscriber();
    // The document and the app's files are built into the binary: no settings, no clients.
    if let Some(files) = parts.files {
        return lambda_http::run(files()).await;
    }
    let cold = start(parts).await?;
    lambda_http::run(cold.router(endpoint).map_err(init_failed)?).await
}

/// Runs `handler` for Step Functions with `parts` ([`Parts::of`] the Task's function, evaluated
/// at compile time: use [`task_main!`]).
pub async fn run_task(handler: Handler, parts: Parts) -> Result<(), lambda_runtime::Error> {
    lambda_runtime::tracing::init_default_subscriber();
    let task = start(parts).await?.task(handler);
    lambda_runtime::run(lambda_runtime::service_fn(move |event| {
        let task = task.clone();
        async move { task.handle(event).await }
    }))
    .await
}

/// Runs the sweep on every scheduled event, with `parts` ([`Parts::of`] [`Function::Sweep`],
/// evaluated at compile time: use [`sweep_main!`]).
pub async fn run_sweep(parts: Parts) -> Result<(), lambda_runtime::Error> {
    lambda_runtime::tracing::init_default_subscriber();
    let sweep = start(parts).await?.sweep();
    lambda_runtime::run(lambda_runtime::service_fn(move |event| {
        let sweep = sweep.clone();
        async move { sweep.handle(event).await }
    }))
    .await
}

/// The `main` of the sweep function, linking only the [`Parts`] it uses (none: the store and
/// the workflow). The function's crate depends on `tokio` and `lambda_runtime`.
#[macro_export]
macro_rules! sweep_main {
    () => {
        #[tokio::main]
        async fn main() -> Result<(), lambda_runtime::Error> {
            const PARTS: $crate::Parts = $crate::Parts::of($crate::Function::Sweep);
            $crate::run_sweep(PARTS).await
        }
    };
}

/// The `main` of an endpoint's function: `endpoint_main!(Me)` serves [`Endpoint::Me`], linking
/// only the [`Parts`] it uses. The function's crate depends on `tokio` and `lambda_http`.
#[macro_export]
macro_rules! endpoint_main {
    ($endpoint:ident) => {
        #[tokio::main]
        async fn main() -> Result<(), lambda_http::Error> {
            const ENDPOINT: $crate::Endpoint = $crate::Endpoint::$endpoint;
            const PARTS: $crate::Parts = $crate::Parts::of($crate::Function::Endpoint(ENDPOINT));
            $crate::run_http(ENDPOINT, PARTS).await
        }
    };
}

/// The `main` of a workflow Task's function: `task_main!(LoadTurn)` runs [`Handler::LoadTurn`],
/// linking only the [`Parts`] it uses. The function's crate depends on `tokio` and
/// `lambda_runtime`.
#[macro_export]
macro_rules! task_main {
    ($handler:ident) => {
        #[tokio::main]
        async fn main() -> Result<(), lambda_runtime::Error> {
            const HANDLER: $crate::Handler = $crate::Handler::$handler;
            const PARTS: $crate::Parts = $crate::Parts::of($crate::Function::Task(HANDLER));
            $crate::run_task(HANDLER, PARTS).await
        }
    };
}
