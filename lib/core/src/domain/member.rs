//! Members of an organisation, what the service holds for them, and the integrations the
//! organisation connected.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{FederatedId, MemberCaps, OAuthAccess, Org, Role};
use crate::clock::Timestamp;
use crate::ids::{OrgId, UserId};

text_enum!(MemberDataKind {
    IntegrationToken => "integration_token",
    AgentMemory => "agent_memory",
    OAuthGrant => "oauth_grant",
    AllowedTool => "allowed_tool",
});

/// A user's membership of an organisation; without it the user's cookie for that organisation
/// is refused. Every change after creation goes through
/// [`crate::ports::DirectoryStore::update_member`], which checks `version`.
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
    /// When the person last signed out: cookies issued then or earlier no longer sign them in
    /// here. `None` until they first sign out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signed_out_at: Option<Timestamp>,
    /// The provider identity bound at the member's first single sign-on; from then on only it
    /// signs them in. Unique in the organisation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<FederatedId>,
    /// The member's own monthly allowance, set by an admin; `None` takes the organisation's
    /// ([`super::Org::member_caps`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caps: Option<MemberCaps>,
}

impl Member {
    /// The member's `userName`, when they have a profile.
    pub fn user_name(&self) -> Option<&str> {
        self.profile.as_ref().map(|p| p.user_name.as_str())
    }

    /// The member's allowance in `org`: their own when an admin set one, else the
    /// organisation's.
    pub fn caps_in(&self, org: &Org) -> MemberCaps {
        self.caps.unwrap_or(org.member_caps)
    }

    /// Whether a cookie issued at `issued_at` still signs this member in: not if the person
    /// signed out since.
    pub fn admits(&self, issued_at: Timestamp) -> bool {
        self.signed_out_at.is_none_or(|out| issued_at > out)
    }

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
            signed_out_at: None,
            identity: None,
            caps: None,
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

    /// The name to show: SCIM's `displayName`, else `name.formatted`, else none.
    pub fn display_name(&self) -> Option<&str> {
        let attr = &self.attributes;
        attr.get("displayName")
            .and_then(Value::as_str)
            .or_else(|| attr.get("name")?.get("formatted")?.as_str())
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
    /// The member's OAuth connection to an integration: a sealed [`crate::domain::Grant`].
    OAuthGrant,
    /// The tools of one integration the member chose to "always allow": named after the
    /// integration, its value a JSON array of the tools' names as the agent is offered them
    /// (`<integration>_<tool>`; [`crate::domain::allowed_tools`]). Leaves with the member.
    AllowedTool,
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
    /// Where and as whom the service is authorized, for the OAuth kinds of `auth`; `None` for
    /// the others.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oauth: Option<OAuthAccess>,
    /// The organisation's sealed [`crate::domain::Grant`], for `oauth_organisation`. Kept apart
    /// from the settings by the store, so only [`crate::ports::GrantStore::swap_grant`] changes
    /// it.
    #[serde(skip)]
    pub org_grant_sealed: Option<String>,
    /// The admin's rules for its tools, by the name the agent is offered each
    /// (`<integration>_<tool>`); a tool without one takes its hints' default. Kept apart from
    /// the settings by the store, so only [`crate::ports::DirectoryStore::set_tool_rule`]
    /// changes them, a tool at a time.
    #[serde(skip)]
    pub tool_rules: std::collections::BTreeMap<String, super::ToolRule>,
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
    /// Each member connects their own account over OAuth, and the tools act as them: the
    /// member's [`crate::domain::Grant`] is their [`MemberDataKind::OAuthGrant`] named after
    /// the integration.
    OauthMember,
    /// An admin connects the organisation's account over OAuth once, and every member's
    /// turns use it.
    OauthOrganisation,
}

text_enum!(IntegrationAuth {
    None => "none",
    PerUser => "per_user",
    OauthMember => "oauth_member",
    OauthOrganisation => "oauth_organisation",
});

impl IntegrationAuth {
    /// Whether the service is authorized over OAuth, and so holds an [`OAuthAccess`].
    pub fn is_oauth(self) -> bool {
        matches!(self, Self::OauthMember | Self::OauthOrganisation)
    }
}

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

/// A single-use ticket: who it is for, where, until when, and what its flow keeps (a sign-in
/// link's, or an OAuth connect in progress).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Ticket {
    pub user: UserId,
    pub org: OrgId,
    pub expires_at: Timestamp,
    /// What the flow that issued it keeps until it is taken, sealed (an OAuth connect's
    /// state); sign-in tickets hold none, and a ticket that holds some never signs anyone in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<String>,
}
