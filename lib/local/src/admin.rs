//! Administration of the local service: organisations, members, limits and cookies. The CLI's
//! admin commands and the first-start bootstrap call these.

use knowledge_core::clock::{Clock, SystemClock};
use knowledge_core::domain::{Member, Org, OrgStatus, Plan, Role, Usage};
use knowledge_core::ids::{OrgId, UserId};
use knowledge_core::ports::{Store, StoreError};
use serde_json::{Value, json};

/// Errors of admin commands; their text is shown to the operator.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    #[error("no organisation {0}")]
    NoSuchOrg(OrgId),
    #[error("user {user} is not a member of {org}")]
    NoSuchMember { org: OrgId, user: UserId },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The organisation and user created on a fresh data directory.
pub const DEFAULT_ORG: &str = "org_default";
pub const DEFAULT_USER: &str = "usr_default";

pub struct Admin<'a> {
    pub store: &'a dyn Store,
}

impl Admin<'_> {
    pub async fn create_org(
        &self,
        id: Option<OrgId>,
        name: &str,
        plan: Plan,
        sso: bool,
    ) -> Result<Org, AdminError> {
        let org = Org {
            id: id.unwrap_or_else(OrgId::generate),
            name: name.to_owned(),
            plan,
            status: OrgStatus::Active,
            sso_enabled: sso,
            monthly_query_quota: None,
            cost_cap_micros: None,
            created_at: SystemClock.now(),
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

    /// Changes whichever of the organisation's settings are `Some`. For the limits, an inner
    /// `None` means unlimited.
    pub async fn update_org(
        &self,
        id: &OrgId,
        quota: Option<Option<u64>>,
        cap_micros: Option<Option<u64>>,
        plan: Option<Plan>,
        status: Option<OrgStatus>,
    ) -> Result<Org, AdminError> {
        let mut org = self.org(id).await?;
        org.monthly_query_quota = quota.unwrap_or(org.monthly_query_quota);
        org.cost_cap_micros = cap_micros.unwrap_or(org.cost_cap_micros);
        org.plan = plan.unwrap_or(org.plan);
        org.status = status.unwrap_or(org.status);
        self.store.put_org(&org).await?;
        Ok(org)
    }

    pub async fn usage(&self, id: &OrgId) -> Result<Usage, AdminError> {
        Ok(self.store.get_usage(id, &SystemClock.now().month()).await?)
    }

    /// Adds (or re-roles) a member of an existing organisation.
    pub async fn add_member(
        &self,
        org: &OrgId,
        user: Option<UserId>,
        role: Role,
    ) -> Result<Member, AdminError> {
        self.org(org).await?;
        let member = Member {
            org: org.clone(),
            user: user.unwrap_or_else(UserId::generate),
            role,
            created_at: SystemClock.now(),
        };
        self.store.put_member(&member).await?;
        Ok(member)
    }

    /// Removes a member; their cookies for that organisation stop working at once.
    pub async fn remove_member(&self, org: &OrgId, user: &UserId) -> Result<(), AdminError> {
        if self.store.remove_member(org, user).await? {
            Ok(())
        } else {
            Err(AdminError::NoSuchMember {
                org: org.clone(),
                user: user.clone(),
            })
        }
    }

    /// When the default organisation does not exist (a fresh data directory or table), creates it
    /// and its admin. Returns them when it did.
    pub async fn bootstrap(&self) -> Result<Option<(OrgId, UserId)>, AdminError> {
        let org = OrgId::parse(DEFAULT_ORG).expect("valid id");
        let user = UserId::parse(DEFAULT_USER).expect("valid id");
        if self.store.get_org(&org).await?.is_some() {
            return Ok(None);
        }
        self.create_org(
            Some(org.clone()),
            "Default organisation",
            Plan::Business,
            false,
        )
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
        "ssoEnabled": org.sso_enabled,
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
