//! The optional parts of a function's binary: the identity providers' client, the agent's
//! provider, the integrations' authorization servers' client, the MCP client, the built-in
//! files (the app's, the OpenAPI document), the documents' bucket, index and queue, the
//! parsers, and how the function runs. Each function links only those its row uses: its `main` ([`crate::main!`])
//! evaluates [`Parts::of`] its row at compile time, so the constant it passes on holds
//! pointers to the parts that function needs and nothing names the others, which the linker
//! then leaves out (`scripts/link_guard.sh` checks that it does).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use aws_config::SdkConfig;
use knowledge_assembly::functions::{DocumentsUse, Function, Identity, Integrations, Serves};
use knowledge_assembly::{App, DocumentParts};
use knowledge_core::ports::{
    Agent, AuthorizationServers, IdentityDiscovery, IdentityProvider, Parser,
};
use knowledge_dynamo::RequestCounter;
use knowledge_egress::Egress;

use crate::{ConfigError, Env, documents};

/// Builds the agent from its settings, read through `var` (the API key from its secret).
pub type MakeAgent = fn(&dyn Fn(&str) -> Option<String>) -> Result<Arc<dyn Agent>, ConfigError>;

/// Builds the identity providers' client, reaching them under the deployment's egress guard.
pub type MakeIdentityProvider = fn(Egress) -> Result<Arc<dyn IdentityProvider>, ConfigError>;

/// Builds the same client for their discovery alone (no sign-in linked).
pub type MakeIdentityDiscovery = fn(Egress) -> Result<Arc<dyn IdentityDiscovery>, ConfigError>;

/// Builds the client of the integrations' authorization servers, under the egress guard.
pub type MakeAuthorizationServers =
    fn(Egress) -> Result<Arc<dyn AuthorizationServers>, ConfigError>;

/// Builds the documents' parts of the function named first (its bucket, its index copies, its
/// queue), counting the requests of their clients in the counter.
pub type MakeDocuments =
    fn(&str, &SdkConfig, &Env, &RequestCounter) -> Result<DocumentParts, ConfigError>;

/// Builds the whole router of a function that serves files built into the binary, from its
/// settings read through `var`.
pub type MakeFiles = fn(&dyn Fn(&str) -> Option<String>) -> axum::Router;

/// How a function runs once started: serving HTTP, a Task or the sweep.
pub type Entry = fn(Parts) -> Pin<Box<dyn Future<Output = Result<(), lambda_runtime::Error>>>>;

/// What a function builds beyond the store, the workflow and its keys; `None` where it has no
/// use for a part.
#[derive(Clone, Copy)]
pub struct Parts {
    /// The function these are the parts of.
    pub function: Function,
    pub identity_provider: Option<MakeIdentityProvider>,
    pub identity_discovery: Option<MakeIdentityDiscovery>,
    /// For the functions that connect, use or revoke OAuth grants.
    pub authorization_servers: Option<MakeAuthorizationServers>,
    pub agent: Option<MakeAgent>,
    pub integrations: Option<fn(App) -> App>,
    /// The whole router of a function that serves files built into the binary.
    pub files: Option<MakeFiles>,
    /// The organisations' documents, as the row uses them.
    pub documents: Option<MakeDocuments>,
    /// The parsers of documents' originals, for the indexer alone.
    pub parser: Option<fn() -> Arc<dyn Parser>>,
    /// What the binary does first, before its runtime starts: the indexer, started as a
    /// parser child by itself, reads one file and exits (`knowledge_ingest::isolated`).
    pub first: Option<fn()>,
    /// How it runs (`crate::run`).
    pub entry: Entry,
}

impl Parts {
    /// The parts `function` uses. Meant for compile time (`const PARTS: Parts = Parts::of(..)`):
    /// called at run time (the tests do) it links every part.
    pub const fn of(function: Function) -> Self {
        let uses = function.parts;
        Self {
            function,
            identity_provider: match uses.identity {
                Identity::SignIn => Some(identity_provider),
                _ => None,
            },
            identity_discovery: match uses.identity {
                Identity::Discovery => Some(identity_discovery),
                _ => None,
            },
            authorization_servers: match uses.integrations {
                Integrations::Tools | Integrations::Grants => Some(authorization_servers),
                Integrations::None | Integrations::Reach => None,
            },
            agent: if uses.agent { Some(agent) } else { None },
            integrations: match uses.integrations {
                Integrations::Reach => Some(App::with_integration_reach),
                Integrations::Tools => Some(App::with_stored_integrations),
                // Grants need only the sealer, which the row's secrets give.
                Integrations::None | Integrations::Grants => None,
            },
            files: match function.serves {
                Serves::Document => Some(openapi),
                Serves::AppFiles => Some(web),
                _ => None,
            },
            documents: match uses.documents {
                DocumentsUse::None => None,
                DocumentsUse::Read => Some(documents::read),
                DocumentsUse::Manage => Some(documents::manage),
                DocumentsUse::Index => Some(documents::index),
            },
            parser: match uses.documents {
                DocumentsUse::Index => Some(documents::parser),
                _ => None,
            },
            first: match uses.documents {
                DocumentsUse::Index => Some(knowledge_ingest::isolated::serve_if_child),
                _ => None,
            },
            entry: match function.serves {
                Serves::Routes(_) => |p| Box::pin(crate::run_routes(p)),
                Serves::Scim => |p| Box::pin(crate::run_scim(p)),
                Serves::Document | Serves::AppFiles => |p| Box::pin(crate::run_files(p)),
                Serves::Task(_) => |p| Box::pin(crate::run_task(p)),
                Serves::Sweep => |p| Box::pin(crate::run_sweep(p)),
                Serves::Indexer => |p| Box::pin(crate::run_indexer(p)),
            },
        }
    }
}

fn identity_provider(egress: Egress) -> Result<Arc<dyn IdentityProvider>, ConfigError> {
    Ok(Arc::new(open_id_connect(egress)?))
}

fn identity_discovery(egress: Egress) -> Result<Arc<dyn IdentityDiscovery>, ConfigError> {
    Ok(Arc::new(open_id_connect(egress)?))
}

fn open_id_connect(egress: Egress) -> Result<knowledge_oidc::OpenIdConnect, ConfigError> {
    knowledge_oidc::OpenIdConnect::new(egress).map_err(|e| ConfigError::IdentityProvider(e.into()))
}

fn authorization_servers(egress: Egress) -> Result<Arc<dyn AuthorizationServers>, ConfigError> {
    let http = knowledge_oauth::BoundedHttp::new(egress)
        .map_err(|e| ConfigError::AuthorizationServers(e.into()))?;
    Ok(Arc::new(knowledge_oauth::HttpAuthorizationServers::new(
        http,
    )))
}

fn agent(var: &dyn Fn(&str) -> Option<String>) -> Result<Arc<dyn Agent>, ConfigError> {
    let configured = knowledge_providers::agent_from_env(var).map_err(ConfigError::Agent)?;
    tracing::info!(agent = %configured.description, "agent configured");
    Ok(configured.agent)
}

/// The OpenAPI document, built into the binary: no settings, no clients.
fn openapi(_var: &dyn Fn(&str) -> Option<String>) -> axum::Router {
    knowledge_http::openapi_function(knowledge_assembly::functions::document_json().into())
}

/// The browser app's files, built into the binary, under a policy that lets the page send
/// documents' originals to the bucket the admin function pre-signs them for (the bucket and
/// region its row's environment and Lambda give it; the endpoint where one is set, as the SDK
/// reads it).
fn web(var: &dyn Fn(&str) -> Option<String>) -> axum::Router {
    let bucket = var(crate::config::DOCUMENTS_BUCKET_ENV);
    let region = var("AWS_REGION").unwrap_or_default();
    let endpoint = var("AWS_ENDPOINT_URL");
    let uploads =
        bucket.and_then(|b| knowledge_s3::uploads_origin(&b, &region, endpoint.as_deref()));
    let files = knowledge_web::Files::Embedded;
    knowledge_http::web_function(knowledge_web::routes(files, uploads.as_deref()))
}
