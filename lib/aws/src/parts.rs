//! The optional parts of a function's binary: the identity providers' client, the agent's
//! provider, the MCP client, the app's files, the OpenAPI document, and its own routes. Each
//! function links only those it uses: its `main` ([`crate::endpoint_main!`],
//! [`crate::task_main!`]) evaluates [`Parts::of`] at compile time, so the constant it passes on
//! holds pointers to the parts that function needs and nothing names the others, which the
//! linker then leaves out.

use std::sync::Arc;

use knowledge_app::App;
use knowledge_core::ports::{Agent, IdentityDiscovery, IdentityProvider};
use knowledge_egress::Egress;
use knowledge_http::{Endpoint, Routes};

use crate::{ConfigError, Function};

/// Builds the agent from its settings, read through `var` (the API key from its secret).
pub type MakeAgent = fn(&dyn Fn(&str) -> Option<String>) -> Result<Arc<dyn Agent>, ConfigError>;

/// Builds the identity providers' client, reaching them under the deployment's egress guard.
pub type MakeIdentityProvider = fn(Egress) -> Result<Arc<dyn IdentityProvider>, ConfigError>;

/// Builds the same client for their discovery alone (no sign-in linked).
pub type MakeIdentityDiscovery = fn(Egress) -> Result<Arc<dyn IdentityDiscovery>, ConfigError>;

/// What a function builds beyond the store, the workflow and its keys; `None` where it has no
/// use for a part.
#[derive(Clone, Copy)]
pub struct Parts {
    /// The function these are the parts of.
    pub function: Function,
    pub identity_provider: Option<MakeIdentityProvider>,
    pub identity_discovery: Option<MakeIdentityDiscovery>,
    pub agent: Option<MakeAgent>,
    pub integrations: Option<fn(App) -> App>,
    /// The whole router of a function that serves files built into the binary.
    pub files: Option<fn() -> axum::Router>,
    /// An endpoint function's routes (none for a Task).
    pub routes: Routes,
}

impl Parts {
    /// The parts `function` uses. Meant for compile time (`const PARTS: Parts = Parts::of(..)`):
    /// called at run time (the tests do) it links every part.
    pub const fn of(function: Function) -> Self {
        Self {
            function,
            identity_provider: if function.signs_in() {
                Some(identity_provider)
            } else {
                None
            },
            identity_discovery: if function.uses_sso() && !function.signs_in() {
                Some(identity_discovery)
            } else {
                None
            },
            agent: if function.uses_agent() {
                Some(agent)
            } else {
                None
            },
            integrations: if function.only_asks_integration_reach() {
                Some(App::with_integration_reach)
            } else if function.uses_integrations() {
                Some(App::with_stored_integrations)
            } else {
                None
            },
            files: match function {
                Function::Endpoint(Endpoint::OpenApi) => Some(openapi),
                Function::Endpoint(Endpoint::Web) => Some(web),
                _ => None,
            },
            routes: match function {
                Function::Endpoint(endpoint) => endpoint.routes(),
                Function::Task(_) | Function::Sweep => Routes::NONE,
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

fn agent(var: &dyn Fn(&str) -> Option<String>) -> Result<Arc<dyn Agent>, ConfigError> {
    let configured = knowledge_providers::agent_from_env(var).map_err(ConfigError::Agent)?;
    tracing::info!(agent = %configured.description, "agent configured");
    Ok(configured.agent)
}

/// The OpenAPI document, built into the binary: no settings, no clients.
fn openapi() -> axum::Router {
    knowledge_http::openapi_function()
}

/// The browser app's files, built into the binary.
fn web() -> axum::Router {
    knowledge_http::web_function(knowledge_web::routes(knowledge_web::Files::Embedded))
}
