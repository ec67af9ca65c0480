//! The admin API under `/api/admin`: an organisation's members and roles, groups, single
//! sign-on, the SCIM token, integrations, usage limits and the audit log, for the admins of the
//! active organisation. Requests pass the session routes' guard (cookie, membership, `Origin` and
//! JSON on writes); [`Caller`] then requires the admin role (a viewer gets 403), and every
//! change takes a slot of the admin's rate limit. Each handler parses, calls one use case of
//! [`knowledge_core::admin`] and renders.

pub mod caps;
pub mod documents;
pub mod export;
mod export_text;
pub mod groups;
pub mod memory;
pub mod tools;
pub mod wire;

use axum::Json;
use axum::extract::{FromRequestParts, Path, RawQuery};
use axum::http::StatusCode;
use axum::http::request::Parts;
use knowledge_core::CoreError;
use knowledge_core::admin::{Admin, Administration, IntegrationSettings, PreRegisteredClient};
use knowledge_core::connections::ConnectionKind;
use knowledge_core::domain::IntegrationConfig;
use knowledge_core::policy::limits::Action;
use knowledge_core::ports::OrgLimits;
use knowledge_core::sso::{SsoChange, SsoSettings};
use utoipa::IntoResponses;

use crate::error::{ApiError, ErrorBody};
use crate::extract::JsonBody;
use crate::extract::Member;
use crate::state::SessionApi;
use crate::usage::month::UsageQuery;
use crate::wire::Done;
use wire::*;

/// The errors the admin routes answer, in the documented body.
#[derive(IntoResponses)]
#[allow(dead_code)]
pub enum AdminErrors {
    /// A field or parameter is missing, empty, of the wrong type or malformed, or the body is
    /// not a JSON object of UTF-8.
    #[response(status = 400)]
    BadRequest(ErrorBody),
    /// No valid session cookie of a current member of the active organisation.
    #[response(status = 401)]
    Unauthenticated(ErrorBody),
    /// The member is not an admin (`admin_only`), or a write without this application's
    /// `Origin`.
    #[response(status = 403)]
    Forbidden(ErrorBody),
    /// The member, group, integration or route does not exist in the active organisation.
    #[response(status = 404)]
    NotFound(ErrorBody),
    /// The body did not arrive in time.
    #[response(status = 408)]
    RequestTimeout(ErrorBody),
    /// The state does not allow it now: the organisation's last admin (`last_admin`), its
    /// integration limit, a `userName` or group name taken, a group the identity provider
    /// pushed, or a per-user integration you hold no credential for.
    #[response(status = 409)]
    Conflict(ErrorBody),
    /// The body is larger than 256 KiB.
    #[response(status = 413)]
    PayloadTooLarge(ErrorBody),
    /// The request target is longer than 8 KiB.
    #[response(status = 414)]
    UriTooLong(ErrorBody),
    /// A body not sent as `application/json`.
    #[response(status = 415)]
    UnsupportedMediaType(ErrorBody),
    /// The admin's rate limit: retry after `Retry-After` seconds.
    #[response(
        status = 429,
        headers(("Retry-After" = u64, description = "Seconds until the request may succeed"))
    )]
    TooManyRequests(ErrorBody),
    /// More than 100 header fields, or more than 32 KiB of them.
    #[response(status = 431)]
    HeadersTooLarge(ErrorBody),
    /// Something failed inside the service; the cause is logged, never shown.
    #[response(status = 500)]
    Internal(ErrorBody),
    /// The identity provider or the integration being tested cannot be reached.
    #[response(status = 502)]
    BadGateway(ErrorBody),
}

/// Where the admin routes live.
pub const PREFIX: &str = "/api/admin";

/// An admin of the active organisation, with the admin use cases and the HTTP settings.
pub struct Caller {
    pub app: SessionApi,
    pub admin: Admin,
}

impl Caller {
    /// How an admin sees `integration`.
    fn view(&self, integration: &IntegrationConfig) -> IntegrationView {
        IntegrationView::of(integration, &self.app.config.app_origin, &self.admin.org)
    }

    fn administration(&self) -> Result<&Administration, ApiError> {
        let admin = self.app.admin.as_ref();
        Ok(admin.ok_or_else(|| CoreError::internal("the admin routes are not assembled here"))?)
    }

    /// The use cases, after a slot of the admin's rate limit for `action`.
    async fn admitted(&self, action: Action) -> Result<&Administration, ApiError> {
        let administration = self.administration()?;
        administration.admit(&self.admin, action).await?;
        Ok(administration)
    }
}

impl FromRequestParts<SessionApi> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, app: &SessionApi) -> Result<Self, ApiError> {
        let Member { app, p } = Member::from_request_parts(parts, app).await?;
        Ok(Self {
            app,
            admin: Admin::member(p)?,
        })
    }
}

/// List the organisation's members by user id, optionally those matching a search.
#[utoipa::path(get, path = "/members", operation_id = "adminListMembers", params(MemberListQuery),
    responses((status = 200, description = "One page of members.", body = MemberList), AdminErrors))]
pub async fn list_members(c: Caller, RawQuery(q): RawQuery) -> Result<Json<MemberList>, ApiError> {
    let query = MemberListQuery::parse(q.as_deref())?;
    let page = c.administration()?.members(&c.admin, &query).await?;
    Ok(Json(page.into()))
}

/// Add a member by the `userName` single sign-on will match: how an organisation without SCIM
/// lets someone in. 409 `user_name_taken` when another member has it.
#[utoipa::path(post, path = "/members", operation_id = "adminInviteMember",
    request_body = InviteRequest,
    responses((status = 201, description = "The new member.", body = MemberView), AdminErrors))]
pub async fn invite_member(
    c: Caller, JsonBody(body): JsonBody<InviteRequest>,
) -> Result<(StatusCode, Json<MemberView>), ApiError> {
    let uc = c.admitted(Action::AdminWrite).await?;
    let member = uc
        .invite_member(&c.admin, &body.user_name, body.role)
        .await?;
    Ok((StatusCode::CREATED, Json((&member).into())))
}

/// Promote a member to admin or demote one to viewer. The last admin cannot be demoted (409
/// `last_admin`), also when two admins demote each other at once.
#[utoipa::path(patch, path = "/members/{userId}", operation_id = "adminSetRole",
    params(("userId" = String, Path, description = "The member's user id")),
    request_body = RoleRequest,
    responses((status = 200, description = "The member as now stored.", body = MemberView),
        AdminErrors))]
pub async fn set_role(
    c: Caller, Path(user): Path<String>, JsonBody(body): JsonBody<RoleRequest>,
) -> Result<Json<MemberView>, ApiError> {
    let user = user_id(&user)?;
    let uc = c.admitted(Action::AdminWrite).await?;
    let member = uc.set_role(&c.admin, &user, body.role).await?;
    Ok(Json((&member).into()))
}

/// Remove a member as SCIM deprovisioning does: profile, credentials and agent memory in one
/// step, their cookies refused at once, their running turns cancelled.
#[utoipa::path(delete, path = "/members/{userId}", operation_id = "adminRemoveMember",
    params(("userId" = String, Path, description = "The member's user id")),
    responses((status = 200, description = "The member is gone.", body = Removed),
        AdminErrors))]
pub async fn remove_member(c: Caller, Path(user): Path<String>) -> Result<Json<Removed>, ApiError> {
    let user = user_id(&user)?;
    let uc = c.admitted(Action::AdminWrite).await?;
    let cancelled_turns = uc.remove_member(&c.admin, &user).await?;
    Ok(Json(Removed {
        ok: true,
        cancelled_turns,
    }))
}

fn sso_view(c: &Caller, config: Option<&knowledge_core::domain::SsoConfig>) -> SsoView {
    SsoView::new(config, c.app.config.callback_url(&c.admin.org))
}

/// The organisation's single sign-on; never its client secret.
#[utoipa::path(get, path = "/sso", operation_id = "adminGetSso",
    responses((status = 200, description = "The configuration.", body = SsoView), AdminErrors))]
pub async fn get_sso(c: Caller) -> Result<Json<SsoView>, ApiError> {
    let config = c.administration()?.sso(&c.admin).await?;
    Ok(Json(sso_view(&c, config.as_ref())))
}

/// Configure single sign-on through the organisation's OpenID provider.
#[utoipa::path(put, path = "/sso", operation_id = "adminSetSso", request_body = SsoRequest,
    responses((status = 200, description = "The configuration as now stored.", body = SsoView),
        AdminErrors))]
pub async fn set_sso(
    c: Caller, JsonBody(body): JsonBody<SsoRequest>,
) -> Result<Json<SsoView>, ApiError> {
    let uc = c.admitted(Action::AdminWrite).await?;
    let enabled = match body.enabled {
        Some(on) => on,
        None => uc.sso(&c.admin).await?.is_some_and(|s| s.enabled),
    };
    let settings = SsoSettings {
        issuer: body.issuer,
        client_id: body.client_id,
        client_secret: body.client_secret.filter(|s| !s.is_empty()),
        user_name_claim: body.user_name_claim,
        email_domains: body.email_domains,
        just_in_time: body.just_in_time,
        enabled,
    };
    let config = uc
        .configure_sso(&c.admin, &SsoChange::Set(settings))
        .await?;
    Ok(Json(sso_view(&c, Some(&config))))
}

/// Switch the configured single sign-on on or off.
#[utoipa::path(put, path = "/sso/enabled", operation_id = "adminEnableSso",
    request_body = SsoEnabledRequest,
    responses((status = 200, description = "The configuration as now stored.", body = SsoView),
        AdminErrors))]
pub async fn enable_sso(
    c: Caller, JsonBody(body): JsonBody<SsoEnabledRequest>,
) -> Result<Json<SsoView>, ApiError> {
    let uc = c.admitted(Action::AdminWrite).await?;
    let change = SsoChange::Enable(body.enabled);
    let config = uc.configure_sso(&c.admin, &change).await?;
    Ok(Json(sso_view(&c, Some(&config))))
}

/// Fetch an issuer's discovery document and keys now, as a sign-in would: a dry run that
/// stores nothing. 502 `identity_provider_unavailable` when they cannot be fetched.
#[utoipa::path(post, path = "/sso/test", operation_id = "adminTestSso",
    request_body = SsoTestRequest,
    responses((status = 200, description = "The provider answered.", body = SsoTested), AdminErrors))]
pub async fn test_sso(
    c: Caller, JsonBody(body): JsonBody<SsoTestRequest>,
) -> Result<Json<SsoTested>, ApiError> {
    let uc = c.admitted(Action::AdminProbe).await?;
    uc.test_sso(&c.admin, &body.issuer).await?;
    Ok(Json(SsoTested {
        ok: true,
        issuer: body.issuer.trim().to_owned(),
    }))
}

fn scim_base_url(c: &Caller) -> String {
    format!("{}/api/scim", c.app.config.app_origin)
}

/// Whether a SCIM token exists and when it was made, and the base URL for the provider.
#[utoipa::path(get, path = "/scim", operation_id = "adminGetScim",
    responses((status = 200, description = "The SCIM set-up.", body = ScimView), AdminErrors))]
pub async fn get_scim(c: Caller) -> Result<Json<ScimView>, ApiError> {
    let status = c.administration()?.scim_status(&c.admin).await?;
    Ok(Json(ScimView::new(&status, scim_base_url(&c))))
}

/// Generate the SCIM token: shown in this answer only, and the previous token stops working
/// at once.
#[utoipa::path(post, path = "/scim/token", operation_id = "adminGenerateScimToken",
    responses((status = 200, description = "The new token, shown once.", body = ScimToken),
        AdminErrors))]
pub async fn generate_scim_token(c: Caller) -> Result<Json<ScimToken>, ApiError> {
    let uc = c.admitted(Action::AdminWrite).await?;
    let (token, at) = uc.generate_scim_token(&c.admin).await?;
    Ok(Json(ScimToken {
        token,
        created_at: at.to_iso8601(),
        base_url: scim_base_url(&c),
    }))
}

/// The organisation's integrations (remote MCP servers), by name.
#[utoipa::path(get, path = "/integrations", operation_id = "adminListIntegrations",
    responses((status = 200, description = "The integrations.", body = IntegrationList),
        AdminErrors))]
pub async fn list_integrations(c: Caller) -> Result<Json<IntegrationList>, ApiError> {
    let list = c.administration()?.integrations(&c.admin).await?;
    Ok(Json(IntegrationList {
        integrations: list.iter().map(|i| c.view(i)).collect(),
    }))
}

/// Connect an MCP server under a name, or change the one of that name.
#[utoipa::path(put, path = "/integrations/{name}", operation_id = "adminConnectIntegration",
    params(("name" = String, Path, description = "1 to 24 of a-z, 0-9 and -, from a letter")),
    request_body = IntegrationRequest,
    responses((status = 200, description = "The integration as now stored.",
        body = IntegrationView), AdminErrors))]
pub async fn connect_integration(
    c: Caller, Path(name): Path<String>, JsonBody(body): JsonBody<IntegrationRequest>,
) -> Result<Json<IntegrationView>, ApiError> {
    let uc = c.admitted(Action::AdminWrite).await?;
    let client = match (body.client_id, body.client_secret) {
        (Some(client_id), client_secret) => Some(PreRegisteredClient {
            client_id,
            client_secret,
        }),
        (None, Some(_)) => {
            let message = "a clientSecret needs its clientId";
            return Err(CoreError::invalid("invalid_field", message).into());
        }
        (None, None) => None,
    };
    let settings = IntegrationSettings {
        name,
        url: body.url,
        auth: body.auth,
        client,
    };
    let integration = uc.connect_integration(&c.admin, &settings).await?;
    Ok(Json(c.view(&integration)))
}

/// Connect the organisation's own account to an integration an admin connects for everyone
/// (`oauth_organisation`): answers where to send the browser, and sets the cookie that binds
/// the connect to this browser. 409 `wrong_kind` for one each member connects.
#[utoipa::path(post, path = "/integrations/{name}/connect", operation_id = "adminConnectOrganisation",
    params(("name" = String, Path, description = "The integration's name")),
    responses((status = 200, description = "Go to `authorizationUrl`.",
        body = crate::connections::ConnectStarted), AdminErrors))]
pub async fn connect_organisation(
    c: Caller, Path(name): Path<String>,
) -> Result<axum::response::Response, ApiError> {
    c.admitted(Action::AdminWrite).await?;
    let user = c.admin.by.clone().ok_or(CoreError::AdminOnly)?;
    let started = crate::connections::connections(&c.app)?
        .start(
            &c.admin.org,
            &user,
            c.admin.by_name.as_deref(),
            &name,
            ConnectionKind::Organisation,
        )
        .await?;
    crate::connections::started_response(&c.app, started)
}

/// Disconnect the organisation's account: its tokens are deleted, and revoked at the
/// authorization server where it offers revocation. 404 when it is not connected.
#[utoipa::path(delete, path = "/integrations/{name}/connection", operation_id = "adminDisconnectOrganisation",
    params(("name" = String, Path, description = "The integration's name")),
    responses((status = 200, description = "Disconnected.", body = Done), AdminErrors))]
pub async fn disconnect_organisation(
    c: Caller, Path(name): Path<String>,
) -> Result<Json<Done>, ApiError> {
    c.admitted(Action::AdminWrite).await?;
    let user = c.admin.by.clone().ok_or(CoreError::AdminOnly)?;
    crate::connections::connections(&c.app)?
        .disconnect(
            &c.admin.org,
            &user,
            c.admin.by_name.as_deref(),
            &name,
            ConnectionKind::Organisation,
        )
        .await?;
    Ok(Json(Done::OK))
}

/// Disconnect an integration.
#[utoipa::path(delete, path = "/integrations/{name}", operation_id = "adminDisconnectIntegration",
    params(("name" = String, Path, description = "The integration's name")),
    responses((status = 200, description = "Disconnected.", body = Done), AdminErrors))]
pub async fn disconnect_integration(
    c: Caller, Path(name): Path<String>,
) -> Result<Json<Done>, ApiError> {
    let uc = c.admitted(Action::AdminWrite).await?;
    uc.disconnect_integration(&c.admin, &name).await?;
    Ok(Json(Done::OK))
}

/// List an integration's tools now, as the agent would, with your own credential for a
/// per-user integration. 502 `integration_unavailable` when it cannot.
#[utoipa::path(post, path = "/integrations/{name}/test", operation_id = "adminTestIntegration",
    params(("name" = String, Path, description = "The integration's name")),
    responses((status = 200, description = "Its tools.", body = ToolList), AdminErrors))]
pub async fn test_integration(
    c: Caller, Path(name): Path<String>,
) -> Result<Json<ToolList>, ApiError> {
    let uc = c.admitted(Action::AdminProbe).await?;
    let tools = uc.test_integration(&c.admin, &name).await?;
    Ok(Json(tools.into()))
}

/// Store a member's own token for a per-user integration, replacing theirs: sealed for that
/// member and the integration's URL, never shown again.
#[utoipa::path(put, path = "/integrations/{name}/credentials/{userId}",
    operation_id = "adminStoreCredential",
    params(("name" = String, Path, description = "The integration's name"),
        ("userId" = String, Path, description = "The member's user id")),
    request_body = CredentialRequest,
    responses((status = 200, description = "Stored.", body = Done), AdminErrors))]
pub async fn store_credential(
    c: Caller, Path((name, user)): Path<(String, String)>,
    JsonBody(body): JsonBody<CredentialRequest>,
) -> Result<Json<Done>, ApiError> {
    let user = user_id(&user)?;
    let uc = c.admitted(Action::AdminWrite).await?;
    uc.set_credential(&c.admin, &user, &name, &body.token)
        .await?;
    Ok(Json(Done::OK))
}

/// The members who hold a credential for a per-user integration; never the credential.
#[utoipa::path(get, path = "/integrations/{name}/credentials",
    operation_id = "adminListCredentialHolders",
    params(("name" = String, Path, description = "The integration's name")),
    responses((status = 200, description = "The holders.", body = HolderList), AdminErrors))]
pub async fn credential_holders(
    c: Caller, Path(name): Path<String>,
) -> Result<Json<HolderList>, ApiError> {
    let holders = (c.administration()?)
        .credential_holders(&c.admin, &name)
        .await?;
    Ok(Json(HolderList {
        members: holders
            .iter()
            .map(|h| MemberView::from(&h.member))
            .collect(),
    }))
}

/// A month's queries and spend against the quota and the cost cap, and the members who used
/// the most against their allowances; this month unless `month` names another.
#[utoipa::path(get, path = "/usage", operation_id = "adminGetUsage", params(UsageQuery),
    responses((status = 200, description = "The month's usage.", body = UsageView), AdminErrors))]
pub async fn get_usage(c: Caller, RawQuery(q): RawQuery) -> Result<Json<UsageView>, ApiError> {
    let month = UsageQuery::parse(q.as_deref())?;
    let uc = c.administration()?;
    let usage = match month {
        Some(month) => uc.usage_of(&c.admin, &month).await?,
        None => uc.usage(&c.admin).await?,
    };
    Ok(Json(usage.into()))
}

/// Set the monthly query quota and cost cap, and each member's allowance; one left out (or
/// null) is unlimited.
#[utoipa::path(put, path = "/usage/limits", operation_id = "adminSetLimits",
    request_body = LimitsRequest,
    responses((status = 200, description = "The month's usage under the new limits.",
        body = UsageView), AdminErrors))]
pub async fn set_limits(
    c: Caller, JsonBody(body): JsonBody<LimitsRequest>,
) -> Result<Json<UsageView>, ApiError> {
    let limits = OrgLimits::try_from(body)?;
    let uc = c.admitted(Action::AdminWrite).await?;
    let usage = uc.set_limits(&c.admin, limits).await?;
    Ok(Json(usage.into()))
}

/// The audit log, newest first, optionally of one action.
#[utoipa::path(get, path = "/audit", operation_id = "adminListAudit", params(AuditListQuery),
    responses((status = 200, description = "One page of the log.", body = AuditList), AdminErrors))]
pub async fn list_audit(c: Caller, RawQuery(q): RawQuery) -> Result<Json<AuditList>, ApiError> {
    let query = AuditListQuery::parse(q.as_deref())?;
    let page = c.administration()?.audit_log(&c.admin, &query).await?;
    Ok(Json(page.into()))
}
