//! [`OrgStore`] in memory: the organisations, their plan and status, SCIM token, single sign-on,
//! limits and memory switch, and the e-mail domains their sign-on claims.

use async_trait::async_trait;

use super::TransientStore;
use crate::domain::{AuditEntry, Org, SsoConfig};
use crate::ids::OrgId;
use crate::ports::{OrgChanges, OrgLimits, OrgStore, StoreError, StoreResult};

#[async_trait]
impl OrgStore for TransientStore {
    async fn put_org(&self, org: &Org) -> StoreResult<()> {
        let mut s = self.state();
        let kept = s.orgs.get(&org.id);
        let token = kept.and_then(|o| o.scim_token_sha256.clone());
        let token_at = kept.and_then(|o| o.scim_token_created_at);
        let sso = kept.and_then(|o| o.sso.clone());
        s.orgs.insert(
            org.id.clone(),
            Org {
                scim_token_sha256: token,
                scim_token_created_at: token_at,
                sso,
                ..org.clone()
            },
        );
        Ok(())
    }

    async fn get_org(&self, org: &OrgId) -> StoreResult<Option<Org>> {
        Ok(self.state().orgs.get(org).cloned())
    }

    async fn set_scim_token(
        &self, org: &OrgId, sha256: &str, audit: &AuditEntry,
    ) -> StoreResult<()> {
        let mut s = self.state();
        let stored = s.orgs.get_mut(org).ok_or(StoreError::Gone)?;
        stored.scim_token_sha256 = Some(sha256.to_owned());
        stored.scim_token_created_at = Some(audit.at);
        s.audit(audit);
        Ok(())
    }

    async fn set_sso(
        &self, org: &OrgId, previous: Option<&SsoConfig>, next: &SsoConfig, audit: &AuditEntry,
    ) -> StoreResult<()> {
        let mut s = self.state();
        let stored = s.orgs.get(org).ok_or(StoreError::Gone)?;
        if stored.sso.as_ref().map(|c| c.version) != previous.map(|c| c.version) {
            return Err(StoreError::Conflict);
        }
        let old = stored.sso.as_ref().map(|c| c.email_domains.clone());
        if next
            .email_domains
            .iter()
            .any(|d| s.domains.get(d).is_some_and(|o| o != org))
        {
            return Err(StoreError::AlreadyExists);
        }
        for d in old.unwrap_or_default() {
            s.domains.remove(&d);
        }
        for d in &next.email_domains {
            s.domains.insert(d.clone(), org.clone());
        }
        s.orgs.get_mut(org).ok_or(StoreError::Gone)?.sso = Some(next.clone());
        s.audit(audit);
        Ok(())
    }

    async fn set_limits(
        &self, org: &OrgId, limits: &OrgLimits, audit: &AuditEntry,
    ) -> StoreResult<()> {
        let mut s = self.state();
        let stored = s.orgs.get_mut(org).ok_or(StoreError::Gone)?;
        stored.monthly_query_quota = limits.quota;
        stored.cost_cap_micros = limits.cap_micros;
        stored.member_caps = limits.member;
        s.audit(audit);
        Ok(())
    }

    async fn change_org(
        &self, org: &OrgId, changes: &OrgChanges, audit: &AuditEntry,
    ) -> StoreResult<()> {
        let mut s = self.state();
        changes.apply(s.orgs.get_mut(org).ok_or(StoreError::Gone)?);
        s.audit(audit);
        Ok(())
    }

    async fn set_memory(&self, org: &OrgId, on: bool, audit: &AuditEntry) -> StoreResult<()> {
        let mut s = self.state();
        s.orgs.get_mut(org).ok_or(StoreError::Gone)?.memory_off = !on;
        s.audit(audit);
        Ok(())
    }

    async fn org_for_domain(&self, domain: &str) -> StoreResult<Option<OrgId>> {
        Ok(self.state().domains.get(domain).cloned())
    }
}
