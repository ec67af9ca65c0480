//! Integrations on the wire: an integration as an admin checks it (with its OAuth
//! authorization, never a secret), its settings, a member's credential for it, its tools and
//! who holds credentials.

use knowledge_core::connections::redirect_uri;
use knowledge_core::domain::{
    ClientRegistration, IntegrationAuth, IntegrationConfig, ToolHints, ToolPolicy, ToolRule,
    effective_policy,
};
use knowledge_core::ids::OrgId;
use knowledge_core::ports::ToolSpec;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::MemberView;

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct IntegrationView {
    pub name: String,
    pub url: String,
    /// `none`, `per_user`, `oauth_member` or `oauth_organisation`.
    pub auth: String,
    pub created_at: String,
    /// For the OAuth kinds: what discovery found, and the service's client there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oauth: Option<OAuthView>,
    /// The admin's rules for its tools, by tool; a tool without one takes its default.
    pub tool_rules: Vec<ToolRuleView>,
}

/// An OAuth integration's authorization, as an admin checks it (never a secret).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct OAuthView {
    pub issuer: String,
    pub authorization_endpoint: String,
    pub scopes: Vec<String>,
    /// How the service came by its client: `pre_registered`, `metadata_document` or
    /// `dynamic`.
    pub registration: String,
    pub client_id: String,
    /// The redirect URI to register at the authorization server: the organisation's and
    /// integration's own.
    pub redirect_uri: String,
    /// Whether the server revokes tokens on disconnect (RFC 7009).
    pub revocation: bool,
}

impl IntegrationView {
    /// `i` of `org`, whose redirect URI is on `origin`.
    pub fn of(i: &IntegrationConfig, origin: &str, org: &OrgId) -> Self {
        Self {
            name: i.name.clone(),
            url: i.url.clone(),
            auth: i.auth.as_str().to_owned(),
            created_at: i.created_at.to_iso8601(),
            oauth: i.oauth.as_ref().map(|o| OAuthView {
                issuer: o.server.issuer.clone(),
                authorization_endpoint: o.server.authorization_endpoint.clone(),
                scopes: o.server.scopes.clone(),
                registration: match o.client.registration {
                    ClientRegistration::PreRegistered => "pre_registered",
                    ClientRegistration::MetadataDocument => "metadata_document",
                    ClientRegistration::Dynamic => "dynamic",
                }
                .to_owned(),
                client_id: o.client.client_id.clone(),
                redirect_uri: redirect_uri(origin, org, &i.name),
                revocation: o.server.revocation_endpoint.is_some(),
            }),
            tool_rules: (i.tool_rules.iter())
                .map(|(tool, rule)| ToolRuleView::of(tool, *rule))
                .collect(),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct IntegrationList {
    pub integrations: Vec<IntegrationView>,
}

/// `PUT /integrations/{name}`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct IntegrationRequest {
    /// The MCP server's endpoint, `http://` or `https://`.
    #[schema(max_length = 2048)]
    pub url: String,
    /// `none` (the default), `per_user`, `oauth_member` (each member connects their own
    /// account) or `oauth_organisation` (an admin connects the organisation's).
    #[serde(default = "no_auth")]
    #[schema(value_type = Option<String>, pattern = "^(none|per_user|oauth_member|oauth_organisation)$")]
    pub auth: IntegrationAuth,
    /// For the OAuth kinds: a client registered by hand at the authorization server (with
    /// the redirect URI the integration shows); without one the service registers itself.
    #[serde(default, rename = "clientId")]
    #[schema(max_length = 2048)]
    pub client_id: Option<String>,
    /// That client's secret; none for a public client. Sealed at rest, never shown again.
    #[serde(default, rename = "clientSecret")]
    #[schema(max_length = 2048)]
    pub client_secret: Option<String>,
}

fn no_auth() -> IntegrationAuth {
    IntegrationAuth::None
}

/// `PUT /integrations/{name}/credentials/{userId}`: the member's own bearer token for a
/// per-user integration. Sealed at rest, never shown again.
#[derive(Deserialize, ToSchema)]
pub struct CredentialRequest {
    #[schema(min_length = 1, max_length = 8192)]
    pub token: String,
}

impl std::fmt::Debug for CredentialRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CredentialRequest(..)")
    }
}

/// A tool as an admin checks it: what its server says of it, the admin's rule, and what
/// happens when the agent asks for it (for a member who has not chosen "always allow").
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolView {
    pub name: String,
    pub description: String,
    /// Its MCP annotations, as far as the server gives them.
    #[schema(value_type = Object)]
    pub hints: ToolHints,
    /// `allow` or `ask`, from `hints` alone.
    pub default_policy: String,
    /// The admin's rule, when one is set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<ToolRuleView>,
    /// `allow`, `ask` or `block`: the rule's, else the default.
    pub policy: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ToolList {
    pub tools: Vec<ToolView>,
}

impl From<Vec<(ToolSpec, Option<ToolRule>)>> for ToolList {
    fn from(tools: Vec<(ToolSpec, Option<ToolRule>)>) -> Self {
        Self {
            tools: (tools.into_iter())
                .map(|(t, rule)| ToolView {
                    default_policy: t.hints.default_policy().as_str().to_owned(),
                    policy: effective_policy(t.hints, rule, false)
                        .policy
                        .as_str()
                        .to_owned(),
                    rule: rule.map(|r| ToolRuleView::of(&t.name, r)),
                    name: t.name,
                    description: t.description,
                    hints: t.hints,
                })
                .collect(),
        }
    }
}

/// `PUT /integrations/{name}/tools/{tool}`: the admin's rule for one tool.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolRuleRequest {
    /// `allow` (runs), `ask` (runs once the member approves the call) or `block` (never
    /// offered).
    #[schema(value_type = String, pattern = "^(allow|ask|block)$")]
    pub policy: ToolPolicy,
    /// Whether a member may answer a call of it with "always allow this tool for me"; true
    /// by default.
    #[serde(default = "permitted")]
    pub member_may_always_allow: bool,
}

fn permitted() -> bool {
    true
}

impl From<ToolRuleRequest> for ToolRule {
    fn from(r: ToolRuleRequest) -> Self {
        Self {
            policy: r.policy,
            member_may_always_allow: r.member_may_always_allow,
        }
    }
}

/// The admin's rule for one tool.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolRuleView {
    pub tool: String,
    /// `allow`, `ask` or `block`.
    pub policy: String,
    pub member_may_always_allow: bool,
}

impl ToolRuleView {
    pub fn of(tool: &str, rule: ToolRule) -> Self {
        Self {
            tool: tool.to_owned(),
            policy: rule.policy.as_str().to_owned(),
            member_may_always_allow: rule.member_may_always_allow,
        }
    }
}

/// The members holding a credential for an integration (never the credential).
#[derive(Debug, Serialize, ToSchema)]
pub struct HolderList {
    pub members: Vec<MemberView>,
}
