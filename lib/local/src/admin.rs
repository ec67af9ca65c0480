//! Administration of the local service: organisations, members, limits and cookies. The CLI's
//! admin commands and the first-start bootstrap call these.

use knowledge_core::CoreError;
use knowledge_core::clock::{Clock, SystemClock};
use knowledge_core::domain::{
    Actor, AuditAction, AuditEntry, INTEGRATION_LIMIT, IntegrationAuth, IntegrationConfig,
    MEMBER_DATA_LIMIT, Member, MemberData, MemberDataKind, Org, OrgStatus, Plan, Profile, Role,
    SsoConfig, USER_NAME_MAX_CHARS, Usage,
};
use knowledge_core::error::Chain;
use knowledge_core::ids::{OrgId, UserId};
use knowledge_core::ports::{Store, StoreError};
use knowledge_core::scim;
use knowledge_core::seal::{Sealer, credential_context};
use knowledge_core::service::cancel_member_turns;
use knowledge_core::sso::{self, SsoChange};
use serde_json::{Value, json};

/// Errors of admin commands; their text is shown to the operator.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    #[error("no organisation {0}")]
    NoSuchOrg(OrgId),
    #[error("user {user} is not a member of {org}")]
    NoSuchMember { org: OrgId, user: UserId },
    #[error("no integration {name} in {org}")]
    NoSuchIntegration { org: OrgId, name: String },
    /// An argument is not acceptable; the text says which and why.
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Core(CoreError),
}

/// The organisation and user created on a fresh data directory.
pub const DEFAULT_ORG: &str = "org_default";
pub const DEFAULT_USER: &str = "usr_default";

/// Settings to change; `None` leaves one as it is. For the limits, an inner `None` means
/// unlimited.
#[derive(Debug, Clone, Default)]
pub struct OrgChanges {
    pub quota: Option<Option<u64>>,
    pub cap_micros: Option<Option<u64>>,
    pub plan: Option<Plan>,
    pub status: Option<OrgStatus>,
}

pub struct Admin<'a> {
    pub store: &'a dyn Store,
}

impl Admin<'_> {
    pub async fn create_org(
        &self, id: Option<OrgId>, name: &str, plan: Plan,
    ) -> Result<Org, AdminError> {
        let org = Org {
            id: id.unwrap_or_else(OrgId::generate),
            name: name.to_owned(),
            plan,
            status: OrgStatus::Active,
            monthly_query_quota: None,
            cost_cap_micros: None,
            created_at: SystemClock.now(),
            scim_token_sha256: None,
            sso: None,
        };
        self.store.put_org(&org).await?;
        Ok(org)
    }

    pub async fn org(&self, id: &OrgId) -> Result<Org, AdminError> {
        self.store
            .get_org(id)
            .await?
            .ok_or_else(|| AdminError::NoSuchOrg(id.clone()))
    }

    /// Applies `changes` to the organisation's settings.
    pub async fn update_org(&self, id: &OrgId, changes: OrgChanges) -> Result<Org, AdminError> {
        let mut org = self.org(id).await?;
        org.monthly_query_quota = changes.quota.unwrap_or(org.monthly_query_quota);
        org.cost_cap_micros = changes.cap_micros.unwrap_or(org.cost_cap_micros);
        org.plan = changes.plan.unwrap_or(org.plan);
        org.status = changes.status.unwrap_or(org.status);
        self.store.put_org(&org).await?;
        Ok(org)
    }

    pub async fn usage(&self, id: &OrgId) -> Result<Usage, AdminError> {
        Ok(self.store.get_usage(id, &SystemClock.now().month()).await?)
    }

    fn audit(&self, org: &OrgId, action: AuditAction, target: &str) -> AuditEntry {
        AuditEntry::new(org, SystemClock.now(), Actor::Admin, action, target)
    }

    /// Adds a member, or changes an existing member's role (keeping their SCIM profile).
    pub async fn add_member(
        &self, org: &OrgId, user: Option<UserId>, role: Role,
    ) -> Result<Member, AdminError> {
        self.org(org).await?;
        let user = user.unwrap_or_else(UserId::generate);
        // Each lost race means another writer changed the member; a few rounds settle it.
        for _ in 0..16 {
            if let Some(current) = self.store.get_member(org, &user).await? {
                let mut next = current.clone();
                next.role = role;
                next.version += 1;
                next.updated_at = SystemClock.now().max(current.updated_at);
                let audit = self.audit(org, AuditAction::MemberRoleChanged, user.as_str());
                match self.store.update_member(&current, &next, &audit).await {
                    Ok(()) => return Ok(next),
                    Err(StoreError::Conflict | StoreError::Gone) => continue,
                    Err(e) => return Err(e.into()),
                }
            }
            let member = Member::new(org.clone(), user.clone(), role, SystemClock.now());
            let audit = self.audit(org, AuditAction::MemberAdded, user.as_str());
            match self.store.create_member(&member, &audit).await {
                Ok(()) => return Ok(member),
                Err(StoreError::AlreadyExists | StoreError::Conflict) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(StoreError::Conflict.into())
    }

    /// Removes the member with their profile and data, as SCIM deprovisioning does (their
    /// cookies for that organisation stop working at once), then cancels their turns in
    /// flight; returns how many it cancelled. The serving process has no signal from here:
    /// each cancelled run sees the stamp at its next step (an agent call in flight still
    /// completes, and its result is dropped) and ends with `status_terminated`. A failure to
    /// cancel is logged, not returned, as SCIM does: the member is gone either way, and running
    /// the command again would only find nothing to remove.
    pub async fn remove_member(&self, org: &OrgId, user: &UserId) -> Result<usize, AdminError> {
        let audit = self.audit(org, AuditAction::MemberRemoved, user.as_str());
        if !self.store.remove_member(org, user, &audit).await? {
            return Err(AdminError::NoSuchMember {
                org: org.clone(),
                user: user.clone(),
            });
        }
        match cancel_member_turns(self.store, &SystemClock, user, org).await {
            Ok(cancelled) => Ok(cancelled.len()),
            Err(e) => {
                tracing::error!(error = %Chain(&e), "could not cancel a removed member's running turns");
                Ok(0)
            }
        }
    }

    /// Gives a member the `userName` that single sign-on matches (without case) against the
    /// provider's claim, keeping the rest of a SCIM profile. Errors: `NoSuchMember`, `Invalid`
    /// when another member has the name.
    pub async fn name_member(
        &self, org: &OrgId, user: &UserId, user_name: &str,
    ) -> Result<Member, AdminError> {
        let user_name = user_name.trim();
        if user_name.is_empty() || user_name.chars().count() > USER_NAME_MAX_CHARS {
            return Err(AdminError::Invalid(format!(
                "the userName must be 1 to {USER_NAME_MAX_CHARS} characters"
            )));
        }
        for _ in 0..16 {
            let Some(current) = self.store.get_member(org, user).await? else {
                return Err(AdminError::NoSuchMember {
                    org: org.clone(),
                    user: user.clone(),
                });
            };
            let mut next = current.clone();
            let profile = next.profile.get_or_insert_with(|| Profile {
                user_name: String::new(),
                external_id: None,
                attributes: Default::default(),
            });
            profile.user_name = user_name.to_owned();
            next.version += 1;
            next.updated_at = SystemClock.now().max(current.updated_at);
            let audit = self.audit(org, AuditAction::UserUpdated, user.as_str());
            match self.store.update_member(&current, &next, &audit).await {
                Ok(()) => return Ok(next),
                Err(StoreError::Conflict | StoreError::Gone) => continue,
                Err(StoreError::AlreadyExists) => {
                    return Err(AdminError::Invalid(format!(
                        "another member of {org} has the userName {user_name}"
                    )));
                }
                Err(e) => return Err(e.into()),
            }
        }
        Err(StoreError::Conflict.into())
    }

    /// Applies `change` to the organisation's single sign-on (see [`sso::configure`]).
    pub async fn configure_sso(
        &self, org: &OrgId, change: &SsoChange, sealer: &Sealer,
    ) -> Result<SsoConfig, AdminError> {
        let now = SystemClock.now();
        sso::configure(self.store, sealer, now, org, change, Actor::Admin)
            .await
            .map_err(|e| match e {
                CoreError::NotFound("organisation") => AdminError::NoSuchOrg(org.clone()),
                CoreError::NotFound(_) => AdminError::Invalid(format!(
                    "{org} has no single sign-on configured; run `sso set` first"
                )),
                CoreError::InvalidInput { message, .. } => AdminError::Invalid(message),
                other => AdminError::Core(other),
            })
    }

    /// Generates the organisation's SCIM token, replacing (and so invalidating) the previous
    /// one. The token is returned to be shown once; only its hash is stored.
    pub async fn generate_scim_token(&self, org: &OrgId) -> Result<String, AdminError> {
        self.org(org).await?;
        let (token, hash) = scim::token::generate(org).map_err(StoreError::backend)?;
        let audit = self.audit(org, AuditAction::ScimTokenGenerated, org.as_str());
        match self.store.set_scim_token(org, &hash, &audit).await {
            Ok(()) => Ok(token),
            Err(StoreError::Gone) => Err(AdminError::NoSuchOrg(org.clone())),
            Err(e) => Err(e.into()),
        }
    }

    /// Connects the MCP server at `url` to the organisation as `name`, or changes the one of
    /// that name. Errors: `Invalid` (name, URL, or the organisation is at
    /// [`INTEGRATION_LIMIT`]), `NoSuchOrg`.
    pub async fn connect_integration(
        &self, org: &OrgId, name: &str, url: &str, auth: IntegrationAuth,
    ) -> Result<IntegrationConfig, AdminError> {
        if !IntegrationConfig::valid_name(name) {
            return Err(AdminError::Invalid(
                "the name must be 1 to 24 characters of a-z, 0-9 and -, starting with a letter"
                    .into(),
            ));
        }
        if !IntegrationConfig::valid_url(url) {
            return Err(AdminError::Invalid(
                "the URL must be an http:// or https:// address of the server's MCP endpoint"
                    .into(),
            ));
        }
        self.org(org).await?;
        let existing = self.store.list_integrations(org).await?;
        if existing.len() >= INTEGRATION_LIMIT && !existing.iter().any(|i| i.name == name) {
            return Err(AdminError::Invalid(format!(
                "an organisation connects {INTEGRATION_LIMIT} integrations at most"
            )));
        }
        let integration = IntegrationConfig {
            name: name.to_owned(),
            url: url.to_owned(),
            auth,
            created_at: SystemClock.now(),
        };
        let audit = self.audit(org, AuditAction::IntegrationConnected, name);
        self.store
            .put_integration(org, &integration, &audit)
            .await?;
        Ok(integration)
    }

    /// Disconnects an integration. Errors: `NoSuchIntegration`.
    pub async fn disconnect_integration(&self, org: &OrgId, name: &str) -> Result<(), AdminError> {
        let audit = self.audit(org, AuditAction::IntegrationDisconnected, name);
        if self.store.remove_integration(org, name, &audit).await? {
            Ok(())
        } else {
            Err(AdminError::NoSuchIntegration {
                org: org.clone(),
                name: name.to_owned(),
            })
        }
    }

    pub async fn integrations(&self, org: &OrgId) -> Result<Vec<IntegrationConfig>, AdminError> {
        self.org(org).await?;
        Ok(self.store.list_integrations(org).await?)
    }

    /// Stores a member's own token for a per-user integration, sealed for that member and
    /// integration, replacing the previous one. The token is never printed or logged.
    /// Errors: `NoSuchIntegration`, `Invalid` (not a per-user integration, or a token that is
    /// empty, longer than 8 KiB or holds control characters), `NoSuchMember`.
    pub async fn set_credential(
        &self, org: &OrgId, user: &UserId, name: &str, token: &str, sealer: &Sealer,
    ) -> Result<(), AdminError> {
        let integration = self
            .store
            .list_integrations(org)
            .await?
            .into_iter()
            .find(|i| i.name == name)
            .ok_or_else(|| AdminError::NoSuchIntegration {
                org: org.clone(),
                name: name.to_owned(),
            })?;
        if integration.auth != IntegrationAuth::PerUser {
            return Err(AdminError::Invalid(format!(
                "{name} does not take per-user credentials (connect it with --auth per-user)"
            )));
        }
        if token.is_empty() || token.len() > 8192 || token.chars().any(char::is_control) {
            return Err(AdminError::Invalid(
                "the token must be 1 to 8192 characters without control characters".into(),
            ));
        }
        let no_member = || AdminError::NoSuchMember {
            org: org.clone(),
            user: user.clone(),
        };
        let held = self.store.list_member_data(org, user).await?;
        let replaces = held
            .iter()
            .any(|d| d.kind == MemberDataKind::IntegrationToken && d.name == name);
        if !replaces && held.len() >= MEMBER_DATA_LIMIT {
            return Err(AdminError::Invalid(format!(
                "a member holds {MEMBER_DATA_LIMIT} credentials at most"
            )));
        }
        let context = credential_context(org.as_str(), user.as_str(), name, &integration.url);
        let data = MemberData {
            kind: MemberDataKind::IntegrationToken,
            name: name.to_owned(),
            value: sealer.seal(&context, token),
        };
        match self.store.put_member_data(org, user, &data).await {
            Ok(()) => Ok(()),
            Err(StoreError::Gone) => Err(no_member()),
            Err(e) => Err(e.into()),
        }
    }

    /// The organisation's newest audit entries, newest first.
    pub async fn audit_log(
        &self, org: &OrgId, limit: usize,
    ) -> Result<Vec<AuditEntry>, AdminError> {
        self.org(org).await?;
        Ok(self.store.list_audit(org, None, limit).await?)
    }

    /// When the default organisation does not exist (a fresh data directory or table), creates it
    /// and its admin. Returns them when it did.
    pub async fn bootstrap(&self) -> Result<Option<(OrgId, UserId)>, AdminError> {
        let org = OrgId::parse(DEFAULT_ORG).expect("valid id");
        let user = UserId::parse(DEFAULT_USER).expect("valid id");
        if self.store.get_org(&org).await?.is_some() {
            return Ok(None);
        }
        self.create_org(Some(org.clone()), "Default organisation", Plan::Business)
            .await?;
        self.add_member(&org, Some(user.clone()), Role::Admin)
            .await?;
        Ok(Some((org, user)))
    }
}

/// The JSON an admin command prints for an organisation.
pub fn org_json(org: &Org, usage: Option<Usage>) -> Value {
    let mut v = json!({
        "id": org.id.to_string(),
        "name": org.name,
        "plan": org.plan.as_str(),
        "status": org.status.as_str(),
        "ssoEnabled": org.sso_active(),
        "monthlyQueryQuota": org.monthly_query_quota,
        "costCapUsd": org.cost_cap_micros.map(knowledge_core::domain::micros_to_usd),
    });
    if let Some(u) = usage {
        v["usage"] = json!({
            "queries": u.queries,
            "monthToDateUsd": knowledge_core::domain::micros_to_usd(u.cost_micros),
        });
    }
    v
}

/// The JSON an admin command prints for an SSO configuration: never the client secret, and
/// the callback URL to register at the provider.
pub fn sso_json(config: &SsoConfig, origin: &str) -> Value {
    json!({
        "issuer": config.issuer,
        "clientId": config.client_id,
        "clientSecret": "(sealed)",
        "userNameClaim": config.user_name_claim,
        "emailDomains": config.email_domains,
        "enabled": config.enabled,
        "justInTime": config.just_in_time,
        "updatedAt": config.updated_at.to_iso8601(),
        "callbackUrl": format!("{}/api/auth/callback", origin.trim_end_matches('/')),
    })
}

/// The JSON an admin command prints for an integration.
pub fn integration_json(i: &IntegrationConfig) -> Value {
    json!({
        "name": i.name,
        "url": i.url,
        "auth": i.auth.as_str(),
        "createdAt": i.created_at.to_iso8601(),
    })
}

/// The JSON an admin command prints for an audit entry.
pub fn audit_json(e: &AuditEntry) -> Value {
    json!({
        "at": e.at.to_iso8601(),
        "actor": e.actor.as_str(),
        "action": e.action.as_str(),
        "target": e.target,
    })
}
