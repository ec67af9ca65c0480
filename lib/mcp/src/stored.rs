//! The integrations each organisation connected, read from the store on every request, with
//! the member's own sealed credential for those that authenticate per user. Whether a member
//! reaches any is answered from the same reads without building an MCP client, so a binary
//! that only asks that ([`IntegrationReach`]) links none.

use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use knowledge_core::domain::{IntegrationAuth, IntegrationConfig, MemberData, MemberDataKind};
use knowledge_core::ids::{OrgId, UserId};
use knowledge_core::ports::{
    DirectoryStore, Integration, IntegrationError, IntegrationReach, Integrations,
};
use knowledge_core::seal::{Sealer, credential_context};

use knowledge_egress::Egress;

use crate::integration::{McpHttp, McpIntegration, Timeouts};

/// [`Integrations`] from [`DirectoryStore::list_integrations`], each an [`McpIntegration`], after the
/// fixed ones given at construction. Caches nothing: every `connected` or `reaches_any` reads
/// the store, and an opened credential lives only in the integrations that call returns.
pub struct StoredIntegrations {
    store: Arc<dyn DirectoryStore>,
    sealer: Arc<Sealer>,
    fixed: Arc<dyn Integrations>,
    timeouts: Timeouts,
    egress: Egress,
    /// The one HTTP client of every MCP server, built at the first [`Integrations::connected`]
    /// (so that a binary that only asks [`IntegrationReach`] builds and links none).
    http: OnceLock<McpHttp>,
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
            http: OnceLock::new(),
        }
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

    /// The organisation's MCP servers that `user` reaches, by name, each with the bearer token
    /// to send; those that authenticate per user only where `user` holds a credential that
    /// opens. Reads the member's data only when some server authenticates per user.
    /// Errors: `Unavailable` when the store fails.
    async fn reached(
        &self, org: &OrgId, user: &UserId,
    ) -> Result<Vec<(IntegrationConfig, Option<String>)>, IntegrationError> {
        let store_failed = |e| IntegrationError::Unavailable(format!("reading integrations: {e}"));
        let configs = self
            .store
            .list_integrations(org)
            .await
            .map_err(store_failed)?;
        let data = if configs.iter().any(|c| c.auth == IntegrationAuth::PerUser) {
            self.store
                .list_member_data(org, user)
                .await
                .map_err(store_failed)?
        } else {
            Vec::new()
        };
        let credential =
            |config: &IntegrationConfig| member_credential(&self.sealer, org, user, config, &data);
        Ok(reachable(configs, credential))
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

/// The integrations a member reaches, in order, each with the bearer token to send: none for
/// those without authentication, the member's `credential` for those that authenticate per
/// user; an integration of the latter kind without one is left out.
fn reachable(
    configs: Vec<IntegrationConfig>, credential: impl Fn(&IntegrationConfig) -> Option<String>,
) -> Vec<(IntegrationConfig, Option<String>)> {
    configs
        .into_iter()
        .filter_map(|config| match config.auth {
            IntegrationAuth::None => Some((config, None)),
            IntegrationAuth::PerUser => {
                let token = credential(&config)?;
                Some((config, Some(token)))
            }
            IntegrationAuth::OauthMember | IntegrationAuth::OauthOrganisation => None,
        })
        .collect()
}

#[async_trait]
impl IntegrationReach for StoredIntegrations {
    /// Whether `connected` would return any, from the same reads, building no MCP client.
    /// Errors: `Unavailable` when the store fails.
    async fn reaches_any(&self, org: &OrgId, user: &UserId) -> Result<bool, IntegrationError> {
        let reached = self.reached(org, user).await?;
        Ok(!reached.is_empty() || self.fixed.reaches_any(org, user).await?)
    }
}

#[async_trait]
impl Integrations for StoredIntegrations {
    /// The fixed integrations, then the organisation's MCP servers by name, leaving out those
    /// that authenticate per user for which `user` holds no credential that opens.
    /// Errors: `Unavailable` when the store fails.
    async fn connected(
        &self, org: &OrgId, user: &UserId,
    ) -> Result<Vec<Arc<dyn Integration>>, IntegrationError> {
        let reached = self.reached(org, user).await?;
        let mut connected = self.fixed.connected(org, user).await?;
        for (config, token) in reached {
            connected.push(Arc::new(McpIntegration::new(
                config.name,
                config.url,
                token,
                self.timeouts,
                self.http()?,
            )));
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

    #[test]
    fn per_user_integrations_are_reached_only_with_a_credential_and_open_ones_without() {
        let config = |name: &str, auth| IntegrationConfig {
            name: name.to_owned(),
            url: format!("https://{name}.example/mcp"),
            auth,
            created_at: Timestamp(0),
            oauth: None,
            org_grant_sealed: None,
        };
        let configs = vec![
            config("drive", IntegrationAuth::PerUser),
            config("search", IntegrationAuth::None),
            config("wiki", IntegrationAuth::PerUser),
        ];
        let credential =
            |c: &IntegrationConfig| (c.name == "wiki").then(|| "wiki-token".to_owned());
        let reached: Vec<(String, Option<String>)> = reachable(configs, credential)
            .into_iter()
            .map(|(c, token)| (c.name, token))
            .collect();
        assert_eq!(
            reached,
            [
                ("search".to_owned(), None),
                ("wiki".to_owned(), Some("wiki-token".to_owned()))
            ]
        );
    }
}
