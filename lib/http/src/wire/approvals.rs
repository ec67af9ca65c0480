//! The wire format of consent: a call's approval as its `tool_use` event shows it, and the
//! member's answer to it (`POST /approve`).

use knowledge_core::CoreError;
use knowledge_core::domain::{Approval, ApprovalState, Decision};
use knowledge_core::ids::{EventId, SessionId};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::session_id;
use crate::error::ApiError;

/// A call's approval, as its `tool_use` event carries it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalView {
    /// `pending`, `approved`, `declined` or `expired`.
    #[schema(value_type = String)]
    pub state: &'static str,
    /// The integration whose tool it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub integration: Option<String>,
    /// When a pending call expires (RFC 3339, UTC).
    pub expires_at: String,
    /// Whether the member may answer `always`.
    pub may_always_allow: bool,
}

impl From<Approval> for ApprovalView {
    fn from(a: Approval) -> Self {
        Self {
            state: a.state.as_str(),
            integration: a.integration,
            expires_at: a.expires_at.to_iso8601(),
            may_always_allow: a.may_always_allow,
        }
    }
}

/// `POST /approve`: the member's answer to a call the agent asks them about.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApproveRequest {
    #[schema(pattern = r"^ses_[0-9a-f]{32}$")]
    pub session_id: String,
    /// The id of the call's `tool_use` event.
    #[schema(pattern = r"^evt_[0-9]{12}$")]
    pub tool_use_id: String,
    /// `approve`, `decline`, or `always` (approve, and always allow the tool for this member).
    #[schema(pattern = "^(approve|decline|always)$")]
    pub decision: String,
}

/// An answer, parsed.
#[derive(Debug)]
pub struct Answering {
    pub session: SessionId,
    pub tool_use: EventId,
    pub decision: Decision,
}

impl TryFrom<ApproveRequest> for Answering {
    type Error = ApiError;

    fn try_from(r: ApproveRequest) -> Result<Self, ApiError> {
        let session = session_id(Some(&r.session_id))?;
        let tool_use = match r.tool_use_id.as_str() {
            "" => {
                return Err(
                    CoreError::invalid("empty_field", "toolUseId must not be empty").into(),
                );
            }
            id => EventId::parse_event(id).map_err(|e| ApiError::InvalidField(e.to_string()))?,
        };
        let decision = match r.decision.as_str() {
            "approve" => Decision::Approve,
            "decline" => Decision::Decline,
            "always" => Decision::Always,
            _ => {
                return Err(ApiError::InvalidField(
                    "decision must be approve, decline or always".into(),
                ));
            }
        };
        Ok(Self {
            session,
            tool_use,
            decision,
        })
    }
}

/// The call's state after the answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct Answered {
    /// Always `true`.
    pub ok: bool,
    /// `approved` or `declined`.
    #[schema(value_type = String)]
    pub state: &'static str,
}

impl From<ApprovalState> for Answered {
    fn from(state: ApprovalState) -> Self {
        Self {
            ok: true,
            state: state.as_str(),
        }
    }
}
