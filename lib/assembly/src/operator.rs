//! The operator's administration, over a store: organisations and their plans here, and the
//! rest through the core's admin use cases ([`knowledge_core::admin`]) as the operator, which
//! the admin API shares. The local `knowledge` commands, its first-start bootstrap and the
//! tests call it.

use std::sync::Arc;

use knowledge_core::CoreError;
use knowledge_core::admin::{
    Admin as CoreAdmin, AdminStores, Administration, AuditQuery, IntegrationSettings,
};
use knowledge_core::clock::{Clock, SystemClock};
use knowledge_core::domain::{
    AuditEntry, IntegrationAuth, IntegrationConfig, Member, Org, Plan, Role, SsoConfig, Usage,
};
use knowledge_core::ids::{OrgId, UserId};
pub use knowledge_core::ports::OrgChanges;
use knowledge_core::ports::{Store, StoreError};
use knowledge_core::seal::Sealer;
use knowledge_core::sso::SsoChange;

/// Errors of the operator's actions; their text is shown to the operator.
#[derive(Debug, thiserror::Error)]
pub enum OperatorError {
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

/// The operator of every organisation in `store`.
pub struct Operator {
    pub store: Arc<dyn Store>,
}

impl Operator {
    /// Creates an organisation, with a new id unless `id` is given. Errors: `Invalid` when an
    /// organisation has that id already (its settings are changed with `update_org`, never
    /// reset by a create).
    pub async fn create_org(
        &self, id: Option<OrgId>, name: &str, plan: Plan,
    ) -> Result<Org, OperatorError> {
        if let Some(id) = &id
            && self.store.get_org(id).await?.is_some()
        {
            return Err(OperatorError::Invalid(format!(
                "{id} exists already; change it with `org set`"
            )));
        }
        let org = Org::new(
            id.unwrap_or_else(OrgId::generate),
            name,
            plan,
            SystemClock.now(),
        );
        self.store.put_org(&org).await?;
        Ok(org)
    }

    pub async fn org(&self, id: &OrgId) -> Result<Org, OperatorError> {
        self.store
            .get_org(id)
            .await?
            .ok_or_else(|| OperatorError::NoSuchOrg(id.clone()))
    }

    /// Makes `changes` to the organisation's plan, status and limits, keeping its other
    /// settings (one an admin changes meanwhile is kept), recorded in its audit log as done at
    /// the command line. Errors: `NoSuchOrg`, `Invalid` (nothing to change).
    pub async fn update_org(&self, id: &OrgId, changes: OrgChanges) -> Result<Org, OperatorError> {
        self.administration(None)
            .change_org(&CoreAdmin::operator(id.clone()), &changes)
            .await
            .map_err(|e| Self::error(id, None, e))
    }

    pub async fn usage(&self, id: &OrgId) -> Result<Usage, OperatorError> {
        Ok(self.store.get_usage(id, &SystemClock.now().month()).await?)
    }

    /// The core's admin use cases for the operator of `org`, sealing with `sealer` where an
    /// action stores a secret.
    fn administration(&self, sealer: Option<Arc<Sealer>>) -> Administration {
        let administration =
            Administration::new(AdminStores::of(&self.store), Arc::new(SystemClock));
        match sealer {
            Some(sealer) => administration.with_sealer(sealer),
            None => administration,
        }
    }

    /// The core's errors in the operator's words.
    fn error(org: &OrgId, user: Option<&UserId>, e: CoreError) -> OperatorError {
        match e {
            CoreError::NotFound("organisation") => OperatorError::NoSuchOrg(org.clone()),
            CoreError::NotFound("member") => OperatorError::NoSuchMember {
                org: org.clone(),
                user: user.cloned().unwrap_or_else(UserId::generate),
            },
            CoreError::NotFound("sso") => OperatorError::Invalid(format!(
                "{org} has no single sign-on configured; run `sso set` first"
            )),
            CoreError::InvalidInput { message, .. } | CoreError::Conflict { message, .. } => {
                OperatorError::Invalid(message)
            }
            CoreError::LastAdmin => OperatorError::Invalid(CoreError::LastAdmin.to_string()),
            other => OperatorError::Core(other),
        }
    }

    /// Adds a member, or changes an existing member's role (keeping their SCIM profile).
    /// Errors: `NoSuchOrg`, `Invalid` (demoting the last admin).
    pub async fn add_member(
        &self, org: &OrgId, user: Option<UserId>, role: Role,
    ) -> Result<Member, OperatorError> {
        let user = user.unwrap_or_else(UserId::generate);
        let admin = CoreAdmin::operator(org.clone());
        self.administration(None)
            .add_member(&admin, &user, role)
            .await
            .map_err(|e| Self::error(org, Some(&user), e))
    }

    /// Removes the member with their profile and data, as SCIM deprovisioning does (their
    /// cookies for that organisation stop working at once), then cancels their turns in
    /// flight; returns how many it cancelled. The serving process has no signal from here:
    /// each cancelled run sees the stamp at its next step (an agent call in flight still
    /// completes, and its result is dropped) and ends with `status_terminated`.
    /// Errors: `NoSuchMember`, `Invalid` (the last admin).
    pub async fn remove_member(&self, org: &OrgId, user: &UserId) -> Result<usize, OperatorError> {
        let admin = CoreAdmin::operator(org.clone());
        self.administration(None)
            .remove_member(&admin, user)
            .await
            .map_err(|e| Self::error(org, Some(user), e))
    }

    /// Gives a member the `userName` that single sign-on matches (without case) against the
    /// provider's claim, keeping the rest of a SCIM profile. Errors: `NoSuchMember`, `Invalid`
    /// when another member has the name.
    pub async fn name_member(
        &self, org: &OrgId, user: &UserId, user_name: &str,
    ) -> Result<Member, OperatorError> {
        let admin = CoreAdmin::operator(org.clone());
        self.administration(None)
            .name_member(&admin, user, user_name)
            .await
            .map_err(|e| Self::error(org, Some(user), e))
    }

    /// Applies `change` to the organisation's single sign-on (see
    /// [`knowledge_core::sso::configure`]).
    pub async fn configure_sso(
        &self, org: &OrgId, change: &SsoChange, sealer: Arc<Sealer>,
    ) -> Result<SsoConfig, OperatorError> {
        let admin = CoreAdmin::operator(org.clone());
        self.administration(Some(sealer))
            .configure_sso(&admin, change)
            .await
            .map_err(|e| Self::error(org, None, e))
    }

    /// Generates the organisation's SCIM token, replacing (and so invalidating) the previous
    /// one. The token is returned to be shown once; only its hash is stored.
    pub async fn generate_scim_token(&self, org: &OrgId) -> Result<String, OperatorError> {
        let admin = CoreAdmin::operator(org.clone());
        let (token, _) = self
            .administration(None)
            .generate_scim_token(&admin)
            .await
            .map_err(|e| Self::error(org, None, e))?;
        Ok(token)
    }

    /// Connects the MCP server at `url` to the organisation as `name`, or changes the one of
    /// that name. Errors: `Invalid` (name, URL, or the organisation is at its limit),
    /// `NoSuchOrg`.
    pub async fn connect_integration(
        &self, org: &OrgId, name: &str, url: &str, auth: IntegrationAuth,
    ) -> Result<IntegrationConfig, OperatorError> {
        if auth.is_oauth() {
            // Discovery and the client's registration need the running service's origin.
            return Err(OperatorError::Invalid(
                "OAuth integrations are added in the admin page of the running service".into(),
            ));
        }
        let admin = CoreAdmin::operator(org.clone());
        let settings = IntegrationSettings {
            name: name.to_owned(),
            url: url.to_owned(),
            auth,
            client: None,
        };
        self.administration(None)
            .connect_integration(&admin, &settings)
            .await
            .map_err(|e| Self::error(org, None, e))
    }

    /// Disconnects an integration. Errors: `NoSuchIntegration`.
    pub async fn disconnect_integration(
        &self, org: &OrgId, name: &str,
    ) -> Result<(), OperatorError> {
        let admin = CoreAdmin::operator(org.clone());
        match self
            .administration(None)
            .disconnect_integration(&admin, name)
            .await
        {
            Err(CoreError::NotFound("integration")) => Err(OperatorError::NoSuchIntegration {
                org: org.clone(),
                name: name.to_owned(),
            }),
            other => other.map_err(|e| Self::error(org, None, e)),
        }
    }

    pub async fn integrations(&self, org: &OrgId) -> Result<Vec<IntegrationConfig>, OperatorError> {
        let admin = CoreAdmin::operator(org.clone());
        self.administration(None)
            .integrations(&admin)
            .await
            .map_err(|e| Self::error(org, None, e))
    }

    /// Stores a member's own token for a per-user integration, sealed for that member and
    /// integration, replacing the previous one. The token is never printed or logged.
    /// Errors: `NoSuchIntegration`, `Invalid`, `NoSuchMember`.
    pub async fn set_credential(
        &self, org: &OrgId, user: &UserId, name: &str, token: &str, sealer: Arc<Sealer>,
    ) -> Result<(), OperatorError> {
        let admin = CoreAdmin::operator(org.clone());
        match self
            .administration(Some(sealer))
            .set_credential(&admin, user, name, token)
            .await
        {
            Err(CoreError::NotFound("integration")) => Err(OperatorError::NoSuchIntegration {
                org: org.clone(),
                name: name.to_owned(),
            }),
            other => other.map_err(|e| Self::error(org, Some(user), e)),
        }
    }

    /// The organisation's newest audit entries, newest first.
    pub async fn audit_log(
        &self, org: &OrgId, limit: usize,
    ) -> Result<Vec<AuditEntry>, OperatorError> {
        self.org(org).await?;
        let admin = CoreAdmin::operator(org.clone());
        let query = AuditQuery {
            limit,
            ..AuditQuery::default()
        };
        let page = self
            .administration(None)
            .audit_log(&admin, &query)
            .await
            .map_err(|e| Self::error(org, None, e))?;
        Ok(page.entries)
    }

    /// When the default organisation does not exist (a fresh data directory or table), creates it
    /// and its admin. Returns them when it did.
    pub async fn bootstrap(&self) -> Result<Option<(OrgId, UserId)>, OperatorError> {
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
