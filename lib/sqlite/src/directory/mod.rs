//! [`DirectoryStore`] on SQLite: members with their profiles and data, integrations, audit.
//! The trait's methods here move their arguments onto the blocking pool; the statements are in
//! one module per table (`members`, `data`, `integrations`, `audit`).

mod audit;
mod data;
mod integrations;
mod members;

use async_trait::async_trait;
use knowledge_core::domain::{
    AuditCursor, AuditEntry, IntegrationConfig, Member, MemberData, MemberDataKind, ToolRule,
};
use knowledge_core::ids::{OrgId, UserId};
use knowledge_core::ports::{DirectoryStore, StoreError, StoreResult};

use crate::{SqliteStore, backend};

pub(crate) use audit::insert_audit;
pub(crate) use data::{member_data_value, swap_member_data};
pub(crate) use members::read_member;

/// Whether a write failed on a uniqueness rule (primary key or the `userName` index).
/// A write that must not take a key or claim another row holds: `AlreadyExists` when it would.
pub(crate) fn unique<T>(written: rusqlite::Result<T>) -> StoreResult<T> {
    written.map_err(|e| match is_unique_violation(&e) {
        true => StoreError::AlreadyExists,
        false => backend(e),
    })
}

fn is_unique_violation(e: &rusqlite::Error) -> bool {
    matches!(
        e,
        rusqlite::Error::SqliteFailure(f, _)
            if f.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE
                || f.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_PRIMARYKEY
    )
}

#[async_trait]
impl DirectoryStore for SqliteStore {
    async fn create_member(&self, member: &Member, audit: &AuditEntry) -> StoreResult<()> {
        let (m, a) = (member.clone(), audit.clone());
        self.write(move |tx| members::create_member(tx, &m, &a))
            .await
    }

    async fn get_member(&self, org: &OrgId, user: &UserId) -> StoreResult<Option<Member>> {
        let (o, u) = (org.clone(), user.clone());
        self.read(move |c| read_member(c, &o, &u)).await
    }

    async fn get_members(&self, org: &OrgId, users: &[UserId]) -> StoreResult<Vec<Member>> {
        let (o, us) = (org.clone(), users.to_vec());
        self.read(move |c| {
            let mut found = Vec::with_capacity(us.len());
            for u in &us {
                found.extend(read_member(c, &o, u)?);
            }
            Ok(found)
        })
        .await
    }

    async fn find_member_by_user_name(
        &self, org: &OrgId, key: &str,
    ) -> StoreResult<Option<Member>> {
        let (o, k) = (org.clone(), key.to_owned());
        self.read(move |c| members::find_by_user_name(c, &o, &k))
            .await
    }

    async fn list_members(&self, org: &OrgId) -> StoreResult<Vec<Member>> {
        let o = org.clone();
        self.read(move |c| members::list_members(c, &o)).await
    }

    async fn list_members_after(
        &self, org: &OrgId, after: Option<&UserId>, limit: usize,
    ) -> StoreResult<Vec<Member>> {
        let (o, a) = (org.clone(), after.map_or(String::new(), |u| u.to_string()));
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.read(move |c| members::list_members_after(c, &o, &a, limit))
            .await
    }

    async fn orgs_of(&self, user: &UserId) -> StoreResult<Vec<OrgId>> {
        let u = user.clone();
        self.read(move |c| members::orgs_of(c, &u)).await
    }

    async fn update_member(
        &self, previous: &Member, next: &Member, audit: &AuditEntry,
    ) -> StoreResult<()> {
        let (p, m, a) = (previous.clone(), next.clone(), audit.clone());
        self.write(move |tx| members::update_member(tx, &p, &m, &a))
            .await
    }

    async fn update_member_keeping(
        &self, previous: &Member, next: &Member, audit: &AuditEntry, keeper: &Member,
    ) -> StoreResult<()> {
        let (p, m, a, k) = (
            previous.clone(),
            next.clone(),
            audit.clone(),
            keeper.clone(),
        );
        self.write(move |tx| {
            if !members::at_version(tx, &k)? {
                return Err(StoreError::Conflict);
            }
            members::update_member(tx, &p, &m, &a)
        })
        .await
    }

    async fn remove_member_keeping(
        &self, member: &Member, audit: &AuditEntry, keeper: &Member,
    ) -> StoreResult<bool> {
        let (m, a, k) = (member.clone(), audit.clone(), keeper.clone());
        self.write(move |tx| members::remove_member_keeping(tx, &m, &a, &k))
            .await
    }

    async fn remove_member(
        &self, org: &OrgId, user: &UserId, audit: &AuditEntry,
    ) -> StoreResult<bool> {
        let (o, u, a) = (org.clone(), user.clone(), audit.clone());
        self.write(move |tx| members::remove_member(tx, &o, &u, &a))
            .await
    }

    async fn put_member_data(
        &self, org: &OrgId, user: &UserId, data: &MemberData, audit: &AuditEntry,
    ) -> StoreResult<()> {
        let (o, u, d, a) = (org.clone(), user.clone(), data.clone(), audit.clone());
        self.write(move |tx| data::put_member_data(tx, &o, &u, &d, &a))
            .await
    }

    async fn list_member_data(&self, org: &OrgId, user: &UserId) -> StoreResult<Vec<MemberData>> {
        let (o, u) = (org.clone(), user.clone());
        self.read(move |c| data::list_member_data(c, &o, &u)).await
    }

    async fn get_member_data(
        &self, org: &OrgId, user: &UserId, kind: MemberDataKind, name: &str,
    ) -> StoreResult<Option<String>> {
        let (o, u, n) = (org.clone(), user.clone(), name.to_owned());
        self.read(move |c| member_data_value(c, &o, &u, kind.as_str(), &n))
            .await
    }

    async fn swap_member_data(
        &self, org: &OrgId, user: &UserId, kind: MemberDataKind, name: &str,
        previous: Option<&str>, next: Option<&str>,
    ) -> StoreResult<()> {
        let (o, u, n) = (org.clone(), user.clone(), name.to_owned());
        let (previous, next) = (previous.map(str::to_owned), next.map(str::to_owned));
        self.write(move |tx| {
            let (previous, next) = (previous.as_deref(), next.as_deref());
            swap_member_data(tx, &o, &u, kind.as_str(), &n, previous, next)
        })
        .await
    }

    async fn put_integration(
        &self, org: &OrgId, integration: &IntegrationConfig, audit: &AuditEntry,
    ) -> StoreResult<()> {
        let (o, n, a) = (org.clone(), integration.name.clone(), audit.clone());
        let config = serde_json::to_string(integration).map_err(backend)?;
        self.write(move |tx| integrations::put_integration(tx, &o, &n, &config, &a))
            .await
    }

    async fn set_tool_rule(
        &self, org: &OrgId, name: &str, tool: &str, rule: Option<ToolRule>, audit: &AuditEntry,
    ) -> StoreResult<()> {
        let rule = rule.map(|r| serde_json::to_string(&r)).transpose();
        let rule = rule.map_err(backend)?;
        let (o, n, t, a) = (org.clone(), name.to_owned(), tool.to_owned(), audit.clone());
        self.write(move |tx| integrations::set_tool_rule(tx, &o, &n, &t, rule.as_deref(), &a))
            .await
    }

    async fn list_integrations(&self, org: &OrgId) -> StoreResult<Vec<IntegrationConfig>> {
        let o = org.clone();
        let rows = self
            .read(move |c| integrations::list_integrations(c, &o))
            .await?;
        rows.into_iter()
            .map(integrations::integration_from)
            .collect()
    }

    async fn remove_integration(
        &self, org: &OrgId, name: &str, audit: &AuditEntry,
    ) -> StoreResult<bool> {
        let (o, n, a) = (org.clone(), name.to_owned(), audit.clone());
        self.write(move |tx| integrations::remove_integration(tx, &o, &n, &a))
            .await
    }

    async fn list_audit(
        &self, org: &OrgId, before: Option<&AuditCursor>, limit: usize,
    ) -> StoreResult<Vec<AuditEntry>> {
        let o = org.clone();
        // Without a cursor, everything sorts before "the end of time".
        let (at, id) = before.map_or((i64::MAX, String::new()), |c| (c.at.millis(), c.id.clone()));
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.read(move |c| audit::list_audit(c, &o, at, &id, limit))
            .await
    }
}
