//! The domain: organisations, members, sessions, their event log, and usage.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::clock::Timestamp;
use crate::ids::{EventId, OrgId, RunId, SessionKey, UserId};

/// Characters of the first message that form a session's title.
pub const TITLE_CHARS: usize = 60;
/// Events returned by one transcript poll at most.
pub const TRANSCRIPT_PAGE: usize = 100;
/// Sessions returned by the list at most.
pub const SESSION_LIST_LIMIT: usize = 50;

/// The organisation's subscription tier; SCIM needs `Business`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Plan {
    Free,
    Pro,
    Business,
}

/// Whether the organisation may use the service; a suspended one keeps its data but may not start
/// sessions or send messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OrgStatus {
    Active,
    Suspended,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Admin,
    Viewer,
}

macro_rules! text_enum {
    ($ty:ident { $($variant:ident => $text:literal),+ $(,)? }) => {
        impl $ty {
            pub fn as_str(self) -> &'static str {
                match self { $(Self::$variant => $text),+ }
            }
        }

        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $ty {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                match s {
                    $($text => Ok(Self::$variant),)+
                    _ => Err(format!(concat!("expected one of: ", $($text, " "),+))),
                }
            }
        }
    };
}

text_enum!(Plan { Free => "free", Pro => "pro", Business => "business" });
text_enum!(OrgStatus { Active => "active", Suspended => "suspended" });
text_enum!(Role { Admin => "admin", Viewer => "viewer" });
text_enum!(Actor { Scim => "scim", Admin => "admin" });
text_enum!(AuditAction {
    UserProvisioned => "user.provisioned",
    UserUpdated => "user.updated",
    UserDeactivated => "user.deactivated",
    UserDeleted => "user.deleted",
    MemberAdded => "member.added",
    MemberRoleChanged => "member.role_changed",
    MemberRemoved => "member.removed",
    ScimTokenGenerated => "scim_token.generated",
    IntegrationConnected => "integration.connected",
    IntegrationDisconnected => "integration.disconnected",
});
text_enum!(MemberDataKind { IntegrationToken => "integration_token", AgentMemory => "agent_memory" });

/// An organisation (tenant) and its limits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Org {
    pub id: OrgId,
    pub name: String,
    pub plan: Plan,
    pub status: OrgStatus,
    pub sso_enabled: bool,
    /// Queries (opening and follow-up messages) allowed per calendar month; `None` is unlimited.
    pub monthly_query_quota: Option<u64>,
    /// Spend allowed per calendar month, in millionths of a US dollar; `None` is unlimited.
    pub cost_cap_micros: Option<u64>,
    pub created_at: Timestamp,
    /// SHA-256 (hex) of the organisation's current SCIM token; never the token itself. Kept
    /// apart from the other settings by the store, so only
    /// [`crate::ports::Store::set_scim_token`] changes it.
    #[serde(skip)]
    pub scim_token_sha256: Option<String>,
}

impl Org {
    /// Whether members may start sessions and send messages.
    pub fn allows_sessions(&self) -> bool {
        self.status == OrgStatus::Active
    }
}

/// A user's membership of an organisation; without it the user's cookie for that organisation
/// is refused. Every change after creation goes through
/// [`crate::ports::Store::update_member`], which checks `version`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Member {
    pub org: OrgId,
    pub user: UserId,
    pub role: Role,
    pub created_at: Timestamp,
    /// Moves with every change; equals `created_at` until the first.
    #[serde(default)]
    pub updated_at: Timestamp,
    /// The identity provider's profile of a member provisioned over SCIM; `None` for members an
    /// operator added, which SCIM does not see.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<Profile>,
    /// The optimistic-concurrency token; 1 when created.
    #[serde(default)]
    pub version: u64,
}

impl Member {
    /// A new member without a profile, at version 1.
    pub fn new(org: OrgId, user: UserId, role: Role, now: Timestamp) -> Self {
        Self {
            org,
            user,
            role,
            created_at: now,
            updated_at: now,
            profile: None,
            version: 1,
        }
    }
}

/// Longest `userName` accepted, in characters; it is part of a storage key.
pub const USER_NAME_MAX_CHARS: usize = 256;

/// What an identity provider keeps about a member: the SCIM user without its server-assigned
/// parts (`id`, `meta`, `active`, `groups`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Profile {
    /// Unique in the organisation, compared case-insensitively (see [`Profile::user_name_key`]).
    pub user_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_id: Option<String>,
    /// The other attributes under their schema's canonical names, the enterprise extension's
    /// under its URN, as [`crate::scim::schema`] validated them.
    #[serde(default)]
    pub attributes: serde_json::Map<String, Value>,
}

impl Profile {
    /// The form under which `userName` is unique: Unicode lowercase, so `Ann@X.org` and
    /// `ann@x.org` are one user.
    pub fn user_name_key(&self) -> String {
        user_name_key(&self.user_name)
    }
}

/// See [`Profile::user_name_key`].
pub fn user_name_key(user_name: &str) -> String {
    user_name.to_lowercase()
}

/// Data the service holds for one member and removes with the membership: credentials for
/// integrations and the agent's memory of the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberData {
    pub kind: MemberDataKind,
    /// The integration's name, or the memory entry's.
    pub name: String,
    /// Opaque to the store; credentials are sealed by their writer before they get here.
    pub value: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MemberDataKind {
    IntegrationToken,
    AgentMemory,
}

/// A remote MCP server an organisation has connected, reached over streamable HTTP.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IntegrationConfig {
    /// Unique in the organisation; see [`IntegrationConfig::valid_name`]. It prefixes the
    /// names of the server's tools, and names the members' credentials for it.
    pub name: String,
    /// The server's MCP endpoint, `http://` or `https://`.
    pub url: String,
    pub auth: IntegrationAuth,
    pub created_at: Timestamp,
}

/// How the service authenticates to an integration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IntegrationAuth {
    /// No credentials: the server is open to the service.
    None,
    /// Each member's own bearer token, stored sealed as their
    /// [`MemberDataKind::IntegrationToken`] named after the integration; a member without one
    /// does not reach the integration. Deprovisioning removes it with the member.
    PerUser,
}

text_enum!(IntegrationAuth { None => "none", PerUser => "per_user" });

/// Integrations one organisation may connect at most, so that listing them is one small read.
pub const INTEGRATION_LIMIT: usize = 16;

impl IntegrationConfig {
    /// Whether `url` can name a remote MCP endpoint: `http://` or `https://` with a host, at
    /// most 2048 characters, no spaces or control characters.
    pub fn valid_url(url: &str) -> bool {
        let rest = url
            .strip_prefix("https://")
            .or_else(|| url.strip_prefix("http://"));
        url.len() <= 2048
            && rest.is_some_and(|r| !r.is_empty() && !r.starts_with('/'))
            && !url.chars().any(|c| c.is_whitespace() || c.is_control())
    }

    /// Whether `name` is 1 to 24 characters of `a-z`, `0-9` and `-`, starting with a letter:
    /// short enough that `<name>_<tool>` leaves room for the tool's own name in 64 characters.
    pub fn valid_name(name: &str) -> bool {
        (1..=24).contains(&name.len())
            && name.starts_with(|c: char| c.is_ascii_lowercase())
            && name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    }
}

/// Member data items one member may hold at most, so that their removal, with the membership,
/// the `userName` claim and the audit entry, fits one DynamoDB transaction (100 items).
pub const MEMBER_DATA_LIMIT: usize = 64;

/// Who did something recorded in the audit log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Actor {
    /// The organisation's identity provider, through the SCIM interface.
    Scim,
    /// An operator, through the admin commands.
    Admin,
}

/// What an audit entry records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum AuditAction {
    UserProvisioned,
    UserUpdated,
    UserDeactivated,
    UserDeleted,
    MemberAdded,
    MemberRoleChanged,
    MemberRemoved,
    ScimTokenGenerated,
    IntegrationConnected,
    IntegrationDisconnected,
}

/// One entry of an organisation's audit log. Written in the same transaction as the change it
/// records, so the log never misses a change nor records one that did not happen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditEntry {
    pub org: OrgId,
    pub at: Timestamp,
    /// Orders the entries one process writes in the same millisecond (a process-wide counter)
    /// and keeps all entries' keys apart (random digits).
    pub id: String,
    pub actor: Actor,
    pub action: AuditAction,
    /// The member's user id, or the organisation's id for token generation.
    pub target: String,
}

impl AuditEntry {
    pub fn new(
        org: &OrgId, at: Timestamp, actor: Actor, action: AuditAction, target: &str,
    ) -> Self {
        Self {
            org: org.clone(),
            at,
            id: {
                static WRITTEN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
                let n = WRITTEN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let random = uuid::Uuid::new_v4().simple().to_string();
                format!("{n:012x}{}", &random[..20])
            },
            actor,
            action,
            target: target.to_owned(),
        }
    }
}

/// The kinds of event in a session's log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    UserMessage,
    AgentMessage,
    ToolUse,
    ToolResult,
    StatusIdle,
    StatusTerminated,
    Error,
}

text_enum!(EventKind {
    UserMessage => "user_message",
    AgentMessage => "agent_message",
    ToolUse => "tool_use",
    ToolResult => "tool_result",
    StatusIdle => "status_idle",
    StatusTerminated => "status_terminated",
    Error => "error",
});

/// What an event says, by its type: the interface's `type` and `payload`, as a client reads
/// them in a transcript and as the log stores them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", content = "payload", rename_all = "snake_case")]
pub enum EventBody {
    /// A question or follow-up the user sent.
    UserMessage { text: String },
    /// The agent's answer, in Markdown.
    AgentMessage { text: String },
    /// A tool call the agent asked for.
    ToolUse { tool: String, input: Value },
    /// A tool call's result, or `{"error": ...}` when the tool refused its input.
    ToolResult { tool: String, output: Value },
    /// The turn is over; the session waits for the next message.
    StatusIdle {},
    /// The run ended early: `cancelled` or `failed`.
    StatusTerminated { reason: String },
    /// A failure the client should show: a stable `code` and a message for people.
    Error { code: String, message: String },
}

/// An event not yet given its place in the log.
pub type NewEvent = EventBody;

impl EventBody {
    pub fn user_message(text: &str) -> Self {
        Self::UserMessage { text: text.into() }
    }
    pub fn agent_message(text: &str) -> Self {
        Self::AgentMessage { text: text.into() }
    }
    pub fn status_idle() -> Self {
        Self::StatusIdle {}
    }
    pub fn status_terminated(reason: &str) -> Self {
        Self::StatusTerminated {
            reason: reason.into(),
        }
    }
    pub fn tool_use(tool: &str, input: &Value) -> Self {
        Self::ToolUse {
            tool: tool.into(),
            input: input.clone(),
        }
    }
    pub fn tool_result(tool: &str, output: &Value) -> Self {
        Self::ToolResult {
            tool: tool.into(),
            output: output.clone(),
        }
    }
    pub fn error(code: &str, message: &str) -> Self {
        Self::Error {
            code: code.into(),
            message: message.into(),
        }
    }

    pub fn kind(&self) -> EventKind {
        match self {
            Self::UserMessage { .. } => EventKind::UserMessage,
            Self::AgentMessage { .. } => EventKind::AgentMessage,
            Self::ToolUse { .. } => EventKind::ToolUse,
            Self::ToolResult { .. } => EventKind::ToolResult,
            Self::StatusIdle {} => EventKind::StatusIdle,
            Self::StatusTerminated { .. } => EventKind::StatusTerminated,
            Self::Error { .. } => EventKind::Error,
        }
    }

    /// The payload as the log stores it and the interface shows it.
    pub fn payload(&self) -> Value {
        match serde_json::to_value(self) {
            Ok(Value::Object(mut tagged)) => tagged.remove("payload").unwrap_or_default(),
            _ => unreachable!("an event body serialises as its type and payload"),
        }
    }

    /// The body of a stored event of `kind`. Errors: `payload` lacks a field of its kind, or
    /// has one of the wrong type.
    pub fn from_stored(kind: EventKind, payload: Value) -> Result<Self, serde_json::Error> {
        serde_json::from_value(serde_json::json!({ "type": kind.as_str(), "payload": payload }))
    }

    /// The text of a user or agent message.
    pub fn text(&self) -> Option<&str> {
        match self {
            Self::UserMessage { text } | Self::AgentMessage { text } => Some(text),
            _ => None,
        }
    }
}

/// One entry of a session's log. `seq` numbers the log from 1 without gaps.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub seq: u64,
    pub body: EventBody,
    pub occurred_at: Timestamp,
}

impl Event {
    pub fn id(&self) -> EventId {
        EventId::from_seq(self.seq)
    }

    pub fn kind(&self) -> EventKind {
        self.body.kind()
    }
}

/// The session record. Every change goes through [`crate::ports::Store::commit_session`], which
/// checks `version`, so concurrent writers (the message endpoint and the workflow) never lose an
/// update and the log stays gap-free.
#[derive(Debug, Clone, PartialEq)]
pub struct Session {
    pub key: SessionKey,
    pub title: String,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    /// Stamped by cancel (and by delete of a running session); cleared when a new run starts.
    pub cancelled_at: Option<Timestamp>,
    /// The active workflow run, if any.
    pub run_id: Option<RunId>,
    /// Set by delete before it removes anything; from then on the session is gone to everyone.
    pub deleting: bool,
    /// Sequence numbers of user messages waiting for their turn, oldest first. The first is the
    /// turn in progress while a run is active.
    pub pending: Vec<u64>,
    /// How far the turn at the head of `pending` has gone; `None` before its first step commits.
    pub turn: Option<TurnProgress>,
    /// Sequence number the next appended event gets.
    pub next_seq: u64,
    /// Incremented by every commit; the optimistic-concurrency token.
    pub version: u64,
}

impl Session {
    /// A new session with an empty log, no run and nothing pending, at version 1.
    pub fn new(key: SessionKey, title: String, now: Timestamp) -> Self {
        Self {
            key,
            title,
            created_at: now,
            updated_at: now,
            cancelled_at: None,
            run_id: None,
            deleting: false,
            pending: vec![],
            turn: None,
            next_seq: 1,
            version: 1,
        }
    }

    /// Whether a turn is in flight: a run owns the session and has a message to answer. A run
    /// whose last turn has ended (`status_idle` written) with nothing pending is only waiting
    /// to end quietly; it is not in flight, so a cancel then changes nothing.
    pub fn in_flight(&self) -> bool {
        self.run_id.is_some() && !self.pending.is_empty()
    }

    /// The title for an opening message: its first [`TITLE_CHARS`] Unicode scalar values.
    pub fn title_for(text: &str) -> String {
        text.chars().take(TITLE_CHARS).collect()
    }

    /// Gives `new` their places after the existing log: consecutive sequence numbers and
    /// timestamps that never go backwards, so the log is ordered by both. Moves `updated_at`.
    pub fn place(&mut self, now: Timestamp, new: Vec<NewEvent>) -> Vec<Event> {
        let at = now.max(self.updated_at);
        self.updated_at = at;
        new.into_iter()
            .map(|e| {
                let seq = self.next_seq;
                self.next_seq += 1;
                Event {
                    seq,
                    body: e,
                    occurred_at: at,
                }
            })
            .collect()
    }
}

/// Progress of the turn in flight, committed with every step's events. `step` is the step
/// marker: a step commits only if the marker is still the one it started from, so a step that
/// runs twice commits once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnProgress {
    /// Steps committed in this turn.
    pub step: u32,
    /// Agent calls committed in this turn.
    pub agent_calls: u32,
    /// Sequence number of the turn's first own event; earlier ones are its history.
    pub from_seq: u64,
    pub awaiting: Awaiting,
}

/// What the turn in flight needs next.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "kind", content = "toolUses")]
pub enum Awaiting {
    /// The agent, to answer or to ask for tools.
    Agent,
    /// The results of these `tool_use` events (sequence numbers, in call order).
    Tools(Vec<u64>),
    /// Its `status_idle`: the answer is written.
    Finish,
}

/// A line of the session list.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionSummary {
    pub id: crate::ids::SessionId,
    pub title: String,
    pub updated_at: Timestamp,
}

/// An organisation's usage in one calendar month.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    pub queries: u64,
    pub cost_micros: u64,
}

/// Renders millionths of a dollar as dollars.
pub fn micros_to_usd(micros: u64) -> f64 {
    micros as f64 / 1_000_000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn title_keeps_sixty_characters_without_splitting_any() {
        let text = "é".repeat(70);
        let title = Session::title_for(&text);
        assert_eq!(title.chars().count(), 60);
        assert_eq!(title, "é".repeat(60));
        assert_eq!(Session::title_for("short"), "short");
    }

    #[test]
    fn placed_events_are_consecutive_and_never_go_back_in_time() {
        let mut s = Session {
            key: SessionKey {
                user: UserId::generate(),
                org: OrgId::generate(),
                session: crate::ids::SessionId::generate(),
            },
            title: String::new(),
            created_at: Timestamp(100),
            updated_at: Timestamp(500),
            cancelled_at: None,
            run_id: None,
            deleting: false,
            pending: vec![],
            turn: None,
            next_seq: 4,
            version: 1,
        };
        let placed = s.place(
            Timestamp(300),
            vec![NewEvent::status_idle(), NewEvent::status_idle()],
        );
        assert_eq!(placed.iter().map(|e| e.seq).collect::<Vec<_>>(), vec![4, 5]);
        assert!(placed.iter().all(|e| e.occurred_at == Timestamp(500)));
        assert_eq!(s.next_seq, 6);
    }

    #[test]
    fn an_event_body_is_stored_as_its_kind_and_payload_and_read_back_whole() {
        let bodies = [
            NewEvent::user_message("q"),
            NewEvent::agent_message("a"),
            NewEvent::tool_use("search", &serde_json::json!({ "query": "q" })),
            NewEvent::tool_result("search", &serde_json::json!([1, 2])),
            NewEvent::status_idle(),
            NewEvent::status_terminated("cancelled"),
            NewEvent::error("agent_failed", "no answer"),
        ];
        for body in bodies {
            let back = EventBody::from_stored(body.kind(), body.payload()).unwrap();
            assert_eq!(back, body);
        }
        assert_eq!(NewEvent::status_idle().payload(), serde_json::json!({}));
        assert_eq!(
            NewEvent::user_message("q").payload(),
            serde_json::json!({ "text": "q" })
        );
    }

    #[test]
    fn a_stored_payload_without_its_kinds_fields_is_refused() {
        let wrong = EventBody::from_stored(EventKind::ToolUse, serde_json::json!({ "text": "x" }));
        assert!(wrong.is_err());
        let typed =
            EventBody::from_stored(EventKind::UserMessage, serde_json::json!({ "text": 7 }));
        assert!(typed.is_err());
    }
}
