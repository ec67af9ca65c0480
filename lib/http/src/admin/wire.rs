//! The admin API's wire format: request bodies and queries, parsed into domain values at the
//! edge, and the views clients read. Secrets go one way: the SSO client secret and members'
//! credentials are written, never read back; the SCIM token is shown once, when made.

use knowledge_core::CoreError;
use knowledge_core::admin::{
    AuditPage, MemberPage, MemberUsage, ScimStatus, UsageReport, parse_month,
};
use knowledge_core::connections::redirect_uri;
use knowledge_core::domain::{
    AuditAction, AuditCursor, AuditEntry, COST_CAP_MAX_USD, ClientRegistration, IntegrationAuth,
    IntegrationConfig, Member, MemberCaps, QUOTA_MAX, Role, SsoConfig, micros_to_usd,
};
use knowledge_core::ids::{OrgId, UserId};

use crate::usage::{DayUsageView, ModelUsageView, day_views, model_views};
use knowledge_core::ports::{OrgLimits, ToolSpec};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::error::ApiError;
use crate::extract::QueryParams;

/// Page sizes a list answers at most, and by default.
const PAGE_MAX: usize = 100;
const PAGE_DEFAULT: usize = 50;

fn invalid(message: impl Into<String>) -> ApiError {
    ApiError::InvalidField(message.into())
}

/// `limit` as sent: 1 to [`PAGE_MAX`], [`PAGE_DEFAULT`] when absent.
fn page_limit(q: &QueryParams) -> Result<usize, ApiError> {
    match q.get("limit") {
        None => Ok(PAGE_DEFAULT),
        Some(l) => l
            .parse::<usize>()
            .ok()
            .filter(|l| (1..=PAGE_MAX).contains(l))
            .ok_or_else(|| invalid(format!("limit must be a whole number from 1 to {PAGE_MAX}"))),
    }
}

/// A member's user id from the path. Errors: 400 for one not of the user-id form.
pub fn user_id(raw: &str) -> Result<UserId, ApiError> {
    UserId::parse(raw).map_err(|e| invalid(e.to_string()))
}

/// `GET /members`'s query.
#[derive(Debug, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct MemberListQuery {
    /// Matched without case within the `userName`, the display name and the user id.
    #[param(max_length = 256)]
    pub q: Option<String>,
    /// The `next` of the previous page.
    #[param(pattern = "^[A-Za-z0-9_-]{1,64}$")]
    pub after: Option<String>,
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<usize>,
}

impl MemberListQuery {
    /// The members asked for. Errors: 400 for a malformed `after` or `limit`, or a search
    /// longer than 256 characters.
    pub fn parse(raw: Option<&str>) -> Result<knowledge_core::admin::MemberQuery, ApiError> {
        let q = QueryParams::parse(raw);
        let search = q.get("q").map(str::to_owned);
        if search.as_ref().is_some_and(|s| s.chars().count() > 256) {
            return Err(invalid("q must be at most 256 characters"));
        }
        Ok(knowledge_core::admin::MemberQuery {
            search,
            after: q.get("after").map(user_id).transpose()?,
            limit: page_limit(&q)?,
        })
    }
}

/// A member as an admin sees them.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemberView {
    pub user_id: String,
    /// The identity provider's `userName`; absent for a member an operator added.
    pub user_name: Option<String>,
    pub display_name: Option<String>,
    /// `admin` or `viewer`.
    pub role: String,
    pub created_at: String,
    /// Whether single sign-on has bound a provider identity to the member.
    pub identity_bound: bool,
    /// The member's own monthly allowance; absent when they have the organisation's.
    pub caps: Option<MemberCapsView>,
}

/// A member's own monthly allowance; a field absent is unlimited.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemberCapsView {
    pub question_cap: Option<u64>,
    pub cap_usd: Option<f64>,
}

impl From<MemberCaps> for MemberCapsView {
    fn from(c: MemberCaps) -> Self {
        Self {
            question_cap: c.queries,
            cap_usd: c.cost_micros.map(micros_to_usd),
        }
    }
}

impl From<&Member> for MemberView {
    fn from(m: &Member) -> Self {
        let profile = m.profile.as_ref();
        Self {
            user_id: m.user.to_string(),
            user_name: profile.map(|p| p.user_name.clone()),
            display_name: profile.and_then(|p| p.display_name()).map(str::to_owned),
            role: m.role.as_str().to_owned(),
            created_at: m.created_at.to_iso8601(),
            identity_bound: m.identity.is_some(),
            caps: m.caps.map(MemberCapsView::from),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct MemberList {
    pub members: Vec<MemberView>,
    /// Where the next page starts (`after`); absent on the last page.
    pub next: Option<String>,
}

impl From<MemberPage> for MemberList {
    fn from(p: MemberPage) -> Self {
        Self {
            members: p.members.iter().map(MemberView::from).collect(),
            next: p.next.map(|u| u.to_string()),
        }
    }
}

/// `POST /members`: a new member, by the name single sign-on will match.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct InviteRequest {
    /// Matched without case against the provider's claim (`email` by default).
    #[schema(min_length = 1, max_length = 256)]
    pub user_name: String,
    /// `viewer` (the default) or `admin`.
    #[serde(default = "viewer")]
    #[schema(value_type = Option<String>, pattern = "^(admin|viewer)$")]
    pub role: Role,
}

fn viewer() -> Role {
    Role::Viewer
}

/// `PATCH /members/{userId}`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct RoleRequest {
    #[schema(value_type = String, pattern = "^(admin|viewer)$")]
    pub role: Role,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Removed {
    pub ok: bool,
    /// How many of the member's turns in flight were cancelled.
    pub cancelled_turns: usize,
}

/// The organisation's single sign-on; the client secret is never shown.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SsoView {
    pub configured: bool,
    pub issuer: Option<String>,
    pub client_id: Option<String>,
    /// Whether a client secret is stored (it is write-only).
    pub client_secret_set: bool,
    pub user_name_claim: Option<String>,
    pub email_domains: Vec<String>,
    pub enabled: bool,
    pub just_in_time: bool,
    pub updated_at: Option<String>,
    /// The redirect URI to register at the provider.
    pub callback_url: String,
}

impl SsoView {
    pub fn new(config: Option<&SsoConfig>, callback_url: String) -> Self {
        Self {
            configured: config.is_some(),
            issuer: config.map(|c| c.issuer.clone()),
            client_id: config.map(|c| c.client_id.clone()),
            client_secret_set: config.is_some(),
            user_name_claim: config.map(|c| c.user_name_claim.clone()),
            email_domains: config.map(|c| c.email_domains.clone()).unwrap_or_default(),
            enabled: config.is_some_and(|c| c.enabled),
            just_in_time: config.is_some_and(|c| c.just_in_time),
            updated_at: config.map(|c| c.updated_at.to_iso8601()),
            callback_url,
        }
    }
}

/// `PUT /sso`: the whole configuration. `clientSecret` may be left out to keep the stored one
/// (the issuer and client id unchanged); `enabled` left out keeps the current state.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SsoRequest {
    #[schema(max_length = 2048)]
    pub issuer: String,
    #[schema(max_length = 1024)]
    pub client_id: String,
    #[schema(max_length = 1024)]
    pub client_secret: Option<String>,
    pub user_name_claim: Option<String>,
    #[serde(default)]
    pub email_domains: Vec<String>,
    #[serde(default)]
    pub just_in_time: bool,
    pub enabled: Option<bool>,
}

/// `POST /sso/test`: the issuer to fetch the discovery document of.
#[derive(Debug, Deserialize, ToSchema)]
pub struct SsoTestRequest {
    #[schema(max_length = 2048)]
    pub issuer: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SsoTested {
    pub ok: bool,
    pub issuer: String,
}

/// `PUT /sso/enabled`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct SsoEnabledRequest {
    pub enabled: bool,
}

/// Whether a SCIM token exists, since when, and what to give the identity provider.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScimView {
    pub token_exists: bool,
    pub created_at: Option<String>,
    /// The connector base URL the identity provider is given.
    pub base_url: String,
    /// Whether SCIM answers: the Business plan with single sign-on switched on.
    pub available: bool,
}

impl ScimView {
    pub fn new(s: &ScimStatus, base_url: String) -> Self {
        Self {
            token_exists: s.token_exists,
            created_at: s.created_at.map(|t| t.to_iso8601()),
            base_url,
            available: s.available,
        }
    }
}

/// A new SCIM token: shown this once, never readable again.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScimToken {
    pub token: String,
    pub created_at: String,
    pub base_url: String,
}

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
                issuer: o.issuer.clone(),
                authorization_endpoint: o.authorization_endpoint.clone(),
                scopes: o.scopes.clone(),
                registration: match o.client.registration {
                    ClientRegistration::PreRegistered => "pre_registered",
                    ClientRegistration::MetadataDocument => "metadata_document",
                    ClientRegistration::Dynamic => "dynamic",
                }
                .to_owned(),
                client_id: o.client.client_id.clone(),
                redirect_uri: redirect_uri(origin, org, &i.name),
                revocation: o.revocation_endpoint.is_some(),
            }),
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

#[derive(Debug, Serialize, ToSchema)]
pub struct ToolView {
    pub name: String,
    pub description: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ToolList {
    pub tools: Vec<ToolView>,
}

impl From<Vec<ToolSpec>> for ToolList {
    fn from(tools: Vec<ToolSpec>) -> Self {
        Self {
            tools: (tools.into_iter())
                .map(|t| ToolView {
                    name: t.name,
                    description: t.description,
                })
                .collect(),
        }
    }
}

/// The members holding a credential for an integration (never the credential).
#[derive(Debug, Serialize, ToSchema)]
pub struct HolderList {
    pub members: Vec<MemberView>,
}

/// The month's usage against the limits.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UsageView {
    /// `YYYY-MM`, UTC.
    pub month: String,
    pub queries: u64,
    /// Absent when unlimited.
    pub monthly_query_quota: Option<u64>,
    pub month_to_date_usd: f64,
    /// Absent when unlimited.
    pub cost_cap_usd: Option<f64>,
    /// Each member's monthly question allowance, unless set for the member; absent when
    /// unlimited.
    pub member_question_cap: Option<u64>,
    /// Each member's monthly spending allowance in US dollars, unless set for the member;
    /// absent when unlimited.
    pub member_cap_usd: Option<f64>,
    /// How many members asked anything in the month.
    pub active_members: usize,
    /// The members who used the most (spend, then questions), at most ten.
    pub members: Vec<MemberUsageView>,
    /// The month's tokens, over every model.
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// The days with any usage, in order.
    pub days: Vec<DayUsageView>,
    /// The models called, most spent on first.
    pub models: Vec<ModelUsageView>,
}

/// One member's month: their usage against the allowance that applies to them now.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemberUsageView {
    pub user_id: String,
    /// Absent for a member without a profile, or removed since.
    pub user_name: Option<String>,
    pub display_name: Option<String>,
    /// The member has been removed; their usage still counts in the month.
    pub removed: bool,
    pub questions: u64,
    pub usd: f64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Their allowance now, their own or the organisation's; absent when unlimited.
    pub question_cap: Option<u64>,
    pub cap_usd: Option<f64>,
}

impl From<MemberUsage> for MemberUsageView {
    fn from(m: MemberUsage) -> Self {
        let profile = m.member.as_ref().and_then(|m| m.profile.as_ref());
        Self {
            user_id: m.user.to_string(),
            user_name: profile.map(|p| p.user_name.clone()),
            display_name: profile.and_then(|p| p.display_name()).map(str::to_owned),
            removed: m.member.is_none(),
            questions: m.usage.usage.queries,
            usd: micros_to_usd(m.usage.usage.cost_micros),
            input_tokens: m.usage.tokens().0,
            output_tokens: m.usage.tokens().1,
            question_cap: m.caps.queries,
            cap_usd: m.caps.cost_micros.map(micros_to_usd),
        }
    }
}

/// `GET /usage`'s query.
#[derive(Debug, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct UsageQuery {
    /// A calendar month, `YYYY-MM` (UTC); this month when absent.
    #[param(pattern = "^[0-9]{4}-(0[1-9]|1[0-2])$")]
    pub month: Option<String>,
}

impl UsageQuery {
    /// The month asked for, if one is. Errors: 400 for one that is not `YYYY-MM`.
    pub fn parse(raw: Option<&str>) -> Result<Option<String>, ApiError> {
        let q = QueryParams::parse(raw);
        Ok(q.get("month").map(parse_month).transpose()?)
    }
}

impl From<UsageReport> for UsageView {
    fn from(u: UsageReport) -> Self {
        let (days, models) = (day_views(&u.month, &u.detail), model_views(&u.detail));
        let (input_tokens, output_tokens) = u.detail.tokens();
        Self {
            month: u.month,
            queries: u.usage.queries,
            monthly_query_quota: u.monthly_query_quota,
            month_to_date_usd: micros_to_usd(u.usage.cost_micros),
            cost_cap_usd: u.cost_cap_micros.map(micros_to_usd),
            member_question_cap: u.member_caps.queries,
            member_cap_usd: u.member_caps.cost_micros.map(micros_to_usd),
            active_members: u.active_members,
            members: u.members.into_iter().map(MemberUsageView::from).collect(),
            input_tokens,
            output_tokens,
            days,
            models,
        }
    }
}

/// `PUT /usage/limits`: the organisation's limits and each member's allowance; one left out
/// (or null) is unlimited.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LimitsRequest {
    #[schema(minimum = 0, maximum = 1_000_000_000_000_u64)]
    pub monthly_query_quota: Option<u64>,
    /// US dollars, at most a billion.
    #[schema(minimum = 0, maximum = 1_000_000_000)]
    pub cost_cap_usd: Option<f64>,
    /// Questions each member may ask a month, unless set for the member.
    #[schema(minimum = 0, maximum = 1_000_000_000_000_u64)]
    pub member_question_cap: Option<u64>,
    /// US dollars each member may spend a month, unless set for the member.
    #[schema(minimum = 0, maximum = 1_000_000_000)]
    pub member_cap_usd: Option<f64>,
}

impl TryFrom<LimitsRequest> for OrgLimits {
    type Error = ApiError;

    fn try_from(r: LimitsRequest) -> Result<Self, ApiError> {
        Ok(Self {
            quota: questions("monthlyQueryQuota", r.monthly_query_quota)?,
            cap_micros: dollars("costCapUsd", r.cost_cap_usd)?,
            member: MemberCaps {
                queries: questions("memberQuestionCap", r.member_question_cap)?,
                cost_micros: dollars("memberCapUsd", r.member_cap_usd)?,
            },
        })
    }
}

/// `PUT /members/{userId}/caps`: the member's own allowance; one left out (or null) is
/// unlimited for them.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemberCapsRequest {
    #[schema(minimum = 0, maximum = 1_000_000_000_000_u64)]
    pub question_cap: Option<u64>,
    /// US dollars, at most a billion.
    #[schema(minimum = 0, maximum = 1_000_000_000)]
    pub cap_usd: Option<f64>,
}

impl TryFrom<MemberCapsRequest> for MemberCaps {
    type Error = ApiError;

    fn try_from(r: MemberCapsRequest) -> Result<Self, ApiError> {
        Ok(Self {
            queries: questions("questionCap", r.question_cap)?,
            cost_micros: dollars("capUsd", r.cap_usd)?,
        })
    }
}

/// A question count within [`QUOTA_MAX`]. Errors: 400 naming `field`.
fn questions(field: &str, value: Option<u64>) -> Result<Option<u64>, ApiError> {
    match value {
        Some(q) if q > QUOTA_MAX => Err(invalid(format!("{field} must be from 0 to {QUOTA_MAX}"))),
        q => Ok(q),
    }
}

/// US dollars within [`COST_CAP_MAX_USD`], as millionths. Errors: 400 naming `field`.
fn dollars(field: &str, value: Option<f64>) -> Result<Option<u64>, ApiError> {
    match value {
        None => Ok(None),
        Some(usd) if usd.is_finite() && (0.0..=COST_CAP_MAX_USD).contains(&usd) => {
            Ok(Some((usd * 1_000_000.0).round() as u64))
        }
        Some(_) => Err(invalid(format!("{field} must be from 0 to 1000000000"))),
    }
}

/// `GET /audit`'s query.
#[derive(Debug, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AuditListQuery {
    /// The `next` of the previous page.
    #[param(pattern = "^[0-9]+\\.[0-9a-f]{1,64}$")]
    pub before: Option<String>,
    /// Only entries of this action, such as `member.removed`.
    pub action: Option<String>,
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<usize>,
}

impl AuditListQuery {
    /// Errors: 400 for a malformed `before` or `limit`, or an unknown action.
    pub fn parse(raw: Option<&str>) -> Result<knowledge_core::admin::AuditQuery, ApiError> {
        let q = QueryParams::parse(raw);
        let before = match q.get("before") {
            None => None,
            Some(b) => Some(
                AuditCursor::decode(b)
                    .ok_or_else(|| invalid("before must be the next of a previous page"))?,
            ),
        };
        let action = match q.get("action") {
            None | Some("") => None,
            Some(a) => Some(a.parse::<AuditAction>().map_err(|_| {
                ApiError::from(CoreError::invalid(
                    "invalid_field",
                    "action must be one of the audit log's actions, such as member.removed",
                ))
            })?),
        };
        Ok(knowledge_core::admin::AuditQuery {
            before,
            action,
            limit: page_limit(&q)?,
        })
    }
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuditEntryView {
    pub at: String,
    /// `admin` (a member in the admin API, named by `actorId`), `command-line` (an operator,
    /// with the admin commands), `scim` (the identity provider) or `member` (the member
    /// themselves).
    pub actor: String,
    /// The member who acted, for changes made in the admin API and a member's own.
    pub actor_id: Option<String>,
    /// That member's `userName` when the entry was written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actor_name: Option<String>,
    /// Such as `member.role_changed`.
    pub action: String,
    /// The member's user id, the integration's name, or the organisation's id.
    pub target: String,
    /// The target member's `userName` when the entry was written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_name: Option<String>,
    /// What changed from, such as the role before a role change.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// What it changed to: a role, a new `userName`, limits.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
}

impl From<&AuditEntry> for AuditEntryView {
    fn from(e: &AuditEntry) -> Self {
        let actor = if e.from_command_line() {
            "command-line"
        } else {
            e.actor.as_str()
        };
        Self {
            at: e.at.to_iso8601(),
            actor: actor.to_owned(),
            actor_id: e.by.as_ref().map(|u| u.to_string()),
            actor_name: e.detail.by_name.clone(),
            action: e.action.as_str().to_owned(),
            target: e.target.clone(),
            target_name: e.detail.target_name.clone(),
            from: e.detail.from.clone(),
            to: e.detail.to.clone(),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AuditList {
    pub entries: Vec<AuditEntryView>,
    /// Where the next page starts (`before`); absent on the last page.
    pub next: Option<String>,
}

impl From<AuditPage> for AuditList {
    fn from(p: AuditPage) -> Self {
        Self {
            entries: p.entries.iter().map(AuditEntryView::from).collect(),
            next: p.next.map(|c| c.encode()),
        }
    }
}
