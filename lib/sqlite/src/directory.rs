//! [`DirectoryStore`] on SQLite: members with their profiles and data, integrations, audit.

use async_trait::async_trait;
use knowledge_core::clock::Timestamp;
use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::{SqliteStore, backend, conversion, text_parse};
use knowledge_core::domain::{
    AuditCursor, AuditDetail, AuditEntry, IntegrationConfig, Member, MemberData, MemberDataKind,
};
use knowledge_core::ids::{OrgId, UserId};
use knowledge_core::ports::{DirectoryStore, StoreError, StoreResult};

const MEMBER_COLUMNS: &str = "org_id, user_id, role, created_at, updated_at, profile, version, signed_out_at, identity, caps";

fn member_from(r: &Row<'_>) -> rusqlite::Result<Member> {
    let profile: Option<String> = r.get(5)?;
    let created_at = Timestamp(r.get(3)?);
    let updated_at = Timestamp(r.get(4)?);
    Ok(Member {
        org: OrgId::parse(&r.get::<_, String>(0)?).map_err(conversion)?,
        user: UserId::parse(&r.get::<_, String>(1)?).map_err(conversion)?,
        role: text_parse(r.get(2)?)?,
        created_at,
        updated_at: updated_at.max(created_at),
        profile: profile
            .map(|p| serde_json::from_str(&p))
            .transpose()
            .map_err(conversion)?,
        version: r.get(6)?,
        signed_out_at: r.get::<_, Option<i64>>(7)?.map(Timestamp),
        identity: r
            .get::<_, Option<String>>(8)?
            .map(|i| serde_json::from_str(&i))
            .transpose()
            .map_err(conversion)?,
        caps: r
            .get::<_, Option<String>>(9)?
            .map(|c| serde_json::from_str(&c))
            .transpose()
            .map_err(conversion)?,
    })
}

/// The member's own allowance as stored (`NULL`: the organisation's).
fn caps_json(m: &Member) -> StoreResult<Option<String>> {
    m.caps
        .as_ref()
        .map(serde_json::to_string)
        .transpose()
        .map_err(backend)
}

/// The member's identity as stored, with the key under which it is unique.
fn identity_columns(m: &Member) -> StoreResult<(Option<String>, Option<String>)> {
    let Some(id) = &m.identity else {
        return Ok((None, None));
    };
    Ok((
        Some(serde_json::to_string(id).map_err(backend)?),
        Some(id.key()),
    ))
}

fn profile_json(m: &Member) -> StoreResult<Option<String>> {
    m.profile
        .as_ref()
        .map(serde_json::to_string)
        .transpose()
        .map_err(backend)
}

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

/// The value of `user`'s data item `kind` named `name`.
pub(crate) fn member_data_value(
    c: &rusqlite::Connection, org: &OrgId, user: &UserId, kind: &str, name: &str,
) -> rusqlite::Result<Option<String>> {
    c.prepare_cached(
        "SELECT value FROM member_data
         WHERE org_id = ?1 AND user_id = ?2 AND kind = ?3 AND name = ?4",
    )?
    .query_row(params![org.as_str(), user.as_str(), kind, name], |r| {
        r.get(0)
    })
    .optional()
}

/// [`DirectoryStore::swap_member_data`]'s contract, inside `tx`.
pub(crate) fn swap_member_data(
    tx: &rusqlite::Transaction<'_>, org: &OrgId, user: &UserId, kind: &str, name: &str,
    previous: Option<&str>, next: Option<&str>,
) -> StoreResult<()> {
    let stored = member_data_value(tx, org, user, kind, name).map_err(backend)?;
    if stored.as_deref() != previous {
        return Err(StoreError::Conflict);
    }
    if previous.is_none() {
        let bumped = tx
            .execute(
                "UPDATE members SET version = version + 1 WHERE org_id = ?1 AND user_id = ?2",
                [org.as_str(), user.as_str()],
            )
            .map_err(backend)?;
        if bumped == 0 {
            return Err(StoreError::Gone);
        }
    }
    let key = params![org.as_str(), user.as_str(), kind, name];
    match next {
        Some(value) => tx.execute(
            "INSERT OR REPLACE INTO member_data (org_id, user_id, kind, name, value)
             VALUES (?1, ?2, ?3, ?4, ?5)",
            params![org.as_str(), user.as_str(), kind, name, value],
        ),
        None => tx.execute(
            "DELETE FROM member_data
             WHERE org_id = ?1 AND user_id = ?2 AND kind = ?3 AND name = ?4",
            key,
        ),
    }
    .map_err(backend)?;
    Ok(())
}

pub(crate) fn insert_audit(tx: &rusqlite::Transaction<'_>, a: &AuditEntry) -> StoreResult<()> {
    tx.execute(
        "INSERT INTO audit (org_id, at, id, actor, action, target, by_user, detail)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        params![
            a.org.as_str(),
            a.at.millis(),
            a.id,
            a.actor.as_str(),
            a.action.as_str(),
            a.target,
            a.by.as_ref().map(UserId::as_str),
            a.detail.to_text(),
        ],
    )
    .map_err(backend)?;
    Ok(())
}

/// Whether `member` is stored at its version.
fn at_version(tx: &rusqlite::Transaction<'_>, member: &Member) -> StoreResult<bool> {
    tx.query_row(
        "SELECT EXISTS (SELECT 1 FROM members WHERE org_id = ?1 AND user_id = ?2 AND version = ?3)",
        params![member.org.as_str(), member.user.as_str(), member.version],
        |r| r.get(0),
    )
    .map_err(backend)
}

/// See [`DirectoryStore::update_member`].
fn update_member(
    tx: &rusqlite::Transaction<'_>, p: &Member, m: &Member, a: &AuditEntry,
) -> StoreResult<()> {
    let identity = identity_columns(m)?;
    let updated = tx.execute(
        "UPDATE members SET role = ?3, updated_at = ?4, profile = ?5, user_name_key = ?6,
                version = ?7, signed_out_at = ?9, identity = ?10, identity_key = ?11, caps = ?12
         WHERE org_id = ?1 AND user_id = ?2 AND version = ?8",
        params![
            m.org.as_str(),
            m.user.as_str(),
            m.role.as_str(),
            m.updated_at.millis(),
            profile_json(m)?,
            m.profile.as_ref().map(|p| p.user_name_key()),
            m.version,
            p.version,
            m.signed_out_at.map(Timestamp::millis),
            identity.0,
            identity.1,
            caps_json(m)?,
        ],
    );
    match unique(updated)? {
        1 => insert_audit(tx, a),
        _ => {
            let exists: bool = tx
                .query_row(
                    "SELECT EXISTS (SELECT 1 FROM members WHERE org_id = ?1 AND user_id = ?2)",
                    [m.org.as_str(), m.user.as_str()],
                    |r| r.get(0),
                )
                .map_err(backend)?;
            Err(if exists {
                StoreError::Conflict
            } else {
                StoreError::Gone
            })
        }
    }
}

/// See [`DirectoryStore::remove_member`].
fn remove_member(
    tx: &rusqlite::Transaction<'_>, o: &OrgId, u: &UserId, a: &AuditEntry,
) -> StoreResult<bool> {
    let p = [o.as_str(), u.as_str()];
    let n = tx
        .execute("DELETE FROM members WHERE org_id = ?1 AND user_id = ?2", p)
        .map_err(backend)?;
    if n == 0 {
        return Ok(false);
    }
    tx.execute(
        "DELETE FROM member_data WHERE org_id = ?1 AND user_id = ?2",
        p,
    )
    .map_err(backend)?;
    insert_audit(tx, a)?;
    Ok(true)
}

#[async_trait]
impl DirectoryStore for SqliteStore {
    async fn create_member(&self, member: &Member, audit: &AuditEntry) -> StoreResult<()> {
        let (m, a) = (member.clone(), audit.clone());
        let identity = identity_columns(member)?;
        self.write(move |tx| {
            let inserted = tx.execute(
                "INSERT INTO members
                 (org_id, user_id, role, created_at, updated_at, profile, user_name_key, version,
                  signed_out_at, identity, identity_key, caps)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
                params![
                    m.org.as_str(),
                    m.user.as_str(),
                    m.role.as_str(),
                    m.created_at.millis(),
                    m.updated_at.millis(),
                    profile_json(&m)?,
                    m.profile.as_ref().map(|p| p.user_name_key()),
                    m.version,
                    m.signed_out_at.map(Timestamp::millis),
                    identity.0,
                    identity.1,
                    caps_json(&m)?,
                ],
            );
            unique(inserted)?;
            insert_audit(tx, &a)
        })
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
        self.read(move |c| {
            c.query_row(
                &format!(
                    "SELECT {MEMBER_COLUMNS} FROM members WHERE org_id = ?1 AND user_name_key = ?2"
                ),
                [o.as_str(), k.as_str()],
                member_from,
            )
            .optional()
        })
        .await
    }

    async fn list_members(&self, org: &OrgId) -> StoreResult<Vec<Member>> {
        let o = org.clone();
        self.read(move |c| {
            let mut stmt = c.prepare_cached(&format!(
                "SELECT {MEMBER_COLUMNS} FROM members WHERE org_id = ?1 ORDER BY user_id"
            ))?;
            let rows = stmt.query_map([o.as_str()], member_from)?;
            rows.collect()
        })
        .await
    }

    async fn list_members_after(
        &self, org: &OrgId, after: Option<&UserId>, limit: usize,
    ) -> StoreResult<Vec<Member>> {
        let (o, a) = (org.clone(), after.map_or(String::new(), |u| u.to_string()));
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.read(move |c| {
            let mut stmt = c.prepare_cached(&format!(
                "SELECT {MEMBER_COLUMNS} FROM members WHERE org_id = ?1 AND user_id > ?2
                 ORDER BY user_id LIMIT ?3"
            ))?;
            let rows = stmt.query_map(params![o.as_str(), a, limit], member_from)?;
            rows.collect()
        })
        .await
    }

    async fn orgs_of(&self, user: &UserId) -> StoreResult<Vec<OrgId>> {
        let u = user.clone();
        self.read(move |c| {
            let mut stmt =
                c.prepare_cached("SELECT org_id FROM members WHERE user_id = ?1 ORDER BY org_id")?;
            let rows = stmt.query_map([u.as_str()], |r| {
                OrgId::parse(&r.get::<_, String>(0)?).map_err(conversion)
            })?;
            rows.collect()
        })
        .await
    }

    async fn update_member(
        &self, previous: &Member, next: &Member, audit: &AuditEntry,
    ) -> StoreResult<()> {
        let (p, m, a) = (previous.clone(), next.clone(), audit.clone());
        self.write(move |tx| update_member(tx, &p, &m, &a)).await
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
            if !at_version(tx, &k)? {
                return Err(StoreError::Conflict);
            }
            update_member(tx, &p, &m, &a)
        })
        .await
    }

    async fn remove_member_keeping(
        &self, member: &Member, audit: &AuditEntry, keeper: &Member,
    ) -> StoreResult<bool> {
        let (m, a, k) = (member.clone(), audit.clone(), keeper.clone());
        self.write(move |tx| {
            let stored: Option<u64> = tx
                .query_row(
                    "SELECT version FROM members WHERE org_id = ?1 AND user_id = ?2",
                    [m.org.as_str(), m.user.as_str()],
                    |r| r.get(0),
                )
                .optional()
                .map_err(backend)?;
            match stored {
                None => Ok(false),
                Some(v) if v != m.version || !at_version(tx, &k)? => Err(StoreError::Conflict),
                Some(_) => remove_member(tx, &m.org, &m.user, &a),
            }
        })
        .await
    }

    async fn remove_member(
        &self, org: &OrgId, user: &UserId, audit: &AuditEntry,
    ) -> StoreResult<bool> {
        let (o, u, a) = (org.clone(), user.clone(), audit.clone());
        self.write(move |tx| remove_member(tx, &o, &u, &a)).await
    }

    async fn put_member_data(
        &self, org: &OrgId, user: &UserId, data: &MemberData, audit: &AuditEntry,
    ) -> StoreResult<()> {
        let (o, u, d, a) = (org.clone(), user.clone(), data.clone(), audit.clone());
        self.write(move |tx| {
            let n = tx
                .execute(
                    "UPDATE members SET version = version + 1 WHERE org_id = ?1 AND user_id = ?2",
                    [o.as_str(), u.as_str()],
                )
                .map_err(backend)?;
            if n == 0 {
                return Err(StoreError::Gone);
            }
            tx.execute(
                "INSERT OR REPLACE INTO member_data (org_id, user_id, kind, name, value)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                params![o.as_str(), u.as_str(), d.kind.as_str(), d.name, d.value],
            )
            .map_err(backend)?;
            insert_audit(tx, &a)
        })
        .await
    }

    async fn list_member_data(&self, org: &OrgId, user: &UserId) -> StoreResult<Vec<MemberData>> {
        let (o, u) = (org.clone(), user.clone());
        self.read(move |c| {
            let mut stmt = c.prepare_cached(
                "SELECT kind, name, value FROM member_data WHERE org_id = ?1 AND user_id = ?2
                 ORDER BY kind, name",
            )?;
            let rows = stmt.query_map([o.as_str(), u.as_str()], |r| {
                Ok(MemberData {
                    kind: text_parse(r.get(0)?)?,
                    name: r.get(1)?,
                    value: r.get(2)?,
                })
            })?;
            rows.collect()
        })
        .await
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
        let (o, i, a) = (org.clone(), integration.clone(), audit.clone());
        let config = serde_json::to_string(&i).map_err(backend)?;
        self.write(move |tx| {
            tx.execute(
                "INSERT INTO integrations (org_id, name, config) VALUES (?1, ?2, ?3)
                 ON CONFLICT (org_id, name) DO UPDATE SET config = excluded.config",
                params![o.as_str(), i.name, config],
            )
            .map_err(backend)?;
            insert_audit(tx, &a)
        })
        .await
    }

    async fn list_integrations(&self, org: &OrgId) -> StoreResult<Vec<IntegrationConfig>> {
        let o = org.clone();
        let rows: Vec<(String, Option<String>)> = self
            .read(move |c| {
                let mut stmt = c.prepare_cached(
                    "SELECT config, org_grant FROM integrations WHERE org_id = ?1 ORDER BY name",
                )?;
                let rows = stmt.query_map([o.as_str()], |r| Ok((r.get(0)?, r.get(1)?)))?;
                rows.collect()
            })
            .await?;
        rows.into_iter()
            .map(|(config, grant)| {
                let config: IntegrationConfig = serde_json::from_str(&config).map_err(backend)?;
                Ok(IntegrationConfig {
                    org_grant_sealed: grant,
                    ..config
                })
            })
            .collect()
    }

    async fn remove_integration(
        &self, org: &OrgId, name: &str, audit: &AuditEntry,
    ) -> StoreResult<bool> {
        let (o, n, a) = (org.clone(), name.to_owned(), audit.clone());
        self.write(move |tx| {
            let removed = tx
                .execute(
                    "DELETE FROM integrations WHERE org_id = ?1 AND name = ?2",
                    params![o.as_str(), n],
                )
                .map_err(backend)?;
            if removed == 0 {
                return Ok(false);
            }
            insert_audit(tx, &a)?;
            Ok(true)
        })
        .await
    }

    async fn list_audit(
        &self, org: &OrgId, before: Option<&AuditCursor>, limit: usize,
    ) -> StoreResult<Vec<AuditEntry>> {
        let o = org.clone();
        // Without a cursor, everything sorts before "the end of time".
        let (at, id) = before.map_or((i64::MAX, String::new()), |c| (c.at.millis(), c.id.clone()));
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.read(move |c| {
            let mut stmt = c.prepare_cached(
                "SELECT at, id, actor, action, target, by_user, detail FROM audit
                 WHERE org_id = ?1 AND (at < ?2 OR (at = ?2 AND id < ?3))
                 ORDER BY at DESC, id DESC LIMIT ?4",
            )?;
            let rows = stmt.query_map(params![o.as_str(), at, id, limit], |r| {
                Ok(AuditEntry {
                    org: o.clone(),
                    at: Timestamp(r.get(0)?),
                    id: r.get(1)?,
                    actor: text_parse(r.get(2)?)?,
                    action: text_parse(r.get(3)?)?,
                    target: r.get(4)?,
                    by: r
                        .get::<_, Option<String>>(5)?
                        .map(|u| UserId::parse(&u))
                        .transpose()
                        .map_err(conversion)?,
                    detail: r
                        .get::<_, Option<String>>(6)?
                        .map(|d| AuditDetail::from_text(&d))
                        .transpose()
                        .map_err(conversion)?
                        .unwrap_or_default(),
                })
            })?;
            rows.collect()
        })
        .await
    }
}

/// The membership of `user` in `org`.
pub(crate) fn read_member(
    c: &Connection, org: &OrgId, user: &UserId,
) -> rusqlite::Result<Option<Member>> {
    c.prepare_cached(&format!(
        "SELECT {MEMBER_COLUMNS} FROM members WHERE org_id = ?1 AND user_id = ?2"
    ))?
    .query_row([org.as_str(), user.as_str()], member_from)
    .optional()
}
