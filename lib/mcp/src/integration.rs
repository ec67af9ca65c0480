//! One remote MCP server (streamable HTTP) as an [`Integration`]: a session per operation.

use std::time::Duration;

use async_trait::async_trait;
use knowledge_core::ports::{CancelSignal, Integration, IntegrationError, ToolSpec};
use knowledge_egress::Egress;
use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig,
    ClientRequest, ContentBlock, Implementation, JsonObject, ServerResult, Tool,
};
use rmcp::service::{PeerRequestOptions, RoleClient, RunningService, ServiceError};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::Value;
use tokio::sync::oneshot::error::RecvError;
use tokio::time::{Instant, sleep_until, timeout, timeout_at};

use crate::names::unique_names;

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

/// A remote MCP server reached over streamable HTTP. Its tools are offered as
/// `<name>_<tool>` (see [`crate::exposed_tool_name`]); the original names are used to call
/// them. Holds no connection: each operation opens its own session and closes it.
pub struct McpIntegration {
    name: String,
    url: String,
    token: Option<String>,
    timeouts: Timeouts,
    http: McpHttp,
}

impl std::fmt::Debug for McpIntegration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpIntegration")
            .field("name", &self.name)
            .field("url", &self.url)
            .field("token", &self.token.as_ref().map(|_| ".."))
            .field("timeouts", &self.timeouts)
            .finish()
    }
}

impl McpIntegration {
    /// `name` is the integration's (it prefixes the tool names), `url` the server's MCP
    /// endpoint, and `token`, when given, is sent as `Authorization: Bearer <token>` on every
    /// request. The token never appears in errors, logs or `Debug` output.
    pub fn new(
        name: impl Into<String>, url: impl Into<String>, token: Option<String>, timeouts: Timeouts,
        http: McpHttp,
    ) -> Self {
        Self {
            name: name.into(),
            url: url.into(),
            token,
            timeouts,
            http,
        }
    }

    fn unavailable(&self, detail: impl std::fmt::Display) -> IntegrationError {
        IntegrationError::Unavailable(format!("MCP server of integration {}: {detail}", self.name))
    }

    /// Opens a session: connects and completes the `initialize` handshake within
    /// `timeouts.connect`. Errors: `Refused` for a server at an address the deployment never
    /// connects to (nothing is sent), `Unavailable`.
    async fn open(&self) -> Result<Session, IntegrationError> {
        let url = reqwest::Url::parse(&self.url)
            .map_err(|e| self.unavailable(format_args!("its URL does not parse: {e}")))?;
        // rmcp's errors do not keep their causes: judge the destination first, so a refusal is
        // told as one. The client's resolver judges the address connected to again.
        (self.http.egress.check_resolved(&url).await).map_err(IntegrationError::Refused)?;
        let mut config = StreamableHttpClientTransportConfig::with_uri(self.url.as_str());
        if let Some(token) = &self.token {
            config = config.auth_header(token.as_str());
        }
        let transport =
            StreamableHttpClientTransport::with_client(self.http.client.clone(), config);
        let client = ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("knowledge", env!("CARGO_PKG_VERSION")),
        );
        match timeout(self.timeouts.connect, client.serve(transport)).await {
            Ok(Ok(session)) => Ok(session),
            Ok(Err(e)) => Err(self.unavailable(format_args!("opening the session failed: {e}"))),
            Err(_) => Err(self.unavailable(format_args!(
                "no session within {:?}",
                self.timeouts.connect
            ))),
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
mod tests {
    use rmcp::model::{ErrorCode, ErrorData};
    use serde_json::json;

    use super::*;

    fn result(value: Value) -> CallToolResult {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn structured_content_is_the_output_when_present() {
        let r = result(json!({
            "content": [{"type": "text", "text": "{\"n\": 1}"}],
            "structuredContent": {"n": 1}
        }));
        assert_eq!(tool_output(r).unwrap(), json!({"n": 1}));
    }

    #[test]
    fn without_structured_content_the_content_list_is_the_output() {
        let r = result(json!({"content": [
            {"type": "text", "text": "first"},
            {"type": "image", "data": "AAAA", "mimeType": "image/png"}
        ]}));
        let output = tool_output(r).unwrap();
        assert_eq!(output[0], "first");
        assert_eq!(output[1]["type"], "image");
        assert_eq!(output[1]["mimeType"], "image/png");
    }

    #[test]
    fn an_error_result_is_invalid_with_its_text() {
        let r = result(json!({
            "content": [{"type": "text", "text": "no such page"}, {"type": "text", "text": "try again"}],
            "isError": true
        }));
        match tool_output(r) {
            Err(IntegrationError::Invalid(m)) => assert_eq!(m, "no such page\ntry again"),
            other => panic!("expected Invalid, got {other:?}"),
        }
        let silent = result(json!({"content": [], "isError": true}));
        assert!(matches!(
            tool_output(silent),
            Err(IntegrationError::Invalid(_))
        ));
    }

    fn http() -> McpHttp {
        McpHttp::new(Egress::ANYWHERE).unwrap()
    }

    #[test]
    fn a_json_rpc_error_is_invalid_and_a_transport_failure_unavailable() {
        let integration = McpIntegration::new(
            "wiki",
            "http://127.0.0.1:9/mcp",
            None,
            Timeouts::default(),
            http(),
        );
        let rpc = ServiceError::McpError(ErrorData::new(
            ErrorCode::INVALID_PARAMS,
            "bad page id",
            None,
        ));
        match integration.failed(rpc) {
            IntegrationError::Invalid(m) => assert_eq!(m, "bad page id"),
            other => panic!("expected Invalid, got {other:?}"),
        }
        assert!(matches!(
            integration.failed(ServiceError::TransportClosed),
            IntegrationError::Unavailable(_)
        ));
    }

    #[test]
    fn the_input_must_be_an_object_or_null() {
        assert_eq!(arguments(&json!({"q": 1})).unwrap().unwrap()["q"], 1);
        assert!(arguments(&Value::Null).unwrap().is_none());
        assert!(matches!(
            arguments(&json!([1])),
            Err(IntegrationError::Invalid(_))
        ));
    }

    #[test]
    fn the_token_is_not_in_the_debug_output() {
        let integration = McpIntegration::new(
            "wiki",
            "https://wiki.example/mcp",
            Some("secret-token".to_owned()),
            Timeouts::default(),
            http(),
        );
        let shown = format!("{integration:?}");
        assert!(shown.contains("wiki.example") && !shown.contains("secret-token"));
    }
}
