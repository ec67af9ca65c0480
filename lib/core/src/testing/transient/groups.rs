//! [`GroupStore`] in memory: groups, the names they claim, and both sides of each membership.

use async_trait::async_trait;

use super::TransientStore;
use crate::domain::{AuditEntry, Group, Member};
use crate::ids::{GroupId, OrgId, UserId};
use crate::ports::{GroupStore, StoreError, StoreResult};

#[async_trait]
impl GroupStore for TransientStore {
    async fn create_group(&self, group: &Group, audit: &AuditEntry) -> StoreResult<()> {
        let mut s = self.state();
        let name = (group.org.clone(), group.name_key());
        let exists = (s.groups.get(&group.org)).is_some_and(|g| g.contains_key(&group.id));
        if exists || s.group_names.contains_key(&name) {
            return Err(StoreError::AlreadyExists);
        }
        s.group_names.insert(name, group.id.clone());
        let stored = Group {
            version: 1,
            ..group.clone()
        };
        let groups = s.groups.entry(group.org.clone()).or_default();
        groups.insert(group.id.clone(), stored);
        s.audit(audit);
        Ok(())
    }

    async fn get_group(&self, org: &OrgId, id: &GroupId) -> StoreResult<Option<Group>> {
        Ok(self
            .state()
            .groups
            .get(org)
            .and_then(|g| g.get(id))
            .cloned())
    }

    async fn find_group_by_name(&self, org: &OrgId, key: &str) -> StoreResult<Option<Group>> {
        let s = self.state();
        let Some(id) = s.group_names.get(&(org.clone(), key.to_owned())) else {
            return Ok(None);
        };
        Ok(s.groups.get(org).and_then(|g| g.get(id)).cloned())
    }

    async fn list_groups(&self, org: &OrgId) -> StoreResult<Vec<Group>> {
        let s = self.state();
        Ok(s.groups
            .get(org)
            .into_iter()
            .flat_map(|g| g.values().cloned())
            .collect())
    }

    async fn update_group(
        &self, previous: &Group, next: &Group, audit: &AuditEntry,
    ) -> StoreResult<()> {
        let mut s = self.state();
        let stored =
            (s.groups.get(&next.org).and_then(|g| g.get(&next.id))).ok_or(StoreError::Gone)?;
        if stored.version != previous.version {
            return Err(StoreError::Conflict);
        }
        let (old, new) = (
            (next.org.clone(), stored.name_key()),
            (next.org.clone(), next.name_key()),
        );
        if s.group_names.get(&new).is_some_and(|id| *id != next.id) {
            return Err(StoreError::AlreadyExists);
        }
        s.group_names.remove(&old);
        s.group_names.insert(new, next.id.clone());
        let groups = s.groups.entry(next.org.clone()).or_default();
        groups.insert(next.id.clone(), next.clone());
        s.audit(audit);
        Ok(())
    }

    async fn delete_group(
        &self, org: &OrgId, id: &GroupId, audit: &AuditEntry,
    ) -> StoreResult<bool> {
        let mut s = self.state();
        let Some(group) = s.groups.get_mut(org).and_then(|g| g.remove(id)) else {
            return Ok(false);
        };
        s.group_names.remove(&(org.clone(), group.name_key()));
        let members = s.group_members.remove(&(org.clone(), id.clone()));
        for user in members.into_iter().flatten() {
            if let Some(groups) = s.member_groups.get_mut(&(org.clone(), user)) {
                groups.remove(id);
            }
        }
        s.audit(audit);
        Ok(true)
    }

    async fn add_group_member(
        &self, group: &GroupId, member: &Member, audit: &AuditEntry,
    ) -> StoreResult<bool> {
        let mut s = self.state();
        let org = &member.org;
        if !s.groups.get(org).is_some_and(|g| g.contains_key(group)) {
            return Err(StoreError::Gone);
        }
        let stored = (s.members.get_mut(org).and_then(|m| m.get_mut(&member.user)))
            .ok_or(StoreError::Gone)?;
        if stored.version != member.version {
            return Err(StoreError::Conflict);
        }
        let key = (org.clone(), group.clone());
        if s.group_members
            .get(&key)
            .is_some_and(|m| m.contains(&member.user))
        {
            return Ok(false);
        }
        let stored = (s.members.get_mut(org).and_then(|m| m.get_mut(&member.user)))
            .expect("read above, under the same lock");
        stored.version += 1;
        s.group_members
            .entry(key)
            .or_default()
            .insert(member.user.clone());
        let mine = s.member_groups.entry((org.clone(), member.user.clone()));
        mine.or_default().insert(group.clone());
        s.audit(audit);
        Ok(true)
    }

    async fn remove_group_member(
        &self, org: &OrgId, group: &GroupId, user: &UserId, audit: &AuditEntry,
    ) -> StoreResult<bool> {
        let mut s = self.state();
        let key = (org.clone(), group.clone());
        if !s
            .group_members
            .get_mut(&key)
            .is_some_and(|m| m.remove(user))
        {
            return Ok(false);
        }
        if let Some(groups) = s.member_groups.get_mut(&(org.clone(), user.clone())) {
            groups.remove(group);
        }
        s.audit(audit);
        Ok(true)
    }

    async fn list_group_members(
        &self, org: &OrgId, group: &GroupId, after: Option<&UserId>, limit: usize,
    ) -> StoreResult<Vec<UserId>> {
        let s = self.state();
        let Some(members) = s.group_members.get(&(org.clone(), group.clone())) else {
            return Ok(Vec::new());
        };
        Ok(members
            .iter()
            .filter(|u| after.is_none_or(|a| *u > a))
            .take(limit)
            .cloned()
            .collect())
    }

    async fn member_groups(&self, org: &OrgId, user: &UserId) -> StoreResult<Vec<GroupId>> {
        let s = self.state();
        let groups = s.member_groups.get(&(org.clone(), user.clone()));
        Ok(groups.into_iter().flatten().cloned().collect())
    }
}
