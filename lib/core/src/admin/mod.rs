//! Administration of one organisation: who acts ([`Admin`]) and what with
//! ([`Administration`]) here; its members and their roles in `members`; single sign-on, the
//! SCIM token, usage limits and the audit log in `settings`; integrations in `integrations`;
//! the groups admins make in `groups`.
//! The admin API and the admin CLI both call these, so each action has one implementation.
//!
//! Every change writes its audit entry in the same transaction, naming the admin who acted
//! when there is one ([`Admin::by`]). An organisation always keeps an admin (see `members`).

mod export;
mod groups;
mod integrations;
mod members;
mod oauth;
mod settings;
mod usage;

use std::sync::Arc;

use crate::clock::{Clock, Timestamp};
use crate::domain::{Actor, AuditAction, AuditEntry, Member, Role};
use crate::error::CoreError;
use crate::ids::{OrgId, UserId};
use crate::policy::limits::{self, Action, Admission};
use crate::ports::{
    AuthorizationServers, DirectoryStore, GroupStore, IdentityDiscovery, Integrations, LimitStore,
    OrgStore, SessionStore, Store, Workflow,
};
use crate::seal::Sealer;
use crate::service::Principal;
use crate::vault::Vault;

pub use export::{ActorFilter, AuditFilter, EXPORT_PAGE, ExportPage, MemberMonth, export_start};
pub use integrations::{CredentialHolder, IntegrationSettings, PreRegisteredClient};
pub use members::{MemberPage, MemberQuery};
pub use settings::{AuditPage, AuditQuery, ScimStatus};
pub use usage::{MemberUsage, TOP_MEMBERS, UsageReport, parse_month};

/// Who administers and where: the organisation, and the admin member acting (`None` for the
/// operator at the command line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Admin {
    pub org: OrgId,
    pub by: Option<UserId>,
    /// The acting member's `userName`, for the audit log.
    pub by_name: Option<String>,
}

impl Admin {
    /// The operator, at the command line.
    pub fn operator(org: OrgId) -> Self {
        Self {
            org,
            by: None,
            by_name: None,
        }
    }

    /// The signed-in member `p`, who must be an admin of their organisation. Errors:
    /// `AdminOnly` for a viewer.
    pub fn member(p: Principal) -> Result<Self, CoreError> {
        match p.role {
            Role::Admin => Ok(Self {
                org: p.org,
                by: Some(p.user),
                by_name: p.user_name,
            }),
            Role::Viewer => Err(CoreError::AdminOnly),
        }
    }

    /// An entry of `action` on `target` by this admin, named.
    pub(crate) fn audit(&self, now: Timestamp, action: AuditAction, target: &str) -> AuditEntry {
        let entry = AuditEntry::new(&self.org, now, Actor::Admin, action, target);
        match &self.by {
            Some(user) => entry.by(user).by_named(self.by_name.as_deref()),
            None => entry,
        }
    }

    /// The same, on the member `target`, named as they are now.
    pub(crate) fn audit_member(
        &self, now: Timestamp, action: AuditAction, target: &Member,
    ) -> AuditEntry {
        self.audit(now, action, target.user.as_str())
            .target_named(target.user_name())
    }
}

/// The store roles administration uses: never the tickets, nor the batched read.
#[derive(Clone)]
pub struct AdminStores {
    pub orgs: Arc<dyn OrgStore>,
    pub directory: Arc<dyn DirectoryStore>,
    /// The member's sessions, whose turns a removal cancels.
    pub sessions: Arc<dyn SessionStore>,
    /// The admin actions' rate limits, and the usage an admin reads.
    pub limits: Arc<dyn LimitStore>,
    /// The groups admins make (and those the identity provider pushed, read-only here).
    pub groups: Arc<dyn GroupStore>,
}

impl AdminStores {
    /// Every role from the one store that has them all.
    pub fn of(store: &Arc<dyn Store>) -> Self {
        Self {
            orgs: store.clone(),
            directory: store.clone(),
            sessions: store.clone(),
            limits: store.clone(),
            groups: store.clone(),
        }
    }
}

/// The admin use cases, over the store roles they use and, where an action needs them, the
/// sealer (SSO secrets, credentials: [`Administration::with_sealer`]), the workflow (told of
/// cancelled turns), the identity providers' discovery (the SSO test) and the integrations
/// (the integration test).
#[derive(Clone)]
pub struct Administration {
    stores: AdminStores,
    clock: Arc<dyn Clock>,
    sealer: Option<Arc<Sealer>>,
    workflow: Option<Arc<dyn Workflow>>,
    identity: Option<Arc<dyn IdentityDiscovery>>,
    integrations: Option<Arc<dyn Integrations>>,
    /// The authorization servers of OAuth integrations, and the application's origin their
    /// redirect URIs and client ids are built on.
    oauth: Option<(Arc<dyn AuthorizationServers>, String)>,
    /// Revokes a removed member's OAuth grants at their servers.
    vault: Option<Arc<Vault>>,
}

impl Administration {
    pub fn new(stores: AdminStores, clock: Arc<dyn Clock>) -> Self {
        Self {
            stores,
            clock,
            sealer: None,
            workflow: None,
            identity: None,
            integrations: None,
            oauth: None,
            vault: None,
        }
    }

    /// Revokes a removed member's OAuth grants through `vault`.
    pub fn with_vault(mut self, vault: Arc<Vault>) -> Self {
        self.vault = Some(vault);
        self
    }

    /// Seals the secrets an admin stores (the SSO client secret, members' credentials) with
    /// `sealer`, the deployment's key; without it those actions fail as internal errors.
    pub fn with_sealer(mut self, sealer: Arc<Sealer>) -> Self {
        self.sealer = Some(sealer);
        self
    }

    fn sealer(&self) -> Result<&Sealer, CoreError> {
        (self.sealer.as_deref()).ok_or_else(|| CoreError::internal("no sealing key here"))
    }

    /// Tells `workflow` of the turns a member's removal cancels; without it each run sees the
    /// cancellation at its next step.
    pub fn with_workflow(mut self, workflow: Arc<dyn Workflow>) -> Self {
        self.workflow = Some(workflow);
        self
    }

    /// Tests identity providers through `identity`: their discovery only (an
    /// `Arc<dyn IdentityProvider>` serves).
    pub fn with_identity(mut self, identity: Arc<dyn IdentityDiscovery>) -> Self {
        self.identity = Some(identity);
        self
    }

    /// Tests integrations through `integrations`.
    pub fn with_integrations(mut self, integrations: Arc<dyn Integrations>) -> Self {
        self.integrations = Some(integrations);
        self
    }

    /// Adds OAuth integrations through `servers` (discovery, registration), building their
    /// redirect URIs and client ids on `origin`, the application's.
    pub fn with_authorization_servers(
        mut self, servers: Arc<dyn AuthorizationServers>, origin: &str,
    ) -> Self {
        self.oauth = Some((servers, origin.trim_end_matches('/').to_owned()));
        self
    }

    fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// Takes a slot of the acting admin's rate limit for `action`; the operator has none.
    /// Errors: `RateLimited`.
    pub async fn admit(&self, admin: &Admin, action: Action) -> Result<(), CoreError> {
        let Some(user) = &admin.by else {
            return Ok(());
        };
        match limits::acquire(
            self.stores.limits.as_ref(),
            self.clock.as_ref(),
            action,
            user,
        )
        .await?
        {
            Admission::Admitted => Ok(()),
            Admission::Refused { retry_after_secs } => {
                Err(CoreError::RateLimited { retry_after_secs })
            }
        }
    }

    /// The organisation, which must exist. Errors: `NotFound`.
    pub async fn org(&self, admin: &Admin) -> Result<crate::domain::Org, CoreError> {
        self.stores
            .orgs
            .get_org(&admin.org)
            .await?
            .ok_or(CoreError::NotFound("organisation"))
    }

    async fn member(&self, admin: &Admin, user: &UserId) -> Result<Member, CoreError> {
        self.stores
            .directory
            .get_member(&admin.org, user)
            .await?
            .ok_or(CoreError::NotFound("member"))
    }
}
