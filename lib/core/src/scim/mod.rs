//! SCIM 2.0 provisioning (RFC 7643/7644): the use cases an identity provider drives to create,
//! read, update, deactivate and delete the members of one organisation, and its groups
//! (`groups`). Protocol rules live in
//! the submodules; the HTTP layer only routes and renders.

pub mod filter;
pub mod group_input;
pub mod groups;
pub mod patch;
pub mod resource;
pub mod schema;
pub mod token;
pub mod validate;

use std::sync::Arc;

use serde_json::Value;

use crate::clock::Clock;
use crate::domain::{Actor, AuditAction, AuditEntry, Member, Plan, Role};
use crate::error::{Chain, CoreError};
use crate::ids::{OrgId, UserId};
use crate::ports::{BackendError, DirectoryStore, GroupStore, OrgStore, StoreError};
use crate::service::Service;
use crate::vault::Vault;
use filter::Filter;
use validate::UserInput;

/// Failures of the SCIM use cases, each with its RFC 7644 `scimType` where one is defined.
#[derive(Debug, thiserror::Error)]
pub enum ScimError {
    #[error("the bearer token is missing or not valid")]
    Unauthorized,
    #[error("SCIM needs the Business plan and enterprise SSO enabled")]
    Forbidden,
    #[error("{0} not found")]
    NotFound(&'static str),
    #[error("{0}")]
    Uniqueness(String),
    #[error("{0}")]
    InvalidFilter(String),
    #[error("{0}")]
    InvalidSyntax(String),
    #[error("{0}")]
    InvalidPath(String),
    #[error("{0}")]
    NoTarget(String),
    #[error("{0}")]
    InvalidValue(String),
    #[error("{0}")]
    Mutability(String),
    /// A write to one of the roles, which are listed among the groups but are the service's
    /// own: assigned in the service, never by the identity provider.
    #[error("admin and viewer are the service's roles, not groups: they cannot be written here")]
    RoleReadOnly,
    /// Anything else; logged with its causes, never shown to clients.
    #[error("internal error")]
    Internal(#[source] BackendError),
}

impl ScimError {
    /// The RFC 7644 §3.12 `scimType`, for the errors that have one.
    pub fn scim_type(&self) -> Option<&'static str> {
        Some(match self {
            Self::Uniqueness(_) => "uniqueness",
            Self::InvalidFilter(_) => "invalidFilter",
            Self::InvalidSyntax(_) => "invalidSyntax",
            Self::InvalidPath(_) => "invalidPath",
            Self::NoTarget(_) => "noTarget",
            Self::InvalidValue(_) => "invalidValue",
            Self::Mutability(_) => "mutability",
            _ => return None,
        })
    }
}

impl ScimError {
    /// An internal error caused by `cause`.
    pub fn internal(cause: impl Into<BackendError>) -> Self {
        Self::Internal(cause.into())
    }
}

impl From<StoreError> for ScimError {
    fn from(e: StoreError) -> Self {
        Self::internal(e)
    }
}

impl From<CoreError> for ScimError {
    fn from(e: CoreError) -> Self {
        Self::internal(e)
    }
}

/// What an update did.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// The member's profile now reads so.
    Updated(Box<Member>),
    /// `active` became false: the member was removed.
    Removed,
}

/// The roles, in the order groups are listed.
pub const ROLES: [Role; 2] = [Role::Admin, Role::Viewer];

/// Attempts of an optimistic update before the request fails.
const MAX_UPDATE_ATTEMPTS: usize = 16;

/// The SCIM use cases of every organisation; each call names the organisation its token proved.
#[derive(Clone)]
pub struct Directory {
    orgs: Arc<dyn OrgStore>,
    members: Arc<dyn DirectoryStore>,
    groups: Arc<dyn GroupStore>,
    clock: Arc<dyn Clock>,
    sessions: Service,
    /// Revokes a removed member's OAuth grants at their servers, where configured.
    vault: Option<Arc<Vault>>,
}

impl Directory {
    /// Reads tokens from `orgs`, keeps members in `members` and groups in `groups`, and asks
    /// the session service (whose clock it shares) to cancel a removed member's running turns.
    pub fn new(
        orgs: Arc<dyn OrgStore>, members: Arc<dyn DirectoryStore>, groups: Arc<dyn GroupStore>,
        sessions: Service,
    ) -> Self {
        Self {
            orgs,
            members,
            groups,
            clock: sessions.clock().clone(),
            sessions,
            vault: None,
        }
    }

    /// The same, revoking a removed member's OAuth grants through `vault`.
    pub fn with_vault(mut self, vault: Arc<Vault>) -> Self {
        self.vault = Some(vault);
        self
    }

    fn audit(&self, org: &OrgId, action: AuditAction, target: &str) -> AuditEntry {
        AuditEntry::new(org, self.clock.now(), Actor::Scim, action, target)
    }

    /// The organisation whose token `bearer` is.
    /// Errors: `Unauthorized` for a missing, malformed or superseded token; then `Forbidden`
    /// when the organisation is not on the Business plan with SSO enabled.
    pub async fn authenticate(&self, bearer: Option<&str>) -> Result<OrgId, ScimError> {
        let token = bearer.ok_or(ScimError::Unauthorized)?;
        let id = token::org_of(token).ok_or(ScimError::Unauthorized)?;
        let org = self
            .orgs
            .get_org(&id)
            .await?
            .ok_or(ScimError::Unauthorized)?;
        let stored = org
            .scim_token_sha256
            .as_deref()
            .ok_or(ScimError::Unauthorized)?;
        if !token::matches(token, stored) {
            return Err(ScimError::Unauthorized);
        }
        if org.plan != Plan::Business || !org.sso_active() {
            return Err(ScimError::Forbidden);
        }
        Ok(id)
    }

    /// Provisions a member with role viewer from a POST body.
    /// Errors: those of [`validate::user_from_json`]; `Uniqueness` when the organisation has the
    /// `userName` already (case-insensitively; of concurrent creates exactly one succeeds);
    /// `InvalidValue` for `active: false`, since a deactivated user is by this interface's rule
    /// not a member.
    pub async fn create(&self, org: &OrgId, body: &Value) -> Result<Member, ScimError> {
        let input = validate::user_from_json(body)?;
        if !input.active {
            return Err(ScimError::InvalidValue(
                "a user cannot be provisioned inactive: deactivation removes the member".into(),
            ));
        }
        let mut member = Member::new(
            org.clone(),
            UserId::generate(),
            Role::Viewer,
            self.clock.now(),
        );
        member.profile = Some(input.profile);
        let audit = self
            .audit(org, AuditAction::UserProvisioned, member.user.as_str())
            .target_named(member.user_name());
        for _ in 0..MAX_UPDATE_ATTEMPTS {
            match self.members.create_member(&member, &audit).await {
                Ok(()) => return Ok(member),
                Err(StoreError::AlreadyExists) => {
                    return Err(ScimError::Uniqueness(
                        "a user with this userName exists in the organisation".into(),
                    ));
                }
                // A concurrent transaction on the same claim: the next attempt sees who won.
                Err(StoreError::Conflict) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(ScimError::internal("member creation stayed contended"))
    }

    /// A provisioned member. Errors: `NotFound`, also for ids that are not user ids, members
    /// an operator added without a profile, and other organisations' members.
    pub async fn get(&self, org: &OrgId, id: &str) -> Result<Member, ScimError> {
        let user = UserId::parse(id).map_err(|_| ScimError::NotFound("user"))?;
        self.members
            .get_member(org, &user)
            .await?
            .filter(|m| m.profile.is_some())
            .ok_or(ScimError::NotFound("user"))
    }

    /// The provisioned members passing `filter`, ordered by id. A `userName` clause is answered
    /// from the uniqueness index without reading the whole organisation.
    pub async fn list(&self, org: &OrgId, filter: &Filter) -> Result<Vec<Member>, ScimError> {
        let candidates = match filter.value_of("userName") {
            Some(name) => self
                .members
                .find_member_by_user_name(org, &crate::domain::user_name_key(name))
                .await?
                .into_iter()
                .collect(),
            None => self.members.list_members(org).await?,
        };
        Ok(candidates
            .into_iter()
            .filter(|m| m.profile.is_some() && filter.accepts(|path| user_values(m, path)))
            .collect())
    }

    /// Replaces the profile with a PUT body. With `active: false`, removes the member instead.
    /// The user is looked up before the body is judged, so an unknown id is 404 whatever the
    /// body holds. Errors: `NotFound`, `Uniqueness` (the new `userName` is another member's),
    /// and the validation errors of [`validate::user_from_json`].
    pub async fn replace(&self, org: &OrgId, id: &str, body: &Value) -> Result<Change, ScimError> {
        self.update(org, id, |_| validate::user_from_json(body))
            .await
    }

    /// Applies a PatchOp body. When the result is `active: false`, removes the member.
    /// Errors: `NotFound`, `Uniqueness`, and the PATCH errors of [`patch::apply`].
    pub async fn patch(&self, org: &OrgId, id: &str, body: &Value) -> Result<Change, ScimError> {
        self.update(org, id, |profile| patch::apply(profile, body))
            .await
    }

    /// Removes the member (DELETE). Errors: `NotFound`.
    pub async fn delete(&self, org: &OrgId, id: &str) -> Result<(), ScimError> {
        let member = self.get(org, id).await?;
        self.remove(&member, AuditAction::UserDeleted).await
    }

    /// Re-reads, recomputes and writes until no concurrent change intervenes.
    async fn update(
        &self, org: &OrgId, id: &str,
        compute: impl Fn(&crate::domain::Profile) -> Result<UserInput, ScimError>,
    ) -> Result<Change, ScimError> {
        for _ in 0..MAX_UPDATE_ATTEMPTS {
            let current = self.get(org, id).await?;
            let profile = current
                .profile
                .as_ref()
                .expect("get returns provisioned members");
            let input = compute(profile)?;
            if !input.active {
                self.remove(&current, AuditAction::UserDeactivated).await?;
                return Ok(Change::Removed);
            }
            if &input.profile == profile {
                return Ok(Change::Updated(Box::new(current)));
            }
            let mut next = current.clone();
            next.profile = Some(input.profile);
            next.version += 1;
            next.updated_at = self.clock.now().max(current.updated_at);
            let audit = self
                .audit(org, AuditAction::UserUpdated, current.user.as_str())
                .target_named(next.user_name());
            let audit = match (current.user_name(), next.user_name()) {
                (Some(from), Some(to)) if from != to => audit.changed(Some(from), to),
                _ => audit,
            };
            match self.members.update_member(&current, &next, &audit).await {
                Ok(()) => return Ok(Change::Updated(Box::new(next))),
                Err(StoreError::AlreadyExists) => {
                    return Err(ScimError::Uniqueness(
                        "a user with this userName exists in the organisation".into(),
                    ));
                }
                Err(StoreError::Conflict) => continue,
                Err(StoreError::Gone) => return Err(ScimError::NotFound("user")),
                Err(e) => return Err(e.into()),
            }
        }
        Err(ScimError::internal("member update stayed contended"))
    }

    /// Deprovisions: one transaction removes the membership, profile, `userName` claim and
    /// member data (OAuth grants included) and writes the audit entry (the member's cookies
    /// fail from then on, as every request re-checks membership); then the grants read just
    /// before are revoked at their servers and the running turns cancelled. Failures of
    /// either are logged, not returned: the member is gone either way, and a retried request
    /// would only find nothing to remove.
    async fn remove(&self, member: &Member, action: AuditAction) -> Result<(), ScimError> {
        let (org, user) = (&member.org, &member.user);
        let audit = self
            .audit(org, action, user.as_str())
            .target_named(member.user_name());
        let grants = match &self.vault {
            Some(vault) => vault.grants_of(self.members.as_ref(), org, user).await,
            None => Vec::new(),
        };
        if !self.members.remove_member(org, user, &audit).await? {
            return Err(ScimError::NotFound("user"));
        }
        if let Some(vault) = &self.vault {
            vault.revoke_all(grants).await;
        }
        if let Err(e) = self.sessions.cancel_all_runs(user, org).await {
            tracing::error!(error = %Chain(&e), "could not cancel a removed member's running turns");
        }
        Ok(())
    }
}

/// The member of a JSON object named `name` in any letter case, as SCIM names are matched.
pub fn field<'a>(object: &'a serde_json::Map<String, Value>, name: &str) -> Option<&'a Value> {
    object
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v)
}

/// The values of a filterable attribute of a member, for [`Filter::accepts`].
pub fn user_values(m: &Member, path: &str) -> Vec<String> {
    let Some(p) = &m.profile else {
        return Vec::new();
    };
    match path {
        "userName" => vec![p.user_name.clone()],
        "externalId" => p.external_id.iter().cloned().collect(),
        "id" => vec![m.user.to_string()],
        "emails.value" => p
            .attributes
            .get("emails")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|e| e.get("value").and_then(Value::as_str).map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    }
}
