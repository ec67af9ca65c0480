//! The service on AWS: each Lambda function's settings read from its environment and the
//! secrets its row names, the Step Functions workflow adapter, and the entry point
//! (`main!(ROW)`) of each binary in `functions/src/bin/`. Everything here is built once per
//! cold start and shared by the invocations of that instance; the application itself is
//! assembled by `knowledge_assembly`.

pub mod config;
pub mod documents;
pub mod indexer;
pub mod metrics;
pub mod parts;
pub mod sfn;
pub mod sweep;
pub mod task;

use std::sync::Arc;

use aws_config::SdkConfig;
use knowledge_assembly::{App, DocumentParts, Settings};
use knowledge_core::ports::{Parser, Workflow};
use knowledge_dynamo::{DynamoStore, RequestCounter};

pub use crate::config::{ConfigError, Env};
pub use crate::parts::Parts;
pub use crate::sfn::SfnWorkflow;
pub use knowledge_assembly::functions::{self, Function, Serves};
pub use knowledge_core::steps::Handler;

/// Bytes an export holds at most on Lambda, whose response is at most 6 MB with its envelope:
/// 4 MiB stays under it even base64-encoded.
pub const EXPORT_MAX_BYTES: usize = 4 << 20;

/// The settings of the cold start of `parts.function`: the application's origin from
/// `APP_ORIGIN` (which every endpoint needs), and from Secrets Manager only the keys and the
/// provider API key that the function uses. The provider's other settings are the variables
/// [`knowledge_providers::agent_from_env`] reads. Errors: a missing or wrong setting or secret,
/// so the cold start fails loudly.
pub async fn settings(
    parts: Parts, shared: &SdkConfig, env: &Env,
) -> Result<Settings, ConfigError> {
    let function = parts.function;
    let origin = match (function.serves, env.app_origin.as_deref()) {
        (_, Some(origin)) => origin,
        // The steps and the indexer build no URL and check no origin.
        (Serves::Task(_) | Serves::Sweep | Serves::Indexer, None) => "",
        (_, None) => return Err(ConfigError::Missing(config::APP_ORIGIN_ENV)),
    };
    let mut settings = Settings::new(origin);
    settings.lifetime = env.lifetime;
    settings.egress = env.egress;
    settings.approval_wait = env.approval_wait;
    // Lambda buffers a response whole and refuses one over 6 MB: an export stays under it.
    settings.buffered_export_max = Some(EXPORT_MAX_BYTES);
    let secrets = aws_sdk_secretsmanager::Client::new(shared);
    let secret =
        |id: &Option<String>, var: &'static str| id.clone().ok_or(ConfigError::Missing(var));
    if function.secrets.cookie_key {
        let id = secret(&env.signing_key_secret, config::SIGNING_KEY_SECRET_ENV)?;
        settings.cookie_signer = Some(Arc::new(config::cookie_signer(&secrets, &id).await?));
    }
    if function.secrets.sealing_key {
        let id = secret(&env.sealing_key_secret, config::SEALING_KEY_SECRET_ENV)?;
        settings.sealer = Some(Arc::new(config::sealer(&secrets, &id).await?));
    }
    if let Some(identity_provider) = parts.identity_provider {
        settings.identity_provider = Some(identity_provider(env.egress)?);
    }
    if let Some(identity_discovery) = parts.identity_discovery {
        settings.identity_discovery = Some(identity_discovery(env.egress)?);
    }
    if let Some(authorization_servers) = parts.authorization_servers {
        settings.authorization_servers = Some(authorization_servers(env.egress)?);
    }
    if let Some(agent) = parts.agent {
        let api_key = match &env.provider_key_secret {
            Some(id) if function.secrets.provider_key => {
                Some(config::secret_string(&secrets, id).await?)
            }
            _ => None,
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
    /// The function this is the cold start of.
    pub function: Function,
    /// The organisations' documents, where its row uses them.
    pub documents: Option<DocumentParts>,
    /// The bucket they are in.
    pub bucket: Option<String>,
    /// The parsers, for the indexer.
    pub parser: Option<Arc<dyn Parser>>,
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
        let documents = settings.documents.clone();
        let app = App::new(settings, Arc::new(store.clone()));
        Self {
            documents,
            bucket: env.documents_bucket.clone(),
            parser: parts.parser.map(|parser| parser()),
            app: match parts.integrations {
                Some(integrations) => integrations(app),
                None => app,
            },
            store,
            workflow: SfnWorkflow::new(
                aws_sdk_sfn::Client::new(shared),
                env.state_machine_arn.clone(),
            ),
            function: parts.function,
        }
    }

    /// Reads the settings of the function `parts` are of, and builds its clients and `parts`.
    pub async fn load(
        parts: Parts, shared: &SdkConfig, env: &Env, counter: RequestCounter,
    ) -> Result<Self, ConfigError> {
        let mut settings = settings(parts, shared, env).await?;
        if let Some(documents) = parts.documents {
            let name = parts.function.name;
            settings.documents = Some(documents(name, shared, env, &counter)?);
        }
        Ok(Self::new(shared, env, settings, parts, counter))
    }

    /// The router of the function, which serves routes or SCIM. Errors: a setting its routes
    /// need is missing, or the function serves none.
    pub fn router(&self) -> Result<axum::Router, ConfigError> {
        Ok(self.app.function_router(&self.function, self.workflow())?)
    }

    /// The workflow port, on Step Functions.
    pub fn workflow(&self) -> Arc<dyn Workflow> {
        Arc::new(self.workflow.clone())
    }

    /// The Task function, when the function runs a Task of the workflow.
    pub fn task(&self) -> Option<task::TaskFunction> {
        let Serves::Task(handler) = self.function.serves else {
            return None;
        };
        let store = Arc::new(self.store.clone());
        Some(task::TaskFunction::new(self.app.steps(), store, handler))
    }

    /// The sweep function: the session use cases, starting executions on Step Functions.
    pub fn sweep(&self) -> sweep::SweepFunction {
        sweep::SweepFunction::new(self.app.service(self.workflow()))
    }

    /// The indexer function, when the function indexes documents.
    pub fn indexer(&self) -> Option<indexer::IndexerFunction> {
        let documents = self.app.documents()?.clone();
        let workers = documents.workers(self.parser.clone()?);
        let parts = self.documents.as_ref()?;
        let bucket = self.bucket.clone()?;
        Some(indexer::IndexerFunction::new(
            documents, workers, parts, bucket,
        ))
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
    let shared = knowledge_aws_sdk::sdk_config_loader().load().await;
    let counter = RequestCounter::default();
    ColdStart::load(parts, &shared, &env, counter)
        .await
        .map_err(init_failed)
}

/// Serves the routes of `parts.function` behind API Gateway.
async fn run_routes(parts: Parts) -> Result<(), lambda_runtime::Error> {
    let Serves::Routes(routes) = parts.function.serves else {
        unreachable!("Parts::of runs only a function of routes so");
    };
    let cold = start(parts).await?;
    let router = (cold.app.routes_router(routes, cold.workflow()))
        .map_err(|e| init_failed(ConfigError::Assembly(e)))?;
    lambda_http::run(flushing(router)).await
}

/// `router`, writing the metrics each request recorded and exporting its spans once its
/// response is ready (Lambda freezes the function as soon as it is returned).
fn flushing(router: axum::Router) -> axum::Router {
    router.layer(axum::middleware::map_response(
        |response: axum::response::Response| async move {
            flush().await;
            response
        },
    ))
}

/// What `handled` answers, once the metrics it recorded are written and its spans exported.
async fn flushed<T>(handled: impl std::future::Future<Output = T>) -> T {
    let answer = handled.await;
    flush().await;
    answer
}

/// Writes the metrics and exports the spans an invocation recorded.
async fn flush() {
    metrics::flush();
    knowledge_assembly::traces::flush().await;
}

/// Serves SCIM behind API Gateway.
async fn run_scim(parts: Parts) -> Result<(), lambda_runtime::Error> {
    let cold = start(parts).await?;
    lambda_http::run(flushing(cold.app.scim_router(cold.workflow()))).await
}

/// Serves the files built into the binary (the document, the app's): no settings, no clients.
async fn run_files(parts: Parts) -> Result<(), lambda_runtime::Error> {
    let files = parts
        .files
        .expect("Parts::of gives a files function its router");
    lambda_http::run(flushing(files(&config::optional))).await
}

/// Runs the Task of `parts.function` for Step Functions.
async fn run_task(parts: Parts) -> Result<(), lambda_runtime::Error> {
    let task = (start(parts).await?.task()).expect("Parts::of runs only a Task's function so");
    lambda_runtime::run(lambda_runtime::service_fn(move |event| {
        let task = task.clone();
        async move { flushed(task.handle(event)).await }
    }))
    .await
}

/// Runs the sweep on every scheduled event.
async fn run_sweep(parts: Parts) -> Result<(), lambda_runtime::Error> {
    let sweep = start(parts).await?.sweep();
    lambda_runtime::run(lambda_runtime::service_fn(move |event| {
        let sweep = sweep.clone();
        async move { flushed(sweep.handle(event)).await }
    }))
    .await
}

/// Handles the indexer's queue, a message at a time.
async fn run_indexer(parts: Parts) -> Result<(), lambda_runtime::Error> {
    let indexer = (start(parts).await?.indexer()).expect("Parts::of runs only the indexer so");
    lambda_runtime::run(lambda_runtime::service_fn(move |event| {
        let indexer = indexer.clone();
        async move { flushed(indexer.handle(event)).await }
    }))
    .await
}

/// Runs the function `parts` are of, as its row says: serving HTTP, a Task, the sweep or the
/// indexer.
/// `parts` are [`Parts::of`] its row, evaluated at compile time: use [`main!`].
pub async fn run(parts: Parts) -> Result<(), lambda_runtime::Error> {
    knowledge_assembly::logs::init_lambda();
    metrics::install();
    (parts.entry)(parts).await
}

/// The `main` of a Lambda function: `main!(ME)` runs the function of
/// [`functions::ME`](knowledge_assembly::functions::ME), linking only the [`Parts`] its row uses. The
/// package of the binaries depends on `tokio` and `lambda_runtime`.
#[macro_export]
macro_rules! main {
    ($function:ident) => {
        fn main() -> Result<(), lambda_runtime::Error> {
            const PARTS: $crate::Parts = $crate::Parts::of($crate::functions::$function);
            if let Some(first) = PARTS.first {
                first();
            }
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()?;
            runtime.block_on($crate::run(PARTS))
        }
    };
}
