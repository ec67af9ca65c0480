//! One remote MCP server (streamable HTTP) as an [`Integration`]: a session per operation.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use knowledge_core::domain::{ReconnectReason, ToolRule};
use knowledge_core::ports::{CancelSignal, Integration, IntegrationError, ToolSpec};
use knowledge_core::vault::{Access, GrantAt, Vault, VaultError};
use knowledge_egress::Egress;
use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig,
    ClientRequest, ContentBlock, Implementation, JsonObject, ServerResult, Tool,
};
use rmcp::service::{
    ClientInitializeError, PeerRequestOptions, RoleClient, RunningService, ServiceError,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::{
    AuthRequiredError, StreamableHttpClientTransportConfig,
};
use serde_json::Value;
use tokio::sync::oneshot::error::RecvError;
use tokio::time::{Instant, sleep_until, timeout, timeout_at};

use crate::names::{hints, unique_names};

/// How long an integration waits for its server. A call spends at most `connect` opening the
/// session plus `request` on its requests, plus a few seconds closing it or telling the server
/// of a cancellation: the defaults keep that under the workflow's 60 s RunTool timeout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// Bounds opening a session: the HTTP connection and the `initialize` handshake.
    pub connect: Duration,
    /// Bounds the requests of one operation together: listing the tools, and in a call, also
    /// the `tools/call` itself.
    pub request: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            connect: Duration::from_secs(10),
            request: Duration::from_secs(45),
        }
    }
}

/// Bounds closing a session (the HTTP DELETE) and sending a cancellation notification.
const NOTICE_WITHIN: Duration = Duration::from_secs(2);

type Session = RunningService<RoleClient, ClientConfig>;

/// The HTTP client every MCP server is reached with, under the deployment's [`Egress`]: no
/// redirects, no proxy, and where private destinations are refused, none is connected to.
/// Cheap to clone (one client, shared).
#[derive(Clone)]
pub struct McpHttp {
    client: reqwest::Client,
    egress: Egress,
}

impl McpHttp {
    /// Errors: the TLS stack cannot be set up.
    pub fn new(egress: Egress) -> Result<Self, reqwest::Error> {
        let client = egress.client_builder().build()?;
        Ok(Self { client, egress })
    }
}

/// How requests to a server are authorized.
#[derive(Clone, Default)]
pub enum Credential {
    /// None: the server is open to the service.
    #[default]
    None,
    /// A bearer token a member pasted.
    Bearer(String),
    /// An OAuth grant held in the vault: refreshed (once, whoever asks) and tried again when
    /// the server refuses its token.
    Grant(Arc<GrantCredential>),
}

/// An access token from the vault, and where its grant is kept.
pub struct GrantCredential {
    vault: Arc<Vault>,
    at: GrantAt,
    access: Mutex<Access>,
}

impl GrantCredential {
    pub fn new(vault: Arc<Vault>, at: GrantAt, access: Access) -> Self {
        Self {
            vault,
            at,
            access: Mutex::new(access),
        }
    }

    fn current(&self) -> Access {
        self.access.lock().expect("the access token's lock").clone()
    }
}

/// A remote MCP server reached over streamable HTTP. Its tools are offered as
/// `<name>_<tool>` (see [`crate::exposed_tool_name`]); the original names are used to call
/// them. Holds no connection: each operation opens its own session and closes it.
pub struct McpIntegration {
    name: String,
    url: String,
    credential: Credential,
    timeouts: Timeouts,
    http: McpHttp,
    /// The admin's rules for its tools, by the name offered.
    rules: BTreeMap<String, ToolRule>,
}

impl std::fmt::Debug for McpIntegration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let credential = match &self.credential {
            Credential::None => "none",
            Credential::Bearer(_) => "bearer",
            Credential::Grant(_) => "grant",
        };
        f.debug_struct("McpIntegration")
            .field("name", &self.name)
            .field("url", &self.url)
            .field("credential", &credential)
            .field("timeouts", &self.timeouts)
            .finish()
    }
}

/// Why a session did not open.
enum NotOpened {
    /// The server answered 401: the token is missing, expired or revoked.
    Unauthorized,
    Failed(IntegrationError),
}

/// Whether the server refused the session for want of a valid token (a 401): the transport's
/// error (which rmcp keeps beside the initialize error, not as its source) or a cause of it is
/// rmcp's `AuthRequiredError`.
fn unauthorized(error: &ClientInitializeError) -> bool {
    let ClientInitializeError::TransportError { error, .. } = error else {
        return false;
    };
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(error.error.as_ref());
    while let Some(e) = cause {
        if e.is::<AuthRequiredError>() {
            return true;
        }
        cause = e.source();
    }
    false
}

impl McpIntegration {
    /// `name` is the integration's (it prefixes the tool names), `url` the server's MCP
    /// endpoint, and `credential` authorizes every request (as `Authorization: Bearer`). No
    /// token appears in errors, logs or `Debug` output.
    pub fn new(
        name: impl Into<String>, url: impl Into<String>, credential: Credential,
        timeouts: Timeouts, http: McpHttp,
    ) -> Self {
        Self {
            rules: BTreeMap::new(),
            name: name.into(),
            url: url.into(),
            credential,
            timeouts,
            http,
        }
    }

    /// The same, under the admin's `rules` for its tools.
    pub fn with_rules(mut self, rules: BTreeMap<String, ToolRule>) -> Self {
        self.rules = rules;
        self
    }

    fn unavailable(&self, detail: impl std::fmt::Display) -> IntegrationError {
        IntegrationError::Unavailable(format!("MCP server of integration {}: {detail}", self.name))
    }

    /// Opens a session with the credential. A grant whose token the server refuses is
    /// refreshed (or a newer generation taken) and tried once more; refused again, it needs a
    /// reconnect. Errors: `Refused` for a server at an address the deployment never connects
    /// to (nothing is sent); `Invalid` when the connection needs the member to connect again
    /// (its text tells the agent so); `Unavailable`.
    async fn open(&self) -> Result<Session, IntegrationError> {
        let grant = match &self.credential {
            Credential::None => return self.opened(self.open_with(None).await),
            Credential::Bearer(token) => return self.opened(self.open_with(Some(token)).await),
            Credential::Grant(grant) => grant,
        };
        let access = grant.current();
        match self.open_with(Some(&access.token)).await {
            Err(NotOpened::Unauthorized) => {}
            other => return self.opened(other),
        }
        let fresh = (grant
            .vault
            .after_rejection(&grant.at, access.generation)
            .await)
            .map_err(|e| self.vault_error(e))?;
        *grant.access.lock().expect("the access token's lock") = fresh.clone();
        match self.open_with(Some(&fresh.token)).await {
            Err(NotOpened::Unauthorized) => {
                let reason = ReconnectReason::TokenRejected;
                grant
                    .vault
                    .needs_reconnect(&grant.at, fresh.generation, reason)
                    .await;
                Err(self.vault_error(VaultError::NeedsReconnect(reason)))
            }
            other => self.opened(other),
        }
    }

    fn opened(&self, opened: Result<Session, NotOpened>) -> Result<Session, IntegrationError> {
        opened.map_err(|e| match e {
            NotOpened::Unauthorized => self.unavailable("the server refused the credential"),
            NotOpened::Failed(e) => e,
        })
    }

    /// What the vault's refusal means for a call.
    fn vault_error(&self, error: VaultError) -> IntegrationError {
        match error {
            // The vault names the party that failed (the authorization server, the store).
            VaultError::Unavailable(why) => {
                IntegrationError::Unavailable(format!("integration {}: {why}", self.name))
            }
            refused => IntegrationError::Invalid(format!(
                "the connection to {} is not usable ({refused}); the member must connect it \
                 again under Connections",
                self.name
            )),
        }
    }

    /// Opens a session sending `token`: connects and completes the `initialize` handshake
    /// within `timeouts.connect`.
    async fn open_with(&self, token: Option<&str>) -> Result<Session, NotOpened> {
        let url = reqwest::Url::parse(&self.url).map_err(|e| {
            NotOpened::Failed(self.unavailable(format_args!("its URL does not parse: {e}")))
        })?;
        // rmcp's errors do not keep their causes: judge the destination first, so a refusal is
        // told as one. The client's resolver judges the address connected to again.
        (self.http.egress.check_resolved(&url).await)
            .map_err(|e| NotOpened::Failed(IntegrationError::Refused(e)))?;
        let mut config = StreamableHttpClientTransportConfig::with_uri(self.url.as_str());
        if let Some(token) = token {
            config = config.auth_header(token);
        }
        let transport =
            StreamableHttpClientTransport::with_client(self.http.client.clone(), config);
        let client = ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("knowledge", env!("CARGO_PKG_VERSION")),
        );
        match timeout(self.timeouts.connect, client.serve(transport)).await {
            Ok(Ok(session)) => Ok(session),
            Ok(Err(e)) if unauthorized(&e) => Err(NotOpened::Unauthorized),
            Ok(Err(e)) => Err(NotOpened::Failed(
                self.unavailable(format_args!("opening the session failed: {e}")),
            )),
            Err(_) => Err(NotOpened::Failed(self.unavailable(format_args!(
                "no session within {:?}",
                self.timeouts.connect
            )))),
        }
    }

    /// Ends the session (best effort, bounded): the server may drop its state at once.
    async fn close(mut session: Session) {
        if let Err(e) = session.close_with_timeout(NOTICE_WITHIN).await {
            tracing::debug!(error = %e, "closing an MCP session failed");
        }
    }

    /// Every tool of the server, each paired with its exposed name, by `deadline`.
    async fn list(
        &self, session: &Session, deadline: Instant,
    ) -> Result<Vec<(String, Tool)>, IntegrationError> {
        let tools = match timeout_at(deadline, session.list_all_tools()).await {
            Ok(Ok(tools)) => tools,
            Ok(Err(e)) => return Err(self.unavailable(format_args!("listing tools failed: {e}"))),
            Err(_) => return Err(self.unavailable("no tool list in time")),
        };
        Ok(unique_names(&self.name, tools, |t| t.name.as_ref()))
    }

    /// Within an open session: resolves `tool`, sends `tools/call` and waits for its result,
    /// unless `cancelled` resolves or `deadline` passes first; then the server is sent
    /// `notifications/cancelled` for the request.
    async fn call_in(
        &self, session: &Session, tool: &str, arguments: Option<JsonObject>,
        mut cancelled: CancelSignal<'_>,
    ) -> Result<Value, IntegrationError> {
        let deadline = Instant::now() + self.timeouts.request;
        let tools = tokio::select! {
            biased;
            () = cancelled.as_mut() => return Err(IntegrationError::Cancelled),
            tools = self.list(session, deadline) => tools?,
        };
        let Some((_, remote)) = tools.into_iter().find(|(exposed, _)| exposed == tool) else {
            return Err(IntegrationError::Invalid(format!(
                "integration {} has no tool named {tool:?}",
                self.name
            )));
        };
        let mut params = CallToolRequestParams::new(remote.name);
        if let Some(arguments) = arguments {
            params = params.with_arguments(arguments);
        }
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let mut handle = session
            .send_cancellable_request(request, PeerRequestOptions::no_options())
            .await
            .map_err(|e| self.unavailable(format_args!("sending the call failed: {e}")))?;

        let timed_out = tokio::select! {
            biased;
            () = cancelled.as_mut() => false,
            response = &mut handle.rx => return self.answered(response),
            () = sleep_until(deadline) => true,
        };
        let reason = if timed_out {
            "the call took too long"
        } else {
            "the run was cancelled"
        };
        let id = handle.id.clone();
        match timeout(NOTICE_WITHIN, handle.cancel(Some(reason.to_owned()))).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!(integration = %self.name, %id, error = %e,
                "could not tell the MCP server that a call was cancelled"),
            Err(_) => tracing::warn!(integration = %self.name, %id,
                "telling the MCP server that a call was cancelled took too long"),
        }
        if timed_out {
            Err(self.unavailable(format_args!("no result within {:?}", self.timeouts.request)))
        } else {
            Err(IntegrationError::Cancelled)
        }
    }

    /// What the server answered to `tools/call` (`Err` when the session ended first).
    fn answered(
        &self, response: Result<Result<ServerResult, ServiceError>, RecvError>,
    ) -> Result<Value, IntegrationError> {
        match response {
            Ok(Ok(ServerResult::CallToolResult(result))) => tool_output(result),
            Ok(Ok(_)) => Err(self.unavailable("tools/call answered with another kind of result")),
            Ok(Err(e)) => Err(self.failed(e)),
            Err(_) => Err(self.unavailable("the session ended before the call's result")),
        }
    }

    /// A failed `tools/call`: the server's JSON-RPC error (an unknown tool, invalid
    /// arguments) is the tool's answer; anything else means the server is not reachable.
    fn failed(&self, error: ServiceError) -> IntegrationError {
        match error {
            ServiceError::McpError(data) => IntegrationError::Invalid(data.message.into_owned()),
            other => self.unavailable(format_args!("the call failed: {other}")),
        }
    }
}

/// The call's arguments: `input` must be a JSON object (or null, for none).
fn arguments(input: &Value) -> Result<Option<JsonObject>, IntegrationError> {
    match input {
        Value::Object(map) => Ok(Some(map.clone())),
        Value::Null => Ok(None),
        _ => Err(IntegrationError::Invalid(
            "the tool's input must be a JSON object".to_owned(),
        )),
    }
}

/// What a tool answered: with `isError`, `Invalid` with its text; otherwise its
/// `structuredContent` when present, else its content list, text items as their text.
fn tool_output(result: CallToolResult) -> Result<Value, IntegrationError> {
    if result.is_error == Some(true) {
        let text: Vec<&str> = result
            .content
            .iter()
            .filter_map(|c| c.as_text().map(|t| t.text.as_str()))
            .collect();
        let message = if text.is_empty() {
            "the tool failed without saying why".to_owned()
        } else {
            text.join("\n")
        };
        return Err(IntegrationError::Invalid(message));
    }
    if let Some(structured) = result.structured_content {
        return Ok(structured);
    }
    Ok(Value::Array(
        result.content.into_iter().map(content_value).collect(),
    ))
}

fn content_value(content: ContentBlock) -> Value {
    match content {
        ContentBlock::Text(text) => Value::String(text.text),
        other => serde_json::to_value(other).unwrap_or(Value::Null),
    }
}

#[async_trait]
impl Integration for McpIntegration {
    fn name(&self) -> &str {
        &self.name
    }

    /// Every tool this server offers is `<name>_…`, and integration names hold no `_`, so the
    /// prefix tells whose a tool is without a session.
    fn owns(&self, tool: &str) -> Option<bool> {
        Some(
            tool.strip_prefix(self.name.as_str())
                .is_some_and(|rest| rest.starts_with('_')),
        )
    }

    fn tool_rule(&self, tool: &str) -> Option<ToolRule> {
        self.rules.get(tool).copied()
    }

    /// Errors: `Unavailable` when the server cannot be reached, refuses the session (say, a
    /// missing or wrong token) or does not list its tools in time.
    async fn tools(&self) -> Result<Vec<ToolSpec>, IntegrationError> {
        let session = self.open().await?;
        let listed = self
            .list(&session, Instant::now() + self.timeouts.request)
            .await;
        Self::close(session).await;
        Ok(listed?
            .into_iter()
            .map(|(name, tool)| ToolSpec {
                name,
                description: tool
                    .description
                    .map(String::from)
                    .or(tool.title)
                    .unwrap_or_default(),
                input_schema: Value::Object(tool.input_schema.as_ref().clone()),
                hints: hints(tool.annotations.as_ref()),
            })
            .collect())
    }

    /// Errors: `Invalid` for an unknown tool, an input that is not an object, a result with
    /// `isError`, or the server's JSON-RPC error for the call; `Unavailable` when the server
    /// cannot be reached or does not answer in time (a timed-out call is cancelled on the
    /// server first); `Cancelled` when `cancelled` resolved first, after the server was sent
    /// `notifications/cancelled` for a call in flight (bounded: a server that cannot be told
    /// does not hold the cancellation up). Not idempotent: a repeated call runs the tool again.
    async fn call(
        &self, tool: &str, input: &Value, mut cancelled: CancelSignal<'_>,
    ) -> Result<Value, IntegrationError> {
        let arguments = arguments(input)?;
        let session = tokio::select! {
            biased;
            () = cancelled.as_mut() => return Err(IntegrationError::Cancelled),
            session = self.open() => session?,
        };
        let output = self.call_in(&session, tool, arguments, cancelled).await;
        Self::close(session).await;
        output
    }
}

#[cfg(test)]
mod tests;
