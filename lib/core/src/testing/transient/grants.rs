//! [`GrantStore`] in memory: a member's OAuth grants among its data items, an organisation's on
//! its integration.

use async_trait::async_trait;

use super::TransientStore;
use crate::domain::{AuditEntry, GrantOwner, MemberDataKind};
use crate::ids::OrgId;
use crate::ports::{GrantStore, StoreError, StoreResult};

#[async_trait]
impl GrantStore for TransientStore {
    async fn get_grant(
        &self, org: &OrgId, owner: &GrantOwner, integration: &str,
    ) -> StoreResult<Option<String>> {
        let s = self.state();
        Ok(match owner {
            GrantOwner::Member(user) => {
                s.member_data_value(org, user, MemberDataKind::OAuthGrant, integration)
            }
            GrantOwner::Organisation => s
                .integrations
                .get(org)
                .and_then(|i| i.get(integration))
                .and_then(|i| i.org_grant_sealed.clone()),
        })
    }

    async fn swap_grant(
        &self, org: &OrgId, owner: &GrantOwner, integration: &str, previous: Option<&str>,
        next: Option<&str>, audit: Option<&AuditEntry>,
    ) -> StoreResult<()> {
        let mut s = self.state();
        match owner {
            GrantOwner::Member(user) => {
                let kind = MemberDataKind::OAuthGrant;
                s.swap_member_data(org, user, kind, integration, previous, next)?;
            }
            GrantOwner::Organisation => {
                let stored = (s.integrations.get_mut(org))
                    .and_then(|i| i.get_mut(integration))
                    .ok_or(match previous {
                        None => StoreError::Gone,
                        Some(_) => StoreError::Conflict,
                    })?;
                if stored.org_grant_sealed.as_deref() != previous {
                    return Err(StoreError::Conflict);
                }
                stored.org_grant_sealed = next.map(str::to_owned);
            }
        }
        if let Some(audit) = audit {
            s.audit(audit);
        }
        Ok(())
    }
}
