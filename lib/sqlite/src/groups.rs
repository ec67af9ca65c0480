//! [`GroupStore`] on SQLite: the `org_groups` table (a group's name unique in its organisation
//! by an index) and `group_members`, one row a membership, indexed by member for
//! [`GroupStore::member_groups`]. Each write writes its audit entry in its transaction.

use async_trait::async_trait;
use knowledge_core::clock::Timestamp;
use knowledge_core::domain::{AuditEntry, Group, Member};
use knowledge_core::ids::{GroupId, OrgId, UserId};
use knowledge_core::ports::{GroupStore, StoreError, StoreResult};
use rusqlite::{Connection, OptionalExtension, Row, Transaction, params};

use crate::directory::{insert_audit, unique};
use crate::{SqliteStore, backend, conversion, text_parse};

const GROUP_COLUMNS: &str =
    "org_id, group_id, display_name, external_id, source, version, created_at, updated_at";

fn group_from(r: &Row<'_>) -> rusqlite::Result<Group> {
    Ok(Group {
        org: OrgId::parse(&r.get::<_, String>(0)?).map_err(conversion)?,
        id: GroupId::parse(&r.get::<_, String>(1)?).map_err(conversion)?,
        display_name: r.get(2)?,
        external_id: r.get(3)?,
        source: text_parse(r.get(4)?)?,
        version: r.get(5)?,
        created_at: Timestamp(r.get(6)?),
        updated_at: Timestamp(r.get(7)?),
    })
}

fn read_group(c: &Connection, org: &OrgId, id: &GroupId) -> rusqlite::Result<Option<Group>> {
    c.prepare_cached(&format!(
        "SELECT {GROUP_COLUMNS} FROM org_groups WHERE org_id = ?1 AND group_id = ?2"
    ))?
    .query_row([org.as_str(), id.as_str()], group_from)
    .optional()
}

fn create(tx: &Transaction<'_>, g: &Group, a: &AuditEntry) -> StoreResult<()> {
    let inserted = tx.execute(
        "INSERT INTO org_groups (org_id, group_id, display_name, name_key, external_id, source,
                                 version, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, 1, ?7, ?8)",
        params![
            g.org.as_str(),
            g.id.as_str(),
            g.display_name,
            g.name_key(),
            g.external_id,
            g.source.as_str(),
            g.created_at.millis(),
            g.updated_at.millis(),
        ],
    );
    unique(inserted)?;
    insert_audit(tx, a)
}

fn update(tx: &Transaction<'_>, p: &Group, g: &Group, a: &AuditEntry) -> StoreResult<()> {
    let updated = tx.execute(
        "UPDATE org_groups SET display_name = ?3, name_key = ?4, external_id = ?5, source = ?6,
                version = ?7, updated_at = ?8
         WHERE org_id = ?1 AND group_id = ?2 AND version = ?9",
        params![
            g.org.as_str(),
            g.id.as_str(),
            g.display_name,
            g.name_key(),
            g.external_id,
            g.source.as_str(),
            g.version,
            g.updated_at.millis(),
            p.version,
        ],
    );
    match unique(updated)? {
        1 => insert_audit(tx, a),
        _ => match read_group(tx, &g.org, &g.id).map_err(backend)? {
            Some(_) => Err(StoreError::Conflict),
            None => Err(StoreError::Gone),
        },
    }
}

fn delete(tx: &Transaction<'_>, o: &OrgId, id: &GroupId, a: &AuditEntry) -> StoreResult<bool> {
    let p = [o.as_str(), id.as_str()];
    let n = (tx.execute(
        "DELETE FROM org_groups WHERE org_id = ?1 AND group_id = ?2",
        p,
    ))
    .map_err(backend)?;
    if n == 0 {
        return Ok(false);
    }
    (tx.execute(
        "DELETE FROM group_members WHERE org_id = ?1 AND group_id = ?2",
        p,
    ))
    .map_err(backend)?;
    insert_audit(tx, a)?;
    Ok(true)
}

fn add(tx: &Transaction<'_>, id: &GroupId, m: &Member, a: &AuditEntry) -> StoreResult<bool> {
    if read_group(tx, &m.org, id).map_err(backend)?.is_none() {
        return Err(StoreError::Gone);
    }
    let stored: Option<u64> = tx
        .query_row(
            "SELECT version FROM members WHERE org_id = ?1 AND user_id = ?2",
            [m.org.as_str(), m.user.as_str()],
            |r| r.get(0),
        )
        .optional()
        .map_err(backend)?;
    match stored {
        None => return Err(StoreError::Gone),
        Some(v) if v != m.version => return Err(StoreError::Conflict),
        Some(_) => {}
    }
    let inserted = tx
        .execute(
            "INSERT OR IGNORE INTO group_members (org_id, group_id, user_id) VALUES (?1, ?2, ?3)",
            [m.org.as_str(), id.as_str(), m.user.as_str()],
        )
        .map_err(backend)?;
    if inserted == 0 {
        return Ok(false);
    }
    tx.execute(
        "UPDATE members SET version = version + 1 WHERE org_id = ?1 AND user_id = ?2",
        [m.org.as_str(), m.user.as_str()],
    )
    .map_err(backend)?;
    insert_audit(tx, a)?;
    Ok(true)
}

#[async_trait]
impl GroupStore for SqliteStore {
    async fn create_group(&self, group: &Group, audit: &AuditEntry) -> StoreResult<()> {
        let (g, a) = (group.clone(), audit.clone());
        self.write(move |tx| create(tx, &g, &a)).await
    }

    async fn get_group(&self, org: &OrgId, id: &GroupId) -> StoreResult<Option<Group>> {
        let (o, i) = (org.clone(), id.clone());
        self.read(move |c| read_group(c, &o, &i)).await
    }

    async fn find_group_by_name(&self, org: &OrgId, key: &str) -> StoreResult<Option<Group>> {
        let (o, k) = (org.clone(), key.to_owned());
        self.read(move |c| {
            c.prepare_cached(&format!(
                "SELECT {GROUP_COLUMNS} FROM org_groups WHERE org_id = ?1 AND name_key = ?2"
            ))?
            .query_row([o.as_str(), k.as_str()], group_from)
            .optional()
        })
        .await
    }

    async fn list_groups(&self, org: &OrgId) -> StoreResult<Vec<Group>> {
        let o = org.clone();
        self.read(move |c| {
            let mut stmt = c.prepare_cached(&format!(
                "SELECT {GROUP_COLUMNS} FROM org_groups WHERE org_id = ?1 ORDER BY group_id"
            ))?;
            let rows = stmt.query_map([o.as_str()], group_from)?;
            rows.collect()
        })
        .await
    }

    async fn update_group(
        &self, previous: &Group, next: &Group, audit: &AuditEntry,
    ) -> StoreResult<()> {
        let (p, g, a) = (previous.clone(), next.clone(), audit.clone());
        self.write(move |tx| update(tx, &p, &g, &a)).await
    }

    async fn delete_group(
        &self, org: &OrgId, id: &GroupId, audit: &AuditEntry,
    ) -> StoreResult<bool> {
        let (o, i, a) = (org.clone(), id.clone(), audit.clone());
        self.write(move |tx| delete(tx, &o, &i, &a)).await
    }

    async fn add_group_member(
        &self, group: &GroupId, member: &Member, audit: &AuditEntry,
    ) -> StoreResult<bool> {
        let (i, m, a) = (group.clone(), member.clone(), audit.clone());
        self.write(move |tx| add(tx, &i, &m, &a)).await
    }

    async fn remove_group_member(
        &self, org: &OrgId, group: &GroupId, user: &UserId, audit: &AuditEntry,
    ) -> StoreResult<bool> {
        let (o, g, u, a) = (org.clone(), group.clone(), user.clone(), audit.clone());
        self.write(move |tx| {
            let n = tx
                .execute(
                    "DELETE FROM group_members WHERE org_id = ?1 AND group_id = ?2 AND user_id = ?3",
                    [o.as_str(), g.as_str(), u.as_str()],
                )
                .map_err(backend)?;
            if n == 0 {
                return Ok(false);
            }
            insert_audit(tx, &a)?;
            Ok(true)
        })
        .await
    }

    async fn list_group_members(
        &self, org: &OrgId, group: &GroupId, after: Option<&UserId>, limit: usize,
    ) -> StoreResult<Vec<UserId>> {
        let (o, g) = (org.clone(), group.clone());
        let a = after.map_or(String::new(), |u| u.to_string());
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.read(move |c| {
            let mut stmt = c.prepare_cached(
                "SELECT user_id FROM group_members WHERE org_id = ?1 AND group_id = ?2
                 AND user_id > ?3 ORDER BY user_id LIMIT ?4",
            )?;
            let rows = stmt.query_map(params![o.as_str(), g.as_str(), a, limit], |r| {
                UserId::parse(&r.get::<_, String>(0)?).map_err(conversion)
            })?;
            rows.collect()
        })
        .await
    }

    async fn member_groups(&self, org: &OrgId, user: &UserId) -> StoreResult<Vec<GroupId>> {
        let (o, u) = (org.clone(), user.clone());
        self.read(move |c| {
            let mut stmt = c.prepare_cached(
                "SELECT group_id FROM group_members WHERE org_id = ?1 AND user_id = ?2
                 ORDER BY group_id",
            )?;
            let rows = stmt.query_map([o.as_str(), u.as_str()], |r| {
                GroupId::parse(&r.get::<_, String>(0)?).map_err(conversion)
            })?;
            rows.collect()
        })
        .await
    }
}
