//! Connections to OAuth-protected integrations: what each member sees of them, connecting an
//! account (the member's own, or the organisation's by an admin) through the authorization
//! code flow, and disconnecting.
//!
//! A connect in progress is a single-use ticket keyed by a hash of its `state`, holding what
//! the callback needs (the PKCE verifier, sealed) and a hash of a secret only the browser that
//! started it holds (its cookie). The redirect URI is the organisation's and integration's
//! own, so a code can only come back to the flow that asked for it (no mix-up).

mod flow;

use std::sync::Arc;

use crate::clock::{Clock, Timestamp};
use crate::domain::{
    Actor, AuditAction, AuditEntry, GrantOwner, GrantStatus, IntegrationAuth, IntegrationConfig,
    MemberDataKind, ReconnectReason,
};
use crate::error::CoreError;
use crate::ids::{OrgId, UserId};
use crate::ports::{AuthorizationServers, DirectoryStore, TicketStore};
use crate::seal::Sealer;
use crate::vault::{GrantAt, Vault, VaultError, open_grant};

pub use flow::{CallbackParams, Started};

/// How long a connect may take at the authorization server, in milliseconds: ten minutes.
pub const CONNECT_TTL_MS: i64 = 10 * 60 * 1000;

/// Whose account a connection is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnectionKind {
    /// Each member connects their own.
    Member,
    /// An admin connects the organisation's, which every member's turns use.
    Organisation,
}

/// Where a connection stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnectionState {
    NotConnected,
    Connected,
    NeedsReconnect(ReconnectReason),
}

/// One OAuth integration as a member sees it: never a token.
#[derive(Debug, Clone, PartialEq)]
pub struct ConnectionView {
    pub integration: String,
    pub kind: ConnectionKind,
    /// The authorization server's issuer: whose account is connected.
    pub issuer: String,
    pub state: ConnectionState,
    pub connected_by: Option<UserId>,
    pub connected_at: Option<Timestamp>,
    pub scope: Option<String>,
}

/// The connections use cases. The origin is the application's own, on which redirect URIs and
/// client ids are built.
pub struct Connections {
    directory: Arc<dyn DirectoryStore>,
    tickets: Arc<dyn TicketStore>,
    servers: Arc<dyn AuthorizationServers>,
    vault: Arc<Vault>,
    sealer: Arc<Sealer>,
    clock: Arc<dyn Clock>,
    origin: String,
}

impl Connections {
    pub fn new(
        directory: Arc<dyn DirectoryStore>, tickets: Arc<dyn TicketStore>,
        servers: Arc<dyn AuthorizationServers>, vault: Arc<Vault>, sealer: Arc<Sealer>,
        clock: Arc<dyn Clock>, origin: &str,
    ) -> Self {
        Self {
            directory,
            tickets,
            servers,
            vault,
            sealer,
            clock,
            origin: origin.trim_end_matches('/').to_owned(),
        }
    }

    /// The redirect URI of `org`'s integration `name`: its own, so that no other flow's code
    /// can be redeemed through it.
    pub fn redirect_uri(&self, org: &OrgId, name: &str) -> String {
        redirect_uri(&self.origin, org, name)
    }

    /// The organisation's OAuth integrations and where `user` stands with each: their own
    /// grant for a member kind, the organisation's for the other. One read of the
    /// integrations and one of the member's data.
    pub async fn list(&self, org: &OrgId, user: &UserId) -> Result<Vec<ConnectionView>, CoreError> {
        let integrations = self.directory.list_integrations(org).await?;
        let data = self.directory.list_member_data(org, user).await?;
        let mut views = Vec::new();
        for integration in integrations.iter().filter(|i| i.auth.is_oauth()) {
            let Some(access) = &integration.oauth else {
                continue;
            };
            let (kind, owner, sealed) = match integration.auth {
                IntegrationAuth::OauthMember => {
                    let held = data.iter().find(|d| {
                        d.kind == MemberDataKind::OAuthGrant && d.name == integration.name
                    });
                    let sealed = held.map(|d| d.value.clone());
                    (
                        ConnectionKind::Member,
                        GrantOwner::Member(user.clone()),
                        sealed,
                    )
                }
                _ => {
                    let sealed = integration.org_grant_sealed.clone();
                    (
                        ConnectionKind::Organisation,
                        GrantOwner::Organisation,
                        sealed,
                    )
                }
            };
            let at = GrantAt::new(org, owner, integration);
            let grant = sealed.and_then(|s| open_grant(&self.sealer, &at, &s));
            views.push(ConnectionView {
                integration: integration.name.clone(),
                kind,
                issuer: access.server.issuer.clone(),
                state: match grant.as_ref().map(|g| &g.status) {
                    None => ConnectionState::NotConnected,
                    Some(GrantStatus::Active) => ConnectionState::Connected,
                    Some(GrantStatus::NeedsReconnect(r)) => ConnectionState::NeedsReconnect(*r),
                },
                connected_by: grant.as_ref().map(|g| g.connected_by.clone()),
                connected_at: grant.as_ref().map(|g| g.connected_at),
                scope: grant.and_then(|g| g.scope),
            });
        }
        Ok(views)
    }

    /// The OAuth integration `name` of `org`, whichever its kind. Errors: `NotFound`.
    pub async fn integration_of(
        &self, org: &OrgId, name: &str,
    ) -> Result<IntegrationConfig, CoreError> {
        (self.directory.list_integrations(org).await?)
            .into_iter()
            .find(|i| i.name == name && i.auth.is_oauth() && i.oauth.is_some())
            .ok_or(CoreError::NotFound("integration"))
    }

    /// The OAuth integration `name` of `org` whose connection is of `kind`. Errors:
    /// `NotFound` (none of that name, or not OAuth), `Conflict` (`wrong_kind`: the member's
    /// own asked of an organisation's, or the other way).
    async fn integration(
        &self, org: &OrgId, name: &str, kind: ConnectionKind,
    ) -> Result<IntegrationConfig, CoreError> {
        let integration = self.integration_of(org, name).await?;
        let its_kind = match integration.auth {
            IntegrationAuth::OauthMember => ConnectionKind::Member,
            _ => ConnectionKind::Organisation,
        };
        if its_kind != kind {
            let message = match its_kind {
                ConnectionKind::Member => "each member connects this integration themselves",
                ConnectionKind::Organisation => "an admin connects this integration for everyone",
            };
            return Err(CoreError::conflict("wrong_kind", message));
        }
        Ok(integration)
    }

    /// Removes `user`'s own connection (`kind` member) or the organisation's (`kind`
    /// organisation, for an admin), and revokes its tokens at the server, best effort.
    /// Errors: as [`Connections::start`]'s lookup; `NotFound` (`connection`) when there is none.
    pub async fn disconnect(
        &self, org: &OrgId, user: &UserId, user_name: Option<&str>, name: &str,
        kind: ConnectionKind,
    ) -> Result<(), CoreError> {
        let integration = self.integration(org, name, kind).await?;
        let owner = match kind {
            ConnectionKind::Member => GrantOwner::Member(user.clone()),
            ConnectionKind::Organisation => GrantOwner::Organisation,
        };
        let at = GrantAt::new(org, owner, &integration);
        let audit = AuditEntry::new(
            org,
            self.clock.now(),
            Actor::Member,
            AuditAction::AccountDisconnected,
            name,
        )
        .by(user)
        .by_named(user_name);
        match self.vault.disconnect(&at, &audit).await {
            Ok(Some(_)) => Ok(()),
            Ok(None) => Err(CoreError::NotFound("connection")),
            Err(e) => Err(vault_error(e)),
        }
    }
}

/// The redirect URI of `org`'s integration `name` on `origin`.
pub fn redirect_uri(origin: &str, org: &OrgId, name: &str) -> String {
    format!("{origin}/api/oauth/callback/{org}/{name}")
}

/// The URL of the service's Client ID Metadata Document for `org`'s integration `name`: the
/// client id where the authorization server takes one.
pub fn client_document_url(origin: &str, org: &OrgId, name: &str) -> String {
    format!("{origin}/api/oauth/clients/{org}/{name}.json")
}

fn vault_error(e: VaultError) -> CoreError {
    match e {
        VaultError::NotConnected => {
            tracing::warn!("a connect's member or integration is gone");
            CoreError::ConnectFailed
        }
        VaultError::NeedsReconnect(_) => CoreError::ConnectFailed,
        VaultError::Unavailable(why) => CoreError::internal(why),
    }
}
