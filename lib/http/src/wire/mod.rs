//! The session endpoints' wire format as types: request bodies and queries, parsed into domain
//! values at the edge (`TryFrom`), and the responses as clients read them. The OpenAPI document
//! is generated from these types.

use knowledge_core::CoreError;
use knowledge_core::domain::{Event, EventBody, Member, Org, SessionSummary};
use knowledge_core::ids::{OrgId, SessionId};
use knowledge_core::service::{Account, CreatedSession, Transcript};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::error::ApiError;

mod approvals;
mod query;

pub use approvals::{Answered, Answering, ApprovalView, ApproveRequest};
pub use query::{SessionQuery, TranscriptPage, TranscriptQuery};

/// A `sessionId` as a client sent it. Errors: missing, empty, or not of the session-id form.
pub(crate) fn session_id(value: Option<&str>) -> Result<SessionId, ApiError> {
    match value {
        None => Err(ApiError::MissingField("sessionId is required".into())),
        Some("") => Err(CoreError::invalid("empty_field", "sessionId must not be empty").into()),
        Some(s) => SessionId::parse(s).map_err(|e| ApiError::InvalidField(e.to_string())),
    }
}

/// `POST /session`: the opening message of a new session.
#[derive(Debug, Deserialize, ToSchema)]
pub struct CreateSessionRequest {
    /// The question; must have a character other than whitespace.
    #[schema(pattern = r"\S")]
    pub text: String,
}

/// `POST /message`: a follow-up in a session.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MessageRequest {
    #[schema(pattern = r"^ses_[0-9a-f]{32}$")]
    pub session_id: String,
    /// The follow-up; must have a character other than whitespace.
    #[schema(pattern = r"\S")]
    pub text: String,
}

/// A follow-up, parsed.
pub struct Message {
    pub session: SessionId,
    pub text: String,
}

impl TryFrom<MessageRequest> for Message {
    type Error = ApiError;

    fn try_from(r: MessageRequest) -> Result<Self, ApiError> {
        Ok(Self {
            session: session_id(Some(&r.session_id))?,
            text: r.text,
        })
    }
}

/// `POST /cancel`: the session whose turn to stop.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CancelRequest {
    #[schema(pattern = r"^ses_[0-9a-f]{32}$")]
    pub session_id: String,
}

impl TryFrom<CancelRequest> for SessionId {
    type Error = ApiError;

    fn try_from(r: CancelRequest) -> Result<Self, ApiError> {
        session_id(Some(&r.session_id))
    }
}

/// `POST /api/auth/switch-org`: the organisation to act in.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SwitchOrgRequest {
    #[schema(pattern = "^[A-Za-z0-9_-]{1,64}$")]
    pub org_id: String,
}

impl TryFrom<SwitchOrgRequest> for OrgId {
    type Error = ApiError;

    fn try_from(r: SwitchOrgRequest) -> Result<Self, ApiError> {
        match r.org_id.as_str() {
            "" => Err(CoreError::invalid("empty_field", "orgId must not be empty").into()),
            s => OrgId::parse(s).map_err(|e| ApiError::InvalidField(e.to_string())),
        }
    }
}

/// A session just created, with the run answering its opening message.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreatedSessionView {
    pub id: String,
    pub run_id: String,
    /// No integration is connected for this member: the agent answers without tools.
    pub no_connectors: bool,
}

impl From<CreatedSession> for CreatedSessionView {
    fn from(c: CreatedSession) -> Self {
        Self {
            id: c.id.to_string(),
            run_id: c.run_id.to_string(),
            no_connectors: c.no_connectors,
        }
    }
}

/// The answer of a request that changed what it asked for.
#[derive(Debug, Serialize, ToSchema)]
pub struct Done {
    /// Always `true`.
    pub ok: bool,
}

impl Done {
    pub const OK: Self = Self { ok: true };
}

/// The answer of a cancel.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Cancelled {
    /// Always `true`.
    pub ok: bool,
    /// `true` when the turn was cancelled before; absent when this request cancelled it or
    /// nothing was running.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub already_cancelled: Option<bool>,
}

/// The organisation now active; the new cookie is in `Set-Cookie`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SwitchedOrg {
    pub ok: bool,
    pub org_id: String,
}

/// One page of a session's log.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TranscriptView {
    pub title: String,
    /// The run answering the session's turns; `null` when none is.
    pub workflow_run_id: Option<String>,
    pub events: Vec<EventView>,
    /// More events follow this page: ask again at once with the last event's id.
    pub has_more: bool,
    /// Always `false`: the log is read whole.
    pub backfill_failed: bool,
    /// Beside the interface's fields: the answer the agent is writing now, while the turn
    /// waits on it (absent otherwise). It is never an event: the answer arrives whole as an
    /// `agent_message`, and the draft is gone from that page on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub draft: Option<DraftView>,
}

/// The answer in progress: the text so far (Markdown, possibly cut mid-word) and when it was
/// written (at most about a second apart).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DraftView {
    pub text: String,
    /// RFC 3339, UTC.
    pub updated_at: String,
}

impl From<Transcript> for TranscriptView {
    fn from(t: Transcript) -> Self {
        Self {
            title: t.title,
            workflow_run_id: t.workflow_run_id.map(|r| r.to_string()),
            events: t.events.into_iter().map(EventView::from).collect(),
            has_more: t.has_more,
            backfill_failed: false,
            draft: t.draft.map(|d| DraftView {
                text: d.text,
                updated_at: d.updated_at.to_iso8601(),
            }),
        }
    }
}

/// An event's text: a user's message, or the agent's Markdown answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct TextPayload {
    pub text: String,
}

/// A tool call the agent asked for.
#[derive(Debug, Serialize, ToSchema)]
pub struct ToolUsePayload {
    pub tool: String,
    /// The call's input, as the agent wrote it.
    pub input: Value,
    /// Present when the call asks the member first: where the approval stands.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval: Option<ApprovalView>,
}

/// A tool call's result.
#[derive(Debug, Serialize, ToSchema)]
pub struct ToolResultPayload {
    pub tool: String,
    /// The tool's output; `{"error": ...}` when the tool refused its input, and
    /// `{"truncated": true, "text": ...}` when it was too long for the log.
    pub output: Value,
    /// For a call that asked the member: its final state (`approved`, `declined` or
    /// `expired`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub approval: Option<&'static str>,
}

/// An empty payload.
#[derive(Debug, Serialize, ToSchema)]
pub struct EmptyPayload {}

/// Why a run ended early.
#[derive(Debug, Serialize, ToSchema)]
pub struct TerminatedPayload {
    /// `cancelled` or `failed`.
    pub reason: String,
}

/// A failure shown in the conversation.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorPayload {
    /// Stable: `agent_failed`, `tool_unavailable`, `cost_cap_reached`, ...
    pub code: String,
    pub message: String,
}

/// One event of a session's log.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EventView {
    /// `evt_` and the event's twelve-digit sequence number: the transcript's cursor.
    pub id: String,
    #[serde(flatten)]
    pub body: EventBodyView,
    /// RFC 3339, UTC.
    pub occurred_at: String,
}

/// What an event says: its `type`, and the `payload` of that type.
#[derive(Debug, Serialize, ToSchema)]
#[serde(tag = "type", content = "payload", rename_all = "snake_case")]
pub enum EventBodyView {
    UserMessage(TextPayload),
    AgentMessage(TextPayload),
    ToolUse(ToolUsePayload),
    ToolResult(ToolResultPayload),
    StatusIdle(EmptyPayload),
    StatusTerminated(TerminatedPayload),
    Error(ErrorPayload),
}

impl From<Event> for EventView {
    fn from(e: Event) -> Self {
        let (id, occurred_at) = (e.id().to_string(), e.occurred_at.to_iso8601());
        let body = match e.body {
            EventBody::UserMessage { text } => EventBodyView::UserMessage(TextPayload { text }),
            EventBody::AgentMessage { text } => EventBodyView::AgentMessage(TextPayload { text }),
            EventBody::ToolUse {
                tool,
                input,
                approval,
            } => EventBodyView::ToolUse(ToolUsePayload {
                tool,
                input,
                approval: approval.map(ApprovalView::from),
            }),
            EventBody::ToolResult {
                tool,
                output,
                approval,
            } => EventBodyView::ToolResult(ToolResultPayload {
                tool,
                output,
                approval: approval.map(|a| a.as_str()),
            }),
            EventBody::StatusIdle {} => EventBodyView::StatusIdle(EmptyPayload {}),
            EventBody::StatusTerminated { reason } => {
                EventBodyView::StatusTerminated(TerminatedPayload { reason })
            }
            EventBody::Error { code, message } => {
                EventBodyView::Error(ErrorPayload { code, message })
            }
        };
        Self {
            id,
            body,
            occurred_at,
        }
    }
}

/// The member's sessions in the active organisation, most recently updated first.
#[derive(Debug, Serialize, ToSchema)]
pub struct SessionList {
    pub sessions: Vec<SessionView>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionView {
    pub id: String,
    pub title: String,
    /// RFC 3339, UTC.
    pub updated_at: String,
    /// Present, `true`, while the session waits for its member to answer a call.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub awaiting_approval: bool,
}

impl From<SessionSummary> for SessionView {
    fn from(s: SessionSummary) -> Self {
        Self {
            id: s.id.to_string(),
            title: s.title,
            updated_at: s.updated_at.to_iso8601(),
            awaiting_approval: s.awaits_member,
        }
    }
}

/// The signed-in person, the organisation they act in, and every organisation they belong to.
#[derive(Debug, Serialize, ToSchema)]
pub struct AccountView {
    pub user: UserView,
    /// The active organisation.
    pub org: OrgView,
    /// Every organisation the person belongs to, by id, the active one among them: what an
    /// organisation switcher offers.
    pub orgs: Vec<OrgView>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UserView {
    pub id: String,
    /// The identity provider's `userName`; absent for a member an operator added.
    pub user_name: Option<String>,
    /// SCIM's `displayName` or formatted name, when the provider gave one.
    pub display_name: Option<String>,
}

/// An organisation, with the person's role in it.
#[derive(Debug, Serialize, ToSchema)]
pub struct OrgView {
    pub id: String,
    pub name: String,
    /// `admin` or `viewer`.
    pub role: String,
}

impl From<Account> for AccountView {
    fn from(a: Account) -> Self {
        let view = |org: &Org, member: &Member| OrgView {
            id: org.id.to_string(),
            name: org.name.clone(),
            role: member.role.as_str().to_owned(),
        };
        let profile = a.member.profile.as_ref();
        Self {
            user: UserView {
                id: a.member.user.to_string(),
                user_name: profile.map(|p| p.user_name.clone()),
                display_name: profile.and_then(|p| p.display_name()).map(str::to_owned),
            },
            org: view(&a.org, &a.member),
            orgs: a.memberships.iter().map(|(o, m)| view(o, m)).collect(),
        }
    }
}
