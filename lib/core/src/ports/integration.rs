//! The integration ports: sources of tools for the agent, which of them each member reaches,
//! and whether a member reaches any, which is all that creating a session asks.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use async_trait::async_trait;
use serde::Serialize;
use serde_json::Value;

use crate::domain::{ToolHints, ToolRule};
use crate::ids::{OrgId, UserId};

/// A tool an integration offers the agent.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolSpec {
    /// Unique among the organisation's tools; `[A-Za-z0-9_-]`, at most 64 characters, so that
    /// every provider's tool-calling API accepts it.
    pub name: String,
    pub description: String,
    /// JSON Schema of the tool's input object.
    pub input_schema: Value,
    /// What its server says of it (MCP's annotations), from which its default policy comes
    /// ([`crate::domain::ToolHints::default_policy`]); not sent to the model.
    #[serde(skip)]
    pub hints: ToolHints,
}

#[derive(Debug, thiserror::Error)]
pub enum IntegrationError {
    /// The tool refused the input or failed on it; the text is shown to the agent as the tool's
    /// result, so it must not hold secrets.
    #[error("{0}")]
    Invalid(String),
    /// The integration cannot be reached now; the workflow retries the step.
    #[error("integration unavailable: {0}")]
    Unavailable(String),
    /// The run was cancelled while the call was in flight; the integration has been told.
    #[error("the tool call was cancelled")]
    Cancelled,
    /// The integration's server is at an address the deployment never connects to: not
    /// retried, and the admin's to fix. Nothing was sent.
    /// (Its text is shown to the agent: the refusal is in it, not behind `source`.)
    #[error("the integration's server is refused: {0}")]
    Refused(super::DestinationRefused),
}

/// Resolves when the run a call belongs to is cancelled. An integration that can stop a call
/// midway selects on it, tells the remote end, and returns [`IntegrationError::Cancelled`].
pub type CancelSignal<'a> = Pin<&'a mut (dyn Future<Output = ()> + Send)>;

/// A connected source of tools: the built-in docs search, remote MCP servers.
#[async_trait]
pub trait Integration: Send + Sync {
    /// Short name for logs and answers, such as `docs`.
    fn name(&self) -> &str;
    /// Whether `tool` is this integration's, when that shows from the name alone (a prefix);
    /// `None` (the default) means the tools must be listed to know. Saves a remote listing
    /// for every integration but the one that runs the call.
    fn owns(&self, _tool: &str) -> Option<bool> {
        None
    }
    async fn tools(&self) -> Result<Vec<ToolSpec>, IntegrationError>;
    /// The organisation admin's rule for `tool` (as offered), if any; none by default (the
    /// built-in integrations', whose tools always run).
    fn tool_rule(&self, _tool: &str) -> Option<ToolRule> {
        None
    }
    /// Runs `tool` with `input`, unless `cancelled` resolves first. Side effects are the
    /// integration's own; the workflow records the result once however often this runs.
    async fn call(
        &self, tool: &str, input: &Value, cancelled: CancelSignal<'_>,
    ) -> Result<Value, IntegrationError>;
}

/// Whether a member reaches any integration, answered without building one: creating a session
/// only tells the member that the agent has no tools, so a process that does nothing else with
/// the integrations need not hold the clients that reach them.
#[async_trait]
pub trait IntegrationReach: Send + Sync {
    /// Whether `user` reaches at least one integration in `org`: exactly when
    /// [`Integrations::connected`] of the same adapter would return some. Errors: as
    /// `connected`'s (`Unavailable` when what lists them fails).
    async fn reaches_any(&self, org: &OrgId, user: &UserId) -> Result<bool, IntegrationError>;
}

/// Which integrations each organisation has connected, with the member's own credentials.
/// Every such adapter also answers [`IntegrationReach`], so it serves where only that is asked.
#[async_trait]
pub trait Integrations: IntegrationReach {
    /// The integrations `user` reaches in `org`, in a stable order; empty when none.
    async fn connected(
        &self, org: &OrgId, user: &UserId,
    ) -> Result<Vec<Arc<dyn Integration>>, IntegrationError>;
}
