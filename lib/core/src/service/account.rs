//! The signed-in person's account: who they are and where they belong, and signing out.

use crate::domain::{Actor, AuditAction, AuditEntry, Member, Org};
use crate::error::CoreError;
use crate::ids::{OrgId, UserId};
use crate::ports::StoreError;
use crate::signin;

use super::{MAX_COMMIT_ATTEMPTS, Principal, Service};

/// The signed-in member, their active organisation, and every organisation they belong to.
#[derive(Debug, Clone, PartialEq)]
pub struct Account {
    pub member: Member,
    pub org: Org,
    /// Each organisation with the member's role there, by organisation id; the active one
    /// among them.
    pub memberships: Vec<(Org, Member)>,
}

impl Service {
    /// What an organisation switcher shows. Errors: `Unauthenticated` when the membership is
    /// gone (removed since the guard read it).
    pub async fn account(&self, p: &Principal) -> Result<Account, CoreError> {
        let store = &self.deps.store;
        let member = store.get_member(&p.org, &p.user).await?;
        let org = store.get_org(&p.org).await?;
        let (Some(member), Some(org)) = (member, org) else {
            return Err(CoreError::Unauthenticated);
        };
        let mut ids = store.orgs_of(&p.user).await?;
        // The index may not show a membership made a moment ago; the active one is certain.
        if !ids.contains(&p.org) {
            ids.push(p.org.clone());
            ids.sort();
        }
        let mut memberships = Vec::with_capacity(ids.len());
        for id in ids {
            if id == p.org {
                memberships.push((org.clone(), member.clone()));
                continue;
            }
            let (Some(o), Some(m)) = (
                store.get_org(&id).await?,
                store.get_member(&id, &p.user).await?,
            ) else {
                continue;
            };
            memberships.push((o, m));
        }
        Ok(Account {
            member,
            org,
            memberships,
        })
    }

    /// Signs `user` out everywhere: every membership is stamped with the time, so every cookie
    /// issued before it (in any organisation, on any server) stops signing them in, and the
    /// audit log of each organisation records it. `current` is stamped even when the index of
    /// memberships has not caught up with it. Idempotent; a membership removed meanwhile is
    /// skipped.
    pub async fn sign_out(&self, user: &UserId, current: &OrgId) -> Result<(), CoreError> {
        let now = self.now();
        let mut orgs = self.deps.store.orgs_of(user).await?;
        if !orgs.contains(current) {
            orgs.push(current.clone());
        }
        for org in orgs {
            self.stamp_sign_out(&org, user, now).await?;
        }
        Ok(())
    }

    async fn stamp_sign_out(
        &self, org: &OrgId, user: &UserId, now: crate::clock::Timestamp,
    ) -> Result<(), CoreError> {
        let store = &self.deps.store;
        for _ in 0..MAX_COMMIT_ATTEMPTS {
            let Some(current) = store.get_member(org, user).await? else {
                return Ok(());
            };
            let mut next = current.clone();
            next.version += 1;
            next.signed_out_at = Some(now.max(current.signed_out_at.unwrap_or(now)));
            let audit = AuditEntry::new(
                org,
                now,
                Actor::Member,
                AuditAction::MemberSignedOut,
                user.as_str(),
            )
            .target_named(current.user_name());
            match store.update_member(&current, &next, &audit).await {
                Ok(()) | Err(StoreError::Gone) => return Ok(()),
                Err(StoreError::Conflict) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(CoreError::internal("sign-out stayed contended"))
    }

    /// Redeems a sign-in link's secret (see [`crate::signin`]): the principal it signs in.
    /// Errors: `Unauthenticated` for a secret unknown, used or expired, or a member removed.
    pub async fn redeem_sign_in_link(&self, secret: &str) -> Result<Principal, CoreError> {
        let store = self.deps.store.as_ref();
        let member = signin::redeem(store, store, self.now(), secret).await?;
        Ok(Principal::of(&member))
    }
}
