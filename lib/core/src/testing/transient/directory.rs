//! [`DirectoryStore`] in memory: the members and the names and identities they claim, their
//! data items, the integrations and the audit log. A removed member leaves their groups with
//! them.

use async_trait::async_trait;

use super::{State, TransientStore};
use crate::domain::{
    AuditCursor, AuditEntry, IntegrationConfig, Member, MemberData, MemberDataKind, ToolRule,
};
use crate::ids::{OrgId, UserId};
use crate::ports::{DirectoryStore, StoreError, StoreResult};

impl State {
    /// What `member` claims in its organisation: its `userName` and its identity.
    fn claims(member: &Member) -> Vec<(OrgId, String)> {
        let name = member
            .profile
            .as_ref()
            .map(|p| format!("name:{}", p.user_name_key()));
        let id = member.identity.as_ref().map(|i| format!("id:{}", i.key()));
        name.into_iter()
            .chain(id)
            .map(|c| (member.org.clone(), c))
            .collect()
    }

    /// Whether another user than `user` holds one of `claims`.
    fn taken(&self, claims: &[(OrgId, String)], user: &UserId) -> bool {
        claims
            .iter()
            .any(|c| self.claims.get(c).is_some_and(|u| u != user))
    }

    /// Whether `member` is stored at its version.
    fn at_version(&self, member: &Member) -> bool {
        self.members
            .get(&member.org)
            .and_then(|m| m.get(&member.user))
            .is_some_and(|stored| stored.version == member.version)
    }

    fn update_member(
        &mut self, previous: &Member, next: &Member, audit: &AuditEntry,
    ) -> StoreResult<()> {
        let stored = self
            .members
            .get(&next.org)
            .and_then(|m| m.get(&next.user))
            .ok_or(StoreError::Gone)?;
        if stored.version != previous.version {
            return Err(StoreError::Conflict);
        }
        let (old, new) = (State::claims(stored), State::claims(next));
        if self.taken(&new, &next.user) {
            return Err(StoreError::AlreadyExists);
        }
        for claim in old {
            self.claims.remove(&claim);
        }
        for claim in new {
            self.claims.insert(claim, next.user.clone());
        }
        self.members
            .entry(next.org.clone())
            .or_default()
            .insert(next.user.clone(), next.clone());
        self.audit(audit);
        Ok(())
    }

    fn remove_member(&mut self, org: &OrgId, user: &UserId, audit: &AuditEntry) -> bool {
        let Some(removed) = self.members.get_mut(org).and_then(|m| m.remove(user)) else {
            return false;
        };
        for claim in State::claims(&removed) {
            self.claims.remove(&claim);
        }
        self.member_data.remove(&(org.clone(), user.clone()));
        let groups = self.member_groups.remove(&(org.clone(), user.clone()));
        for group in groups.into_iter().flatten() {
            if let Some(members) = self.group_members.get_mut(&(org.clone(), group)) {
                members.remove(user);
            }
        }
        self.audit(audit);
        true
    }
}

#[async_trait]
impl DirectoryStore for TransientStore {
    async fn create_member(&self, member: &Member, audit: &AuditEntry) -> StoreResult<()> {
        let mut s = self.state();
        let exists = s
            .members
            .get(&member.org)
            .is_some_and(|m| m.contains_key(&member.user));
        let claims = State::claims(member);
        if exists || claims.iter().any(|c| s.claims.contains_key(c)) {
            return Err(StoreError::AlreadyExists);
        }
        for claim in claims {
            s.claims.insert(claim, member.user.clone());
        }
        let mut stored = member.clone();
        stored.version = 1;
        s.members
            .entry(member.org.clone())
            .or_default()
            .insert(member.user.clone(), stored);
        s.audit(audit);
        Ok(())
    }

    async fn get_member(&self, org: &OrgId, user: &UserId) -> StoreResult<Option<Member>> {
        Ok(self
            .state()
            .members
            .get(org)
            .and_then(|m| m.get(user))
            .cloned())
    }

    async fn get_members(&self, org: &OrgId, users: &[UserId]) -> StoreResult<Vec<Member>> {
        let state = self.state();
        let members = state.members.get(org);
        Ok((users.iter())
            .filter_map(|u| members.and_then(|m| m.get(u)).cloned())
            .collect())
    }

    async fn find_member_by_user_name(
        &self, org: &OrgId, key: &str,
    ) -> StoreResult<Option<Member>> {
        let s = self.state();
        Ok(s.claims
            .get(&(org.clone(), format!("name:{key}")))
            .and_then(|user| s.members.get(org).and_then(|m| m.get(user)))
            .cloned())
    }

    async fn list_members(&self, org: &OrgId) -> StoreResult<Vec<Member>> {
        Ok(self
            .state()
            .members
            .get(org)
            .map(|m| m.values().cloned().collect())
            .unwrap_or_default())
    }

    async fn list_members_after(
        &self, org: &OrgId, after: Option<&UserId>, limit: usize,
    ) -> StoreResult<Vec<Member>> {
        let s = self.state();
        let Some(members) = s.members.get(org) else {
            return Ok(Vec::new());
        };
        Ok(members
            .iter()
            .filter(|(user, _)| after.is_none_or(|a| *user > a))
            .take(limit)
            .map(|(_, m)| m.clone())
            .collect())
    }

    async fn orgs_of(&self, user: &UserId) -> StoreResult<Vec<OrgId>> {
        let s = self.state();
        let mut found: Vec<OrgId> = s
            .members
            .iter()
            .filter(|(_, m)| m.contains_key(user))
            .map(|(org, _)| org.clone())
            .collect();
        found.sort();
        Ok(found)
    }

    async fn update_member(
        &self, previous: &Member, next: &Member, audit: &AuditEntry,
    ) -> StoreResult<()> {
        self.state().update_member(previous, next, audit)
    }

    async fn update_member_keeping(
        &self, previous: &Member, next: &Member, audit: &AuditEntry, keeper: &Member,
    ) -> StoreResult<()> {
        let mut s = self.state();
        if !s.at_version(keeper) {
            return Err(StoreError::Conflict);
        }
        s.update_member(previous, next, audit)
    }

    async fn remove_member(
        &self, org: &OrgId, user: &UserId, audit: &AuditEntry,
    ) -> StoreResult<bool> {
        Ok(self.state().remove_member(org, user, audit))
    }

    async fn remove_member_keeping(
        &self, member: &Member, audit: &AuditEntry, keeper: &Member,
    ) -> StoreResult<bool> {
        let mut s = self.state();
        let Some(stored) = s.members.get(&member.org).and_then(|m| m.get(&member.user)) else {
            return Ok(false);
        };
        if stored.version != member.version || !s.at_version(keeper) {
            return Err(StoreError::Conflict);
        }
        Ok(s.remove_member(&member.org, &member.user, audit))
    }

    async fn put_member_data(
        &self, org: &OrgId, user: &UserId, data: &MemberData, audit: &AuditEntry,
    ) -> StoreResult<()> {
        let mut s = self.state();
        let member = s
            .members
            .get_mut(org)
            .and_then(|m| m.get_mut(user))
            .ok_or(StoreError::Gone)?;
        member.version += 1;
        let held = s
            .member_data
            .entry((org.clone(), user.clone()))
            .or_default();
        held.retain(|d| (d.kind, &d.name) != (data.kind, &data.name));
        held.push(data.clone());
        held.sort_by(|a, b| (a.kind, &a.name).cmp(&(b.kind, &b.name)));
        s.audit(audit);
        Ok(())
    }

    async fn list_member_data(&self, org: &OrgId, user: &UserId) -> StoreResult<Vec<MemberData>> {
        Ok(self
            .state()
            .member_data
            .get(&(org.clone(), user.clone()))
            .cloned()
            .unwrap_or_default())
    }

    async fn get_member_data(
        &self, org: &OrgId, user: &UserId, kind: MemberDataKind, name: &str,
    ) -> StoreResult<Option<String>> {
        Ok(self.state().member_data_value(org, user, kind, name))
    }

    async fn swap_member_data(
        &self, org: &OrgId, user: &UserId, kind: MemberDataKind, name: &str,
        previous: Option<&str>, next: Option<&str>,
    ) -> StoreResult<()> {
        self.state()
            .swap_member_data(org, user, kind, name, previous, next)
    }

    async fn put_integration(
        &self, org: &OrgId, integration: &IntegrationConfig, audit: &AuditEntry,
    ) -> StoreResult<()> {
        let mut s = self.state();
        let by_name = s.integrations.entry(org.clone()).or_default();
        let kept = by_name.get(&integration.name);
        let grant = kept.and_then(|i| i.org_grant_sealed.clone());
        let tool_rules = kept.map(|i| i.tool_rules.clone()).unwrap_or_default();
        let stored = IntegrationConfig {
            org_grant_sealed: grant,
            tool_rules,
            ..integration.clone()
        };
        by_name.insert(integration.name.clone(), stored);
        s.audit(audit);
        Ok(())
    }

    async fn set_tool_rule(
        &self, org: &OrgId, name: &str, tool: &str, rule: Option<ToolRule>, audit: &AuditEntry,
    ) -> StoreResult<()> {
        let mut s = self.state();
        let integration = (s.integrations.get_mut(org))
            .and_then(|i| i.get_mut(name))
            .ok_or(StoreError::Gone)?;
        match rule {
            Some(rule) => integration.tool_rules.insert(tool.to_owned(), rule),
            None => integration.tool_rules.remove(tool),
        };
        s.audit(audit);
        Ok(())
    }

    async fn list_integrations(&self, org: &OrgId) -> StoreResult<Vec<IntegrationConfig>> {
        Ok(self
            .state()
            .integrations
            .get(org)
            .map(|i| i.values().cloned().collect())
            .unwrap_or_default())
    }

    async fn remove_integration(
        &self, org: &OrgId, name: &str, audit: &AuditEntry,
    ) -> StoreResult<bool> {
        let mut s = self.state();
        let removed = s
            .integrations
            .get_mut(org)
            .and_then(|i| i.remove(name))
            .is_some();
        if removed {
            s.audit(audit);
        }
        Ok(removed)
    }

    async fn list_audit(
        &self, org: &OrgId, before: Option<&AuditCursor>, limit: usize,
    ) -> StoreResult<Vec<AuditEntry>> {
        let mut entries = self.state().audit.get(org).cloned().unwrap_or_default();
        entries.retain(|e| before.is_none_or(|c| (e.at, &e.id) < (c.at, &c.id)));
        entries.sort_by(|a, b| (b.at, &b.id).cmp(&(a.at, &a.id)));
        entries.truncate(limit);
        Ok(entries)
    }
}
