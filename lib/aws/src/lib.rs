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
    pub signer: Arc<CookieSigner>,
    pub app_origin: String,
}

impl App {
    /// Builds the clients and reads the signing key from Secrets Manager. DynamoDB requests are
    /// counted in `counter`.
    pub async fn connect(
        shared: &SdkConfig,
        env: &Env,
        counter: RequestCounter,
    ) -> Result<Self, ConfigError> {
        let dynamodb = aws_sdk_dynamodb_client(shared, counter);
        let secrets = aws_sdk_secretsmanager::Client::new(shared);
        let key = config::signing_key(&secrets, &env.signing_key_secret).await?;
        let signer = CookieSigner::new(&key).map_err(|e| ConfigError::SigningKey(e.to_string()))?;
        Ok(Self {
            store: DynamoStore::new(dynamodb, &env.table),
            workflow: SfnWorkflow::new(aws_sdk_sfn::Client::new(shared), &env.state_machine_arn),
            // The built-in agent, and no integrations, until the providers and MCP connectors
            // arrive (see docs/deploy.md).
            agent: Arc::new(BuiltinAgent),
            integrations: Arc::new(FixedIntegrations::new()),
            signer: Arc::new(signer),
            app_origin: env.app_origin.trim_end_matches('/').to_owned(),
        })
    }

    fn store(&self) -> Arc<dyn Store> {
        Arc::new(self.store.clone())
    }

    /// The router of one endpoint's function.
    pub fn router(&self, endpoint: Endpoint) -> axum::Router {
        let service = Service::new(Deps {
            store: self.store(),
            workflow: Arc::new(self.workflow.clone()) as Arc<dyn Workflow>,
            agent: self.agent.clone(),
            integrations: self.integrations.clone(),
            clock: Arc::new(SystemClock),
        });
        let state = AppState {
            service,
            signer: self.signer.clone(),
            config: Arc::new(HttpConfig {
                app_origin: self.app_origin.clone(),
            }),
        };
        knowledge_http::router_for(state, &[endpoint])
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
}

fn aws_sdk_dynamodb_client(
    shared: &SdkConfig,
    counter: RequestCounter,
) -> aws_sdk_dynamodb::Client {
    aws_sdk_dynamodb::Client::from_conf(knowledge_dynamo::config(shared, counter).build())
}

/// Reads the configuration and builds the clients of a cold start; a failure is logged and
/// ends the process, so that Lambda reports a failed init instead of serving half-configured.
async fn cold_start() -> Result<App, lambda_runtime::Error> {
    lambda_runtime::tracing::init_default_subscriber();
    let env = Env::from_env()?;
    let shared = aws_config::load_from_env().await;
    match App::connect(&shared, &env, RequestCounter::default()).await {
        Ok(app) => Ok(app),
        Err(e) => {
            tracing::error!(error = %e, "cold start failed");
            Err(e.into())
        }
    }
}

/// The `main` of an endpoint's function: serves `endpoint` behind API Gateway.
pub async fn run_http(endpoint: Endpoint) -> Result<(), lambda_http::Error> {
    let app = cold_start().await?;
    lambda_http::run(app.router(endpoint)).await
}

/// The `main` of a workflow task's function: runs `handler` for Step Functions.
pub async fn run_task(handler: Handler) -> Result<(), lambda_runtime::Error> {
    let app = cold_start().await?;
    let task = task::TaskFunction::new(app.steps(), app.store(), handler);
    lambda_runtime::run(lambda_runtime::service_fn(move |event| {
        let task = task.clone();
        async move { task.handle(event).await }
    }))
    .await
}
