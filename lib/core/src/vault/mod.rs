//! The token vault: OAuth grants sealed at rest and bound to where they belong, handed out as
//! access tokens, refreshed once per generation however many callers need them at once (see
//! [`refresh`]), and revoked when disconnected.
//!
//! Reading costs nothing beyond the caller's own read: [`Vault::access`] opens the sealed
//! grant that listing the member's data or the organisation's integrations returned, and
//! touches the store only when a refresh is due.

mod refresh;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::clock::{Clock, Timestamp};
use crate::domain::{
    AuditEntry, Grant, GrantOwner, GrantStatus, IntegrationConfig, MemberDataKind, OAuthAccess,
    ReconnectReason,
};
use crate::ids::{OrgId, UserId};
use crate::ports::{DirectoryStore, GrantStore, IssuedTokens, StoreError, TokenEndpoint};
use crate::seal::{Sealer, grant_context, oauth_client_context};

/// How the vault times refreshes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VaultTiming {
    /// An access token is refreshed this long before it expires.
    pub margin: Duration,
    /// How long a claim on a refresh holds. A living refresher always stores its result in
    /// time: the refresh request is bounded by three quarters of it (its client gives up after
    /// 10 s, the default lease is 20 s), and it is sent and settled by a task of its own, which
    /// a caller that gives up first (a tool listing's bound, say) does not cancel.
    pub lease: Duration,
    /// The first pause of a caller waiting for another process's refresh; it doubles, up to 1 s.
    pub poll: Duration,
}

impl Default for VaultTiming {
    fn default() -> Self {
        Self {
            margin: Duration::from_secs(60),
            lease: Duration::from_secs(20),
            poll: Duration::from_millis(50),
        }
    }
}

/// Where a grant is kept and what it is sealed for: the organisation, its owner, and the
/// integration with the authorization server it was connected through.
#[derive(Debug, Clone)]
pub struct GrantAt {
    pub org: OrgId,
    pub owner: GrantOwner,
    pub integration: IntegrationConfig,
}

impl GrantAt {
    pub fn new(org: &OrgId, owner: GrantOwner, integration: &IntegrationConfig) -> Self {
        Self {
            org: org.clone(),
            owner,
            integration: integration.clone(),
        }
    }

    fn name(&self) -> &str {
        &self.integration.name
    }

    fn context(&self) -> String {
        grant_context(
            self.org.as_str(),
            self.owner.as_str(),
            &self.integration.name,
            &self.integration.url,
        )
    }

    fn access(&self) -> Result<&OAuthAccess, VaultError> {
        (self.integration.oauth.as_ref()).ok_or(VaultError::NotConnected)
    }
}

/// An access token to send, and the generation of the grant it came from (to name in
/// [`Vault::after_rejection`]).
#[derive(Clone, PartialEq, Eq)]
pub struct Access {
    pub token: String,
    pub generation: u64,
}

impl std::fmt::Debug for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Access")
            .field("generation", &self.generation)
            .finish_non_exhaustive()
    }
}

impl From<&Grant> for Access {
    fn from(g: &Grant) -> Self {
        Self {
            token: g.access_token.clone(),
            generation: g.generation,
        }
    }
}

/// Why no access token is handed out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VaultError {
    /// There is no grant (or none that opens here: sealed for another place).
    #[error("not connected")]
    NotConnected,
    /// The grant must be connected again.
    #[error("the connection needs reconnecting ({})", .0.as_str())]
    NeedsReconnect(ReconnectReason),
    /// The store or the authorization server failed; trying later may work.
    #[error("the connection is unavailable: {0}")]
    Unavailable(String),
}

fn unavailable(e: StoreError) -> VaultError {
    VaultError::Unavailable(format!("the grant store: {e}"))
}

/// The vault of every grant this process touches. Share one per process: its single flight of
/// refreshes is per instance and its clones (across processes, the store's lease serialises
/// them).
#[derive(Clone)]
pub struct Vault {
    store: Arc<dyn GrantStore>,
    tokens: Arc<dyn TokenEndpoint>,
    sealer: Arc<Sealer>,
    clock: Arc<dyn Clock>,
    timing: VaultTiming,
    /// One lock per grant being refreshed here, so that one caller refreshes and the others
    /// wait for it, then read its result.
    flights: Arc<Mutex<FlightLocks>>,
}

/// One lock per grant being refreshed, by the grant's place.
type FlightLocks = HashMap<String, Arc<tokio::sync::Mutex<()>>>;

impl Vault {
    pub fn new(
        store: Arc<dyn GrantStore>, tokens: Arc<dyn TokenEndpoint>, sealer: Arc<Sealer>,
        clock: Arc<dyn Clock>, timing: VaultTiming,
    ) -> Self {
        Self {
            store,
            tokens,
            sealer,
            clock,
            timing,
            flights: Arc::default(),
        }
    }

    fn now(&self) -> Timestamp {
        self.clock.now()
    }

    fn seal(&self, at: &GrantAt, grant: &Grant) -> String {
        let plain = serde_json::to_string(grant).expect("a grant serialises");
        self.sealer.seal(&at.context(), &plain)
    }

    /// See [`open_grant`].
    pub fn open(&self, at: &GrantAt, sealed: &str) -> Option<Grant> {
        open_grant(&self.sealer, at, sealed)
    }

    /// The client's secret at the integration's authorization server, opened.
    fn client_secret(&self, at: &GrantAt) -> Result<Option<String>, VaultError> {
        let access = at.access()?;
        let Some(sealed) = &access.client.secret_sealed else {
            return Ok(None);
        };
        let context = oauth_client_context(at.org.as_str(), at.name(), &access.client.client_id);
        match self.sealer.open(&context, sealed) {
            Ok(secret) => Ok(Some(secret)),
            Err(_) => Err(VaultError::NeedsReconnect(ReconnectReason::RefreshRefused)),
        }
    }

    /// An access token from the grant `sealed` (as the caller's listing read it), with no
    /// store request unless it is due for a refresh. Errors: `NotConnected` (no grant, or
    /// none that opens), `NeedsReconnect`, `Unavailable` (a refresh could not be made now).
    pub async fn access(&self, at: &GrantAt, sealed: Option<&str>) -> Result<Access, VaultError> {
        let grant = sealed
            .and_then(|s| self.open(at, s))
            .ok_or(VaultError::NotConnected)?;
        if let GrantStatus::NeedsReconnect(reason) = grant.status {
            return Err(VaultError::NeedsReconnect(reason));
        }
        let margin = self.margin_ms();
        if !grant.due(self.now(), margin) {
            return Ok(Access::from(&grant));
        }
        // Due at the generation read; a newer one (another caller's refresh) serves until it
        // has actually expired, however short the server makes its tokens.
        let seen = grant.generation;
        (self.refresh(at, |g, now| {
            (g.generation == seen && g.due(now, margin)) || g.due(now, 0)
        }))
        .await
    }

    /// A new access token after the server refused the one of `rejected` generation: that
    /// generation is refreshed (once, whoever asks), or a newer one is handed out.
    pub async fn after_rejection(&self, at: &GrantAt, rejected: u64) -> Result<Access, VaultError> {
        self.refresh(at, |g, _| g.generation == rejected).await
    }

    /// Marks the grant as needing a reconnect, if it is still at `generation` (the server
    /// refused even its freshly refreshed token). Best effort: a failure is logged.
    pub async fn needs_reconnect(&self, at: &GrantAt, generation: u64, reason: ReconnectReason) {
        let result = async {
            let Some(sealed) = self.store.get_grant(&at.org, &at.owner, at.name()).await? else {
                return Ok(());
            };
            match self.open(at, &sealed) {
                Some(grant) if grant.generation == generation && grant.is_active() => {
                    self.retire(at, &sealed, grant, reason).await.map(|_| ())
                }
                _ => Ok(()),
            }
        };
        if let Err(e) = result.await {
            tracing::warn!(integration = at.name(), error = %e, "marking a grant failed");
        }
    }

    fn margin_ms(&self) -> i64 {
        i64::try_from(self.timing.margin.as_millis()).unwrap_or(i64::MAX)
    }

    /// Stores the tokens of a completed connect as the grant at `at`, replacing any grant
    /// there (whose refresh token is then revoked, best effort), and writes `audit` with it.
    /// Errors: `NotConnected` when the member or the integration is gone; `Unavailable`.
    pub async fn connect(
        &self, at: &GrantAt, tokens: IssuedTokens, by: &UserId, audit: &AuditEntry,
    ) -> Result<(), VaultError> {
        let now = self.now();
        let grant = Grant {
            access_token: tokens.access_token,
            refresh_token: tokens.refresh_token,
            expires_at: expiry(now, tokens.expires_in),
            scope: tokens.scope,
            generation: 1,
            lease: None,
            status: GrantStatus::Active,
            connected_by: by.clone(),
            connected_at: now,
        };
        let sealed = self.seal(at, &grant);
        let mut attempts = 0;
        loop {
            let previous =
                (self.store.get_grant(&at.org, &at.owner, at.name()).await).map_err(unavailable)?;
            let swapped = self.store.swap_grant(
                &at.org,
                &at.owner,
                at.name(),
                previous.as_deref(),
                Some(&sealed),
                Some(audit),
            );
            match swapped.await {
                Ok(()) => {
                    if let Some(old) = previous.and_then(|p| self.open(at, &p)) {
                        self.revoke(at, &old).await;
                    }
                    return Ok(());
                }
                Err(StoreError::Conflict) if attempts < 8 => attempts += 1,
                Err(StoreError::Gone) => return Err(VaultError::NotConnected),
                Err(e) => return Err(unavailable(e)),
            }
        }
    }

    /// Removes the grant at `at` and revokes its refresh token (falling back to its access
    /// token) at the authorization server, best effort. Returns the removed grant, `None`
    /// when there was none. Errors: `Unavailable` when the store fails.
    pub async fn disconnect(
        &self, at: &GrantAt, audit: &AuditEntry,
    ) -> Result<Option<Grant>, VaultError> {
        let mut attempts = 0;
        loop {
            let Some(sealed) =
                (self.store.get_grant(&at.org, &at.owner, at.name()).await).map_err(unavailable)?
            else {
                return Ok(None);
            };
            let swapped = (self.store).swap_grant(
                &at.org,
                &at.owner,
                at.name(),
                Some(&sealed),
                None,
                Some(audit),
            );
            match swapped.await {
                Ok(()) => {
                    let grant = self.open(at, &sealed);
                    if let Some(grant) = &grant {
                        self.revoke(at, grant).await;
                    }
                    return Ok(grant);
                }
                Err(StoreError::Conflict) if attempts < 8 => attempts += 1,
                Err(e) => return Err(unavailable(e)),
            }
        }
    }

    /// `user`'s grants in `org`, opened, read from `directory` (one read of the member's data,
    /// one of the integrations) before the member is removed, so that they can be revoked
    /// after ([`Vault::revoke_all`]). Empty, logged, when the reads fail.
    pub async fn grants_of(
        &self, directory: &dyn DirectoryStore, org: &OrgId, user: &UserId,
    ) -> Vec<(GrantAt, Grant)> {
        let read = async {
            let data = directory.list_member_data(org, user).await?;
            if !data.iter().any(|d| d.kind == MemberDataKind::OAuthGrant) {
                return Ok(Vec::new());
            }
            let integrations = directory.list_integrations(org).await?;
            Ok::<_, StoreError>(
                (data.iter())
                    .filter(|d| d.kind == MemberDataKind::OAuthGrant)
                    .filter_map(|d| {
                        let integration = integrations.iter().find(|i| i.name == d.name)?;
                        let at = GrantAt::new(org, GrantOwner::Member(user.clone()), integration);
                        let grant = self.open(&at, &d.value)?;
                        Some((at, grant))
                    })
                    .collect(),
            )
        };
        read.await.unwrap_or_else(|e| {
            tracing::warn!(org = %org, error = %e, "a removed member's grants are not revoked");
            Vec::new()
        })
    }

    /// Revokes each of `grants` at its authorization server, one after another, best effort.
    pub async fn revoke_all(&self, grants: Vec<(GrantAt, Grant)>) {
        for (at, grant) in grants {
            self.revoke(&at, &grant).await;
        }
    }

    /// Revokes `grant`'s refresh token, or its access token when it has none, where the server
    /// offers revocation. Best effort: a failure is logged, never returned.
    pub async fn revoke(&self, at: &GrantAt, grant: &Grant) {
        let Ok(access) = at.access() else { return };
        if access.server.revocation_endpoint.is_none() {
            return;
        }
        let token = grant
            .refresh_token
            .as_deref()
            .unwrap_or(&grant.access_token);
        let secret = match self.client_secret(at) {
            Ok(secret) => secret,
            Err(e) => {
                tracing::warn!(integration = at.name(), error = %e, "revocation skipped");
                return;
            }
        };
        match self.tokens.revoke(access, secret.as_deref(), token).await {
            Ok(()) => tracing::info!(integration = at.name(), "a grant was revoked"),
            Err(e) => tracing::warn!(integration = at.name(), error = %e, "revocation failed"),
        }
    }
}

/// The grant `sealed` holds, or `None` when it does not open here (sealed for another
/// member, integration or URL, under another key, or tampered with).
pub fn open_grant(sealer: &Sealer, at: &GrantAt, sealed: &str) -> Option<Grant> {
    let plain = sealer.open(&at.context(), sealed).ok();
    let grant = plain.and_then(|p| serde_json::from_str(&p).ok());
    if grant.is_none() {
        tracing::warn!(
            org = %at.org, owner = at.owner.as_str(), integration = at.name(),
            "a grant does not open; treating it as not connected"
        );
    }
    grant
}

/// When tokens that last `expires_in` from `now` expire.
fn expiry(now: Timestamp, expires_in: Option<Duration>) -> Option<Timestamp> {
    expires_in.map(|d| now.plus_millis(i64::try_from(d.as_millis()).unwrap_or(i64::MAX / 2)))
}
