//! The organisation's integrations (remote MCP servers): connect, disconnect, test one by
//! listing its tools, see who holds a per-user credential, and store a member's credential.

use crate::domain::{
    AuditAction, GrantOwner, INTEGRATION_LIMIT, IntegrationAuth, IntegrationConfig,
    MEMBER_DATA_LIMIT, Member, MemberData, MemberDataKind, ToolRule,
};
use crate::error::CoreError;
use crate::ids::UserId;
use crate::ports::{IntegrationError, StoreError, ToolSpec};
use crate::seal::credential_context;
use crate::vault::GrantAt;

use super::{Admin, Administration};

/// What an admin sets for an integration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IntegrationSettings {
    pub name: String,
    pub url: String,
    pub auth: IntegrationAuth,
    /// For the OAuth kinds: a client registered by hand at the authorization server, used
    /// rather than a registration of the service's own.
    pub client: Option<PreRegisteredClient>,
}

/// A client an admin registered at an integration's authorization server.
#[derive(Clone, PartialEq, Eq)]
pub struct PreRegisteredClient {
    pub client_id: String,
    /// `None` for a public client.
    pub client_secret: Option<String>,
}

impl std::fmt::Debug for PreRegisteredClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreRegisteredClient")
            .field("client_id", &self.client_id)
            .finish_non_exhaustive()
    }
}

/// A member holding a credential for an integration (never the credential).
#[derive(Debug, Clone, PartialEq)]
pub struct CredentialHolder {
    pub member: Member,
}

/// Longest per-user credential accepted, in bytes.
const CREDENTIAL_MAX: usize = 8192;

fn invalid(message: impl Into<String>) -> CoreError {
    CoreError::invalid("invalid_field", message)
}

impl Administration {
    pub async fn integrations(&self, admin: &Admin) -> Result<Vec<IntegrationConfig>, CoreError> {
        self.org(admin).await?;
        Ok(self.stores.directory.list_integrations(&admin.org).await?)
    }

    async fn integration(&self, admin: &Admin, name: &str) -> Result<IntegrationConfig, CoreError> {
        (self.stores.directory.list_integrations(&admin.org).await?)
            .into_iter()
            .find(|i| i.name == name)
            .ok_or(CoreError::NotFound("integration"))
    }

    /// Connects the MCP server at `settings.url` as `settings.name`, or changes the one of that
    /// name (keeping when it was connected). Members' credentials and grants for it stay, but
    /// are sealed for its URL: a new URL makes them unusable until replaced. An OAuth kind
    /// first discovers the server's authorization and settles the service's client there
    /// (see [`Administration::oauth_server`]). Errors: `InvalidInput` (name, URL, or the
    /// organisation is at [`INTEGRATION_LIMIT`]; for OAuth, what discovery refused),
    /// `NotFound`, `DestinationRefused`.
    pub async fn connect_integration(
        &self, admin: &Admin, settings: &IntegrationSettings,
    ) -> Result<IntegrationConfig, CoreError> {
        let name = settings.name.as_str();
        if !IntegrationConfig::valid_name(name) {
            return Err(invalid(
                "the name must be 1 to 24 characters of a-z, 0-9 and -, starting with a letter",
            ));
        }
        if !IntegrationConfig::valid_url(&settings.url) {
            return Err(invalid(
                "the url must be an http:// or https:// address of the server's MCP endpoint",
            ));
        }
        self.org(admin).await?;
        let existing = self.stores.directory.list_integrations(&admin.org).await?;
        let previous = existing.iter().find(|i| i.name == name);
        if existing.len() >= INTEGRATION_LIMIT && previous.is_none() {
            return Err(CoreError::conflict(
                "integration_limit",
                format!("an organisation connects {INTEGRATION_LIMIT} integrations at most"),
            ));
        }
        let oauth = match settings.auth.is_oauth() {
            true => Some(self.oauth_server(admin, settings, previous).await?),
            false => None,
        };
        let integration = IntegrationConfig {
            name: name.to_owned(),
            url: settings.url.clone(),
            auth: settings.auth,
            created_at: previous.map_or_else(|| self.now(), |p| p.created_at),
            oauth,
            org_grant_sealed: None,
            tool_rules: Default::default(),
        };
        let audit = admin.audit(self.now(), AuditAction::IntegrationConnected, name);
        self.stores
            .directory
            .put_integration(&admin.org, &integration, &audit)
            .await?;
        Ok(integration)
    }

    /// Disconnects an integration, with the organisation's OAuth grant for it, which is then
    /// revoked at its server (best effort). Members' credentials and grants for it stay until
    /// they are replaced or the member is removed. Errors: `NotFound`.
    pub async fn disconnect_integration(&self, admin: &Admin, name: &str) -> Result<(), CoreError> {
        let org_grant = match &self.vault {
            Some(vault) => {
                let integration = self.integration(admin, name).await.ok();
                integration.and_then(|i| {
                    let at = GrantAt::new(&admin.org, GrantOwner::Organisation, &i);
                    let grant = vault.open(&at, i.org_grant_sealed.as_deref()?)?;
                    Some((at, grant))
                })
            }
            None => None,
        };
        let audit = admin.audit(self.now(), AuditAction::IntegrationDisconnected, name);
        let removed = (self.stores.directory)
            .remove_integration(&admin.org, name, &audit)
            .await?;
        if !removed {
            return Err(CoreError::NotFound("integration"));
        }
        if let (Some(vault), Some(grant)) = (&self.vault, org_grant) {
            vault.revoke_all(vec![grant]).await;
        }
        Ok(())
    }

    /// Sets the admin's rule for `tool` (as the agent is offered it, `<name>_…`) of the
    /// integration `name`, or with `None` clears it (the tool's hints decide again), audited.
    /// A tool the server does not offer (yet) may have a rule: the server's list is not read.
    /// Errors: `NotFound` (the integration); 400 `invalid_field` (a name not of this
    /// integration's tools).
    pub async fn set_tool_rule(
        &self, admin: &Admin, name: &str, tool: &str, rule: Option<ToolRule>,
    ) -> Result<(), CoreError> {
        let config = self.integration(admin, name).await?;
        let own = tool
            .strip_prefix(config.name.as_str())
            .and_then(|rest| rest.strip_prefix('_'))
            .is_some_and(|rest| !rest.is_empty());
        let plain = tool.len() <= 64
            && (tool.chars()).all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !(own && plain) {
            return Err(invalid(format!(
                "a tool of {name} is named {name}_<tool>, with letters, digits, _ and - (64 at most)"
            )));
        }
        let audit = admin.audit(self.now(), AuditAction::ToolPolicyChanged, tool);
        let stores = &self.stores.directory;
        match stores
            .set_tool_rule(&admin.org, name, tool, rule, &audit)
            .await
        {
            Err(StoreError::Gone) => Err(CoreError::NotFound("integration")),
            done => Ok(done?),
        }
    }

    /// The tools the integration offers, listed now as the agent would list them, with the
    /// acting admin's own credential for a per-user integration, each with the admin's rule
    /// for it. Errors: `NotFound`,
    /// `Conflict` (`no_credential`: a per-user integration the admin holds no credential
    /// for), `DestinationRefused` (its server is at an address the deployment refuses),
    /// `IntegrationUnavailable` as 502.
    pub async fn test_integration(
        &self, admin: &Admin, name: &str,
    ) -> Result<Vec<(ToolSpec, Option<ToolRule>)>, CoreError> {
        let config = self.integration(admin, name).await?;
        let integrations = self
            .integrations
            .as_ref()
            .ok_or_else(|| CoreError::internal("no integrations adapter here"))?;
        let user = admin.by.clone().unwrap_or_else(UserId::generate);
        let reached = integrations
            .connected(&admin.org, &user)
            .await
            .map_err(CoreError::internal)?;
        let Some(integration) = reached.into_iter().find(|i| i.name() == config.name) else {
            return Err(CoreError::conflict(
                "no_credential",
                "you hold no credential for this per-user integration; store one to test it",
            ));
        };
        let tools = integration.tools().await.map_err(|e| match e {
            IntegrationError::Refused(refused) => CoreError::DestinationRefused(refused),
            e => {
                tracing::warn!(integration = name, error = %e, "an integration test failed");
                CoreError::IntegrationUnavailable
            }
        })?;
        let rules = &config.tool_rules;
        Ok((tools.into_iter())
            .map(|t| {
                let rule = rules.get(&t.name).copied();
                (t, rule)
            })
            .collect())
    }

    /// The members who hold a credential for the integration, by user id. Reads every
    /// member's data: one request per member. Errors: `NotFound`.
    pub async fn credential_holders(
        &self, admin: &Admin, name: &str,
    ) -> Result<Vec<CredentialHolder>, CoreError> {
        self.integration(admin, name).await?;
        let mut holders = Vec::new();
        for member in self.stores.directory.list_members(&admin.org).await? {
            let data = self
                .stores
                .directory
                .list_member_data(&admin.org, &member.user)
                .await?;
            if data
                .iter()
                .any(|d| d.kind == MemberDataKind::IntegrationToken && d.name == name)
            {
                holders.push(CredentialHolder { member });
            }
        }
        Ok(holders)
    }

    /// Stores a member's own token for a per-user integration, sealed for that member and the
    /// integration's URL, replacing the previous one. The token is never logged.
    /// Errors: `NotFound` (integration or member), `InvalidInput` (not a per-user
    /// integration, a token that is empty, longer than 8 KiB or holds control characters, or
    /// a member at [`MEMBER_DATA_LIMIT`]).
    pub async fn set_credential(
        &self, admin: &Admin, user: &UserId, name: &str, token: &str,
    ) -> Result<(), CoreError> {
        let integration = self.integration(admin, name).await?;
        if integration.auth != IntegrationAuth::PerUser {
            return Err(invalid(format!(
                "{name} does not take per-user credentials"
            )));
        }
        if token.is_empty() || token.len() > CREDENTIAL_MAX || token.chars().any(char::is_control) {
            return Err(invalid(format!(
                "the token must be 1 to {CREDENTIAL_MAX} bytes without control characters"
            )));
        }
        let held = self
            .stores
            .directory
            .list_member_data(&admin.org, user)
            .await?;
        let replaces = held
            .iter()
            .any(|d| d.kind == MemberDataKind::IntegrationToken && d.name == name);
        if !replaces && held.len() >= MEMBER_DATA_LIMIT {
            return Err(invalid(format!(
                "a member holds {MEMBER_DATA_LIMIT} credentials at most"
            )));
        }
        let context = credential_context(admin.org.as_str(), user.as_str(), name, &integration.url);
        let data = MemberData {
            kind: MemberDataKind::IntegrationToken,
            name: name.to_owned(),
            value: self.sealer()?.seal(&context, token),
        };
        let audit = admin.audit(self.now(), AuditAction::MemberDataStored, user.as_str());
        let audit = match self.stores.directory.get_member(&admin.org, user).await? {
            Some(member) => audit.target_named(member.user_name()),
            None => audit,
        };
        match self
            .stores
            .directory
            .put_member_data(&admin.org, user, &data, &audit)
            .await
        {
            Ok(()) => Ok(()),
            Err(StoreError::Gone) => Err(CoreError::NotFound("member")),
            Err(e) => Err(e.into()),
        }
    }
}
