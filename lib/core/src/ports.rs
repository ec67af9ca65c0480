//! Ports: what the use cases need from storage, the workflow engine and the agent.
//!
//! The storage port is shaped for DynamoDB: every method is at most one request there (a
//! GetItem, a Query on one partition with a key range, a conditional UpdateItem, or a
//! TransactWriteItems of at most 100 items). Nothing needs a scan or a join, and every session
//! method takes a [`SessionKey`], so another tenant's data cannot even be addressed.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::Serialize;
use serde_json::Value;

use crate::clock::Timestamp;
use crate::domain::{
    AuditEntry, Event, EventKind, IntegrationConfig, Member, MemberData, Org, Session,
    SessionSummary, Usage,
};
use crate::ids::{OrgId, RunId, SessionKey, UserId};

/// Failures of a storage adapter.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A conditional write found another version than expected: re-read and try again.
    #[error("the record changed concurrently")]
    Conflict,
    /// The record to change does not exist (a session deleted meanwhile, say).
    #[error("the record does not exist")]
    Gone,
    /// The record to create exists already.
    #[error("the record exists already")]
    AlreadyExists,
    /// The backend failed; the text is for logs, never for clients.
    #[error("storage backend: {0}")]
    Backend(String),
}

/// Spend to add to the session's organisation in the same transaction as a commit, so that a
/// turn's cost is recorded exactly when its answer is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Charge {
    /// Calendar month (`YYYY-MM`, UTC) the spend counts against.
    pub month: String,
    /// Millionths of a US dollar.
    pub micros: u64,
}

/// A sliding-window rate-limit record: the instants of the admitted requests still inside the
/// longest window, oldest first, and its optimistic-concurrency version (0 when absent).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RateWindow {
    pub hits: Vec<Timestamp>,
    pub version: u64,
}

/// The monthly usage counters refused a query; carries the counters as they stood.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UsageRefused(pub Usage);

/// Durable storage of organisations, members, sessions, events and limit counters.
#[async_trait]
pub trait Store: Send + Sync {
    /// Creates an organisation or replaces its settings; its SCIM token hash is kept.
    async fn put_org(&self, org: &Org) -> Result<(), StoreError>;
    async fn get_org(&self, org: &OrgId) -> Result<Option<Org>, StoreError>;
    /// Replaces the organisation's SCIM token hash (so the previous token stops working) and
    /// writes `audit`, all or nothing. Errors: `Gone` when the organisation does not exist.
    async fn set_scim_token(
        &self,
        org: &OrgId,
        sha256: &str,
        audit: &AuditEntry,
    ) -> Result<(), StoreError>;

    /// Creates a membership (at version 1) and writes `audit`; with a profile, also claims its
    /// `userName` in the organisation; all or nothing, so of concurrent creates of one
    /// `userName` exactly one succeeds.
    /// Errors: `AlreadyExists` when the user is a member already or the `userName` is claimed.
    async fn create_member(&self, member: &Member, audit: &AuditEntry) -> Result<(), StoreError>;
    async fn get_member(&self, org: &OrgId, user: &UserId) -> Result<Option<Member>, StoreError>;
    /// The member whose profile's [`crate::domain::Profile::user_name_key`] is `key`.
    async fn find_member_by_user_name(
        &self,
        org: &OrgId,
        key: &str,
    ) -> Result<Option<Member>, StoreError>;
    /// Every member of the organisation, ordered by user id (a stable order for paging).
    async fn list_members(&self, org: &OrgId) -> Result<Vec<Member>, StoreError>;
    /// Replaces `previous` by `next` (the same member, `next.version == previous.version + 1`),
    /// moves the `userName` claim when it changed, and writes `audit`, all or nothing.
    /// Errors: `Gone` (no longer a member), `Conflict` (the stored version is not
    /// `previous.version`), `AlreadyExists` (the new `userName` is another member's).
    async fn update_member(
        &self,
        previous: &Member,
        next: &Member,
        audit: &AuditEntry,
    ) -> Result<(), StoreError>;
    /// Removes the membership with its profile, its `userName` claim and every [`MemberData`]
    /// item of the member, and writes `audit`, in one transaction. `Ok(false)`, writing nothing,
    /// when the user is not a member.
    async fn remove_member(
        &self,
        org: &OrgId,
        user: &UserId,
        audit: &AuditEntry,
    ) -> Result<bool, StoreError>;
    /// Stores a member data item, replacing the one of the same kind and name, and moves the
    /// member's version, so a concurrent removal either removes it too or retries.
    /// Callers keep a member under [`crate::domain::MEMBER_DATA_LIMIT`] items (one credential
    /// per connected integration, one memory document), so their removal fits one transaction.
    /// Errors: `Gone` when the user is not a member.
    async fn put_member_data(
        &self,
        org: &OrgId,
        user: &UserId,
        data: &MemberData,
    ) -> Result<(), StoreError>;
    /// The member's data items, by kind and name.
    async fn list_member_data(
        &self,
        org: &OrgId,
        user: &UserId,
    ) -> Result<Vec<MemberData>, StoreError>;
    /// Connects an integration, or replaces the one of the same name, and writes `audit`, all
    /// or nothing. Callers keep an organisation under [`crate::domain::INTEGRATION_LIMIT`].
    async fn put_integration(
        &self,
        org: &OrgId,
        integration: &IntegrationConfig,
        audit: &AuditEntry,
    ) -> Result<(), StoreError>;
    /// The organisation's integrations, by name.
    async fn list_integrations(&self, org: &OrgId) -> Result<Vec<IntegrationConfig>, StoreError>;
    /// Disconnects the integration and writes `audit`, all or nothing; `Ok(false)`, writing
    /// nothing, when there is none of that name. Members' credentials for it stay until they
    /// are replaced or the member is removed.
    async fn remove_integration(
        &self,
        org: &OrgId,
        name: &str,
        audit: &AuditEntry,
    ) -> Result<bool, StoreError>;

    /// The organisation's newest audit entries, newest first, at most `limit`.
    async fn list_audit(&self, org: &OrgId, limit: usize) -> Result<Vec<AuditEntry>, StoreError>;

    /// Writes a new session with its first events (at most 99: a DynamoDB transaction holds
    /// 100 items) in one transaction.
    /// Errors: `AlreadyExists` when the key is taken.
    async fn create_session(&self, session: &Session, events: &[Event]) -> Result<(), StoreError>;
    async fn get_session(&self, key: &SessionKey) -> Result<Option<Session>, StoreError>;
    /// Writes `session` (whose `version` must be `expected_version + 1`), appends `events` and
    /// adds `charge` to the organisation's usage, all or nothing, only if the stored version is
    /// still `expected_version`. Callers write at most a few events a commit (an agent step's
    /// tool calls, 8 at most), so the DynamoDB transaction stays far under its 100 items.
    /// Errors: `Gone` when the session no longer exists, `Conflict` when its version moved.
    async fn commit_session(
        &self,
        session: &Session,
        expected_version: u64,
        events: &[Event],
        charge: Option<&Charge>,
    ) -> Result<(), StoreError>;
    /// Events with `seq > after`, ascending, at most `limit` of them.
    async fn list_events(
        &self,
        key: &SessionKey,
        after: u64,
        limit: usize,
    ) -> Result<Vec<Event>, StoreError>;
    /// The user's sessions in an organisation, most recently updated first; sessions being
    /// deleted are not listed.
    async fn list_sessions(
        &self,
        user: &UserId,
        org: &OrgId,
        limit: usize,
    ) -> Result<Vec<SessionSummary>, StoreError>;
    /// Removes the session and every event of it; `Ok(false)` when it did not exist. The DynamoDB
    /// adapter pages through the events, so callers first commit the session as `deleting`,
    /// which every writer treats as gone, and the adapter removes the record last. Idempotent:
    /// a removal cut short is finished by calling it again.
    async fn delete_session(&self, key: &SessionKey) -> Result<bool, StoreError>;
    /// Sessions committed as `deleting` whose removal has not finished (a crash cut it short),
    /// at most `limit`, in no particular order. [`Store::list_sessions`] never lists them.
    async fn deleting_sessions(&self, limit: usize) -> Result<Vec<SessionKey>, StoreError>;

    /// The rate-limit record under `key` (empty, version 0, when absent).
    async fn get_rate_window(&self, key: &str) -> Result<RateWindow, StoreError>;
    /// Replaces the record if its version is still `expected_version`; the stored version becomes
    /// `expected_version + 1`. Errors: `Conflict`.
    async fn put_rate_window(
        &self,
        key: &str,
        hits: &[Timestamp],
        expected_version: u64,
        expires_at: Timestamp,
    ) -> Result<(), StoreError>;

    /// Counts one query against the organisation's month if the month is under both `quota`
    /// queries and `cap_micros` spend (`None` is unlimited). Atomic: concurrent callers cannot
    /// together pass a limit. Returns the usage after counting, or the usage that refused it.
    async fn consume_query(
        &self,
        org: &OrgId,
        month: &str,
        quota: Option<u64>,
        cap_micros: Option<u64>,
    ) -> Result<Result<Usage, UsageRefused>, StoreError>;
    async fn get_usage(&self, org: &OrgId, month: &str) -> Result<Usage, StoreError>;
}

/// Starts and signals workflow runs. Narrow on purpose: the engine behind it can change without
/// touching the use cases.
#[async_trait]
pub trait Workflow: Send + Sync {
    /// Starts processing the session's pending turns under `run`. Idempotent per run id: a
    /// retried start of the same run does not start a second one.
    async fn start(&self, key: &SessionKey, run: &RunId) -> Result<(), WorkflowError>;
    /// Tells the engine that `run` was cancelled, so that an in-flight step can be abandoned
    /// early. The cancellation itself is already durable in the store; this is only a hint.
    async fn cancelled(&self, key: &SessionKey, run: &RunId);
}

#[derive(Debug, thiserror::Error)]
#[error("workflow engine: {0}")]
pub struct WorkflowError(pub String);

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
    /// Runs `tool` with `input`, unless `cancelled` resolves first. Side effects are the
    /// integration's own; the workflow records the result once however often this runs.
    async fn call(
        &self,
        tool: &str,
        input: &Value,
        cancelled: CancelSignal<'_>,
    ) -> Result<Value, IntegrationError>;
}

/// Which integrations each organisation has connected, with the member's own credentials.
#[async_trait]
pub trait Integrations: Send + Sync {
    /// The integrations `user` reaches in `org`, in a stable order; empty when none.
    async fn connected(
        &self,
        org: &OrgId,
        user: &UserId,
    ) -> Result<Vec<Arc<dyn Integration>>, IntegrationError>;
}

/// What the agent is asked for one step of a turn.
#[derive(Debug, Clone)]
pub struct AgentRequest {
    pub org: OrgId,
    /// The conversation before this turn's own events, oldest first, ending with the user message
    /// being answered; messages queued behind it are left out.
    pub history: Vec<Event>,
    /// This turn's `tool_use` and `tool_result` events so far, in order.
    pub steps: Vec<Event>,
    /// The organisation's tools; empty when none are connected.
    pub tools: Vec<ToolSpec>,
    /// The agent must answer now, without calling tools: the turn has used its steps or the
    /// organisation its cost cap. The tools are still listed so that the history's tool calls
    /// make sense to the provider.
    pub must_answer: bool,
}

impl AgentRequest {
    /// The text of the user message being answered.
    pub fn question(&self) -> Option<&str> {
        self.history
            .iter()
            .rev()
            .find(|e| e.kind == EventKind::UserMessage)
            .and_then(|e| e.payload.get("text"))
            .and_then(Value::as_str)
    }

    /// The conversation rebuilt from the log for a provider: see [`crate::conversation`].
    pub fn messages(&self) -> Vec<crate::conversation::Message> {
        crate::conversation::rebuild(self.history.iter().chain(&self.steps))
    }
}

/// A tool call the agent asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub tool: String,
    pub input: Value,
}

/// What the agent decided in one step.
#[derive(Debug, Clone, PartialEq)]
pub enum AgentAction {
    /// The final answer of the turn, in Markdown.
    Answer(String),
    /// Calls to run before the agent is asked again.
    UseTools(Vec<ToolCall>),
}

/// Tokens one provider call used, as the provider reported them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TokenUsage {
    /// Prompt tokens, cached or not.
    pub input: u64,
    pub output: u64,
}

/// The agent's answer to one step.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentReply {
    pub action: AgentAction,
    pub usage: TokenUsage,
    /// What the step cost, in millionths of a US dollar: `usage` priced by the deployment's
    /// [`crate::pricing::Price`].
    pub cost_micros: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// The provider could not be reached or did not answer in time; worth retrying.
    #[error("agent provider unreachable: {0}")]
    Unreachable(String),
    /// The provider failed (a 5xx) or answered with something that is not its wire format;
    /// worth retrying.
    #[error("agent provider failed: {0}")]
    Failed(String),
    /// The provider is rate limiting; `retry_after` is its own hint, when it gave one.
    #[error("agent provider rate limited the request")]
    RateLimited { retry_after: Option<Duration> },
    /// The provider refused the request (a bad key, an unknown model, a bad request); retrying
    /// would not help.
    #[error("agent provider refused the request: {0}")]
    Rejected(String),
}

/// The AI agent that answers questions.
#[async_trait]
pub trait Agent: Send + Sync {
    /// Whether the provider can be reached now; create session answers 502 when it cannot.
    /// Cheap: adapters cache the answer briefly.
    async fn health(&self) -> Result<(), AgentError>;
    /// One step of a turn: one provider call. Side-effect free: the workflow may abandon it
    /// midway (dropping the future aborts the request) or repeat it.
    async fn respond(&self, request: AgentRequest) -> Result<AgentReply, AgentError>;
}
