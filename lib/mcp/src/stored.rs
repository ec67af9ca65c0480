//! The integrations each organisation connected, read from the store on every request, with
//! the member's own sealed credential for those that authenticate per user. Whether a member
//! reaches any is answered from the same reads without building an MCP client, so a binary
//! that only asks that ([`IntegrationReach`]) links none.

use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use knowledge_core::domain::{
    GrantOwner, IntegrationAuth, IntegrationConfig, MemberData, MemberDataKind,
};
use knowledge_core::ids::{OrgId, UserId};
use knowledge_core::ports::{
    DirectoryStore, Integration, IntegrationError, IntegrationReach, Integrations,
};
use knowledge_core::seal::{Sealer, credential_context};
use knowledge_core::vault::{GrantAt, Vault, open_grant};

use knowledge_egress::Egress;

use crate::integration::{Credential, GrantCredential, McpHttp, McpIntegration, Timeouts};

/// [`Integrations`] from [`DirectoryStore::list_integrations`], each an [`McpIntegration`], after the
/// fixed ones given at construction. Caches nothing: every `connected` or `reaches_any` reads
/// the store, and an opened credential lives only in the integrations that call returns.
pub struct StoredIntegrations {
    store: Arc<dyn DirectoryStore>,
    sealer: Arc<Sealer>,
    fixed: Arc<dyn Integrations>,
    timeouts: Timeouts,
    egress: Egress,
    /// The vault of OAuth grants; without one (a process that only asks
    /// [`IntegrationReach`]), OAuth integrations are reached but never used.
    vault: Option<Arc<Vault>>,
    /// The one HTTP client of every MCP server, built at the first [`Integrations::connected`]
    /// (so that a binary that only asks [`IntegrationReach`] builds and links none).
    http: OnceLock<McpHttp>,
}

/// What a member's requests to an integration are authorized by, as read from the store.
enum Reach {
    Open,
    Bearer(String),
    /// A grant that opens and is active, and its sealed value as read.
    Grant(Box<GrantAt>, String),
}

impl StoredIntegrations {
    /// The `fixed` integrations (the local docs search of the default organisation, say) come
    /// first; `sealer` opens the members' credentials; `timeouts` apply to every MCP server,
    /// reached under `egress`.
    pub fn new(
        store: Arc<dyn DirectoryStore>, sealer: Arc<Sealer>, fixed: Arc<dyn Integrations>,
        timeouts: Timeouts, egress: Egress,
    ) -> Self {
        Self {
            store,
            sealer,
            fixed,
            timeouts,
            egress,
            vault: None,
            http: OnceLock::new(),
        }
    }

    /// The same, handing OAuth integrations access tokens from `vault`.
    pub fn with_vault(mut self, vault: Arc<Vault>) -> Self {
        self.vault = Some(vault);
        self
    }

    /// The MCP servers' client. Errors: `Unavailable` when it cannot be built.
    fn http(&self) -> Result<McpHttp, IntegrationError> {
        if let Some(http) = self.http.get() {
            return Ok(http.clone());
        }
        let http = McpHttp::new(self.egress)
            .map_err(|e| IntegrationError::Unavailable(format!("the MCP client: {e}")))?;
        Ok(self.http.get_or_init(|| http).clone())
    }

    /// The organisation's MCP servers that `user` reaches, by name, each with what authorizes
    /// it: those that authenticate per user only where `user` holds a credential that opens,
    /// OAuth ones only where the member's (or the organisation's) grant opens and is active.
    /// Reads the member's data only when some server needs it: the grants come in the same
    /// reads. Errors: `Unavailable` when the store fails.
    async fn reached(
        &self, org: &OrgId, user: &UserId,
    ) -> Result<Vec<(IntegrationConfig, Reach)>, IntegrationError> {
        let store_failed = |e| IntegrationError::Unavailable(format!("reading integrations: {e}"));
        let configs = self
            .store
            .list_integrations(org)
            .await
            .map_err(store_failed)?;
        let per_member = |auth| {
            matches!(
                auth,
                IntegrationAuth::PerUser | IntegrationAuth::OauthMember
            )
        };
        let data = if configs.iter().any(|c| per_member(c.auth)) {
            self.store
                .list_member_data(org, user)
                .await
                .map_err(store_failed)?
        } else {
            Vec::new()
        };
        let reach = |config: &IntegrationConfig| -> Option<Reach> {
            let (owner, sealed) = match config.auth {
                IntegrationAuth::None => return Some(Reach::Open),
                IntegrationAuth::PerUser => {
                    let token = member_credential(&self.sealer, org, user, config, &data)?;
                    return Some(Reach::Bearer(token));
                }
                IntegrationAuth::OauthMember => {
                    let held = data
                        .iter()
                        .find(|d| d.kind == MemberDataKind::OAuthGrant && d.name == config.name)?;
                    (GrantOwner::Member(user.clone()), held.value.clone())
                }
                IntegrationAuth::OauthOrganisation => {
                    (GrantOwner::Organisation, config.org_grant_sealed.clone()?)
                }
            };
            let at = GrantAt::new(org, owner, config);
            let grant = open_grant(&self.sealer, &at, &sealed)?;
            grant
                .is_active()
                .then(|| Reach::Grant(Box::new(at), sealed))
        };
        Ok(configs
            .iter()
            .filter_map(|config| Some((config.clone(), reach(config)?)))
            .collect())
    }

    /// The credential for a reached integration: a grant's access token from the vault,
    /// refreshed first when due. `None` when it cannot be used now (logged).
    async fn credential(&self, name: &str, reach: Reach) -> Option<Credential> {
        match reach {
            Reach::Open => Some(Credential::None),
            Reach::Bearer(token) => Some(Credential::Bearer(token)),
            Reach::Grant(at, sealed) => {
                let vault = self.vault.as_ref()?;
                match vault.access(&at, Some(&sealed)).await {
                    Ok(access) => Some(Credential::Grant(Arc::new(GrantCredential::new(
                        vault.clone(),
                        *at,
                        access,
                    )))),
                    Err(e) => {
                        tracing::warn!(integration = name, error = %e, "an OAuth integration is left out");
                        None
                    }
                }
            }
        }
    }
}

/// The bearer token `user` holds for `integration` in `org`: their
/// [`MemberDataKind::IntegrationToken`] named after it, opened for its
/// [`credential_context`]. `None` when they have none, or it does not open (sealed for someone
/// else, for the integration at another URL, under another key, or tampered with).
pub fn member_credential(
    sealer: &Sealer, org: &OrgId, user: &UserId, integration: &IntegrationConfig,
    data: &[MemberData],
) -> Option<String> {
    let name = integration.name.as_str();
    let sealed = data
        .iter()
        .find(|d| d.kind == MemberDataKind::IntegrationToken && d.name == name)?;
    let context = credential_context(org.as_str(), user.as_str(), name, &integration.url);
    match sealer.open(&context, &sealed.value) {
        Ok(token) => Some(token),
        Err(_) => {
            tracing::warn!(
                org = %org, user = %user, integration = name,
                "a member's credential for an integration does not open; leaving it out"
            );
            None
        }
    }
}

#[async_trait]
impl IntegrationReach for StoredIntegrations {
    /// Whether `connected` would return any, from the same reads, building no MCP client and
    /// refreshing nothing. Errors: `Unavailable` when the store fails.
    async fn reaches_any(&self, org: &OrgId, user: &UserId) -> Result<bool, IntegrationError> {
        let reached = self.reached(org, user).await?;
        Ok(!reached.is_empty() || self.fixed.reaches_any(org, user).await?)
    }
}

#[async_trait]
impl Integrations for StoredIntegrations {
    /// The fixed integrations, then the organisation's MCP servers by name, leaving out those
    /// `user` holds no usable credential or grant for.
    /// Errors: `Unavailable` when the store fails.
    async fn connected(
        &self, org: &OrgId, user: &UserId,
    ) -> Result<Vec<Arc<dyn Integration>>, IntegrationError> {
        let reached = self.reached(org, user).await?;
        let mut connected = self.fixed.connected(org, user).await?;
        for (config, reach) in reached {
            let Some(credential) = self.credential(&config.name, reach).await else {
                continue;
            };
            let integration = McpIntegration::new(
                config.name,
                config.url,
                credential,
                self.timeouts,
                self.http()?,
            );
            connected.push(Arc::new(integration.with_rules(config.tool_rules)));
        }
        Ok(connected)
    }
}

#[cfg(test)]
mod tests {
    use knowledge_core::clock::Timestamp;

    use super::*;

    fn ids() -> (OrgId, UserId) {
        (OrgId::generate(), UserId::generate())
    }

    fn wiki(name: &str) -> IntegrationConfig {
        IntegrationConfig {
            name: name.to_owned(),
            url: format!("https://{name}.example/mcp"),
            auth: IntegrationAuth::PerUser,
            created_at: Timestamp(0),
            oauth: None,
            org_grant_sealed: None,
            tool_rules: Default::default(),
        }
    }

    fn context(org: &OrgId, user: &UserId, name: &str) -> String {
        credential_context(org.as_str(), user.as_str(), name, &wiki(name).url)
    }

    fn token(name: &str, value: String) -> MemberData {
        MemberData {
            kind: MemberDataKind::IntegrationToken,
            name: name.to_owned(),
            value,
        }
    }

    #[test]
    fn the_members_token_named_after_the_integration_is_opened() {
        let sealer = Sealer::new(&[3; 32]).unwrap();
        let (org, user) = ids();
        let seal = |integration: &str, secret: &str| {
            sealer.seal(&context(&org, &user, integration), secret)
        };
        let data = vec![
            MemberData {
                kind: MemberDataKind::AgentMemory,
                name: "wiki".to_owned(),
                value: "remembered".to_owned(),
            },
            token("tracker", seal("tracker", "tracker-token")),
            token("wiki", seal("wiki", "wiki-token")),
        ];
        let found = member_credential(&sealer, &org, &user, &wiki("wiki"), &data);
        assert_eq!(found.as_deref(), Some("wiki-token"));
        assert_eq!(
            member_credential(&sealer, &org, &user, &wiki("drive"), &data),
            None
        );
    }

    #[test]
    fn a_token_sealed_for_another_member_or_integration_does_not_count() {
        let sealer = Sealer::new(&[3; 32]).unwrap();
        let (org, user) = ids();
        let (_, other) = ids();
        let for_other = context(&org, &other, "wiki");
        let for_tracker = context(&org, &user, "tracker");
        let copied = vec![token("wiki", sealer.seal(&for_other, "their-token"))];
        assert_eq!(
            member_credential(&sealer, &org, &user, &wiki("wiki"), &copied),
            None
        );
        let renamed = vec![token("wiki", sealer.seal(&for_tracker, "tracker-token"))];
        assert_eq!(
            member_credential(&sealer, &org, &user, &wiki("wiki"), &renamed),
            None
        );
        let moved = IntegrationConfig {
            url: "https://elsewhere.example/mcp".into(),
            ..wiki("wiki")
        };
        let sealed = vec![token(
            "wiki",
            sealer.seal(&context(&org, &user, "wiki"), "t"),
        )];
        assert_eq!(
            member_credential(&sealer, &org, &user, &moved, &sealed),
            None,
            "a token does not follow its integration to another URL"
        );
        let garbage = vec![token("wiki", "v1.00".to_owned())];
        assert_eq!(
            member_credential(&sealer, &org, &user, &wiki("wiki"), &garbage),
            None
        );
    }

    /// An integration of `org` named `name`, authorized as `auth`.
    fn config(name: &str, auth: IntegrationAuth) -> IntegrationConfig {
        IntegrationConfig { auth, ..wiki(name) }
    }

    #[tokio::test]
    async fn integrations_are_reached_with_a_usable_credential_or_grant_and_open_ones_without() {
        use knowledge_core::domain::{
            Actor, AuditAction, AuditEntry, Grant, GrantStatus, Member, ReconnectReason, Role,
        };
        use knowledge_core::ports::GrantStore;
        use knowledge_core::seal::grant_context;
        use knowledge_core::testing::TransientStore;

        let store = Arc::new(TransientStore::default());
        let sealer = Arc::new(Sealer::new(&[3; 32]).unwrap());
        let (org, user) = ids();
        let audit = || {
            AuditEntry::new(
                &org,
                Timestamp(0),
                Actor::Admin,
                AuditAction::MemberAdded,
                "x",
            )
        };
        let member = Member::new(org.clone(), user.clone(), Role::Viewer, Timestamp(0));
        store.create_member(&member, &audit()).await.unwrap();
        for (name, auth) in [
            ("drive", IntegrationAuth::PerUser),
            ("search", IntegrationAuth::None),
            ("wiki", IntegrationAuth::PerUser),
            ("tracker", IntegrationAuth::OauthMember),
            ("crm", IntegrationAuth::OauthMember),
            ("docs", IntegrationAuth::OauthOrganisation),
            ("chat", IntegrationAuth::OauthOrganisation),
        ] {
            store
                .put_integration(&org, &config(name, auth), &audit())
                .await
                .unwrap();
        }
        let token = MemberData {
            kind: MemberDataKind::IntegrationToken,
            name: "wiki".into(),
            value: sealer.seal(&context(&org, &user, "wiki"), "wiki-token"),
        };
        store
            .put_member_data(&org, &user, &token, &audit())
            .await
            .unwrap();
        let grant = |status| Grant {
            access_token: "a".into(),
            refresh_token: None,
            expires_at: None,
            scope: None,
            generation: 1,
            lease: None,
            status,
            connected_by: user.clone(),
            connected_at: Timestamp(0),
        };
        let sealed = |owner: &GrantOwner, name: &str, grant: &Grant| {
            let url = format!("https://{name}.example/mcp");
            let context = grant_context(org.as_str(), owner.as_str(), name, &url);
            sealer.seal(&context, &serde_json::to_string(grant).unwrap())
        };
        let member_grant = GrantOwner::Member(user.clone());
        let stale = GrantStatus::NeedsReconnect(ReconnectReason::RefreshRefused);
        for (owner, name, status) in [
            (&member_grant, "tracker", GrantStatus::Active),
            (&member_grant, "crm", stale.clone()),
            (&GrantOwner::Organisation, "docs", GrantStatus::Active),
            (&GrantOwner::Organisation, "chat", stale),
        ] {
            let value = sealed(owner, name, &grant(status));
            store
                .swap_grant(&org, owner, name, None, Some(&value), None)
                .await
                .unwrap();
        }

        let integrations = StoredIntegrations::new(
            store.clone(),
            sealer.clone(),
            Arc::new(crate::stored::tests::Nothing),
            Timeouts::default(),
            Egress::ANYWHERE,
        );
        let reached = integrations.reached(&org, &user).await.unwrap();
        let named: Vec<(&str, &str)> = reached
            .iter()
            .map(|(c, reach)| {
                let how = match reach {
                    Reach::Open => "open",
                    Reach::Bearer(t) => t.as_str(),
                    Reach::Grant(at, _) => at.owner.as_str(),
                };
                (c.name.as_str(), how)
            })
            .collect();
        assert_eq!(
            named,
            [
                ("docs", "org"),
                ("search", "open"),
                ("tracker", user.as_str()),
                ("wiki", "wiki-token")
            ],
            "no credential (drive), a grant that needs reconnecting (crm, chat) are left out"
        );
    }

    /// No fixed integrations.
    struct Nothing;

    #[async_trait]
    impl IntegrationReach for Nothing {
        async fn reaches_any(&self, _: &OrgId, _: &UserId) -> Result<bool, IntegrationError> {
            Ok(false)
        }
    }

    #[async_trait]
    impl Integrations for Nothing {
        async fn connected(
            &self, _: &OrgId, _: &UserId,
        ) -> Result<Vec<Arc<dyn Integration>>, IntegrationError> {
            Ok(Vec::new())
        }
    }
}
