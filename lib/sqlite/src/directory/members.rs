//! The `members` table: a member's row and its codec (profile, identity and caps as JSON), and
//! the statements that read and write members. Every write also writes its audit entry.

use knowledge_core::clock::Timestamp;
use knowledge_core::domain::{AuditEntry, Member};
use knowledge_core::ids::{OrgId, UserId};
use knowledge_core::ports::{StoreError, StoreResult};
use rusqlite::{Connection, OptionalExtension, Row, Transaction, params};

use super::audit::insert_audit;
use super::unique;
use crate::{backend, conversion, text_parse};

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

/// See [`knowledge_core::ports::DirectoryStore::create_member`].
pub(super) fn create_member(tx: &Transaction<'_>, m: &Member, a: &AuditEntry) -> StoreResult<()> {
    let identity = identity_columns(m)?;
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
            profile_json(m)?,
            m.profile.as_ref().map(|p| p.user_name_key()),
            m.version,
            m.signed_out_at.map(Timestamp::millis),
            identity.0,
            identity.1,
            caps_json(m)?,
        ],
    );
    unique(inserted)?;
    insert_audit(tx, a)
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

/// The member of `org` whose `userName` has the key `key`.
pub(super) fn find_by_user_name(
    c: &Connection, org: &OrgId, key: &str,
) -> rusqlite::Result<Option<Member>> {
    c.query_row(
        &format!("SELECT {MEMBER_COLUMNS} FROM members WHERE org_id = ?1 AND user_name_key = ?2"),
        [org.as_str(), key],
        member_from,
    )
    .optional()
}

/// Every member of `org`, by user id.
pub(super) fn list_members(c: &Connection, org: &OrgId) -> rusqlite::Result<Vec<Member>> {
    let mut stmt = c.prepare_cached(&format!(
        "SELECT {MEMBER_COLUMNS} FROM members WHERE org_id = ?1 ORDER BY user_id"
    ))?;
    let rows = stmt.query_map([org.as_str()], member_from)?;
    rows.collect()
}

/// At most `limit` members of `org` after the user id `after` (`""`: from the first), by user
/// id.
pub(super) fn list_members_after(
    c: &Connection, org: &OrgId, after: &str, limit: i64,
) -> rusqlite::Result<Vec<Member>> {
    let mut stmt = c.prepare_cached(&format!(
        "SELECT {MEMBER_COLUMNS} FROM members WHERE org_id = ?1 AND user_id > ?2
         ORDER BY user_id LIMIT ?3"
    ))?;
    let rows = stmt.query_map(params![org.as_str(), after, limit], member_from)?;
    rows.collect()
}

/// The organisations `user` is a member of, by id.
pub(super) fn orgs_of(c: &Connection, user: &UserId) -> rusqlite::Result<Vec<OrgId>> {
    let mut stmt =
        c.prepare_cached("SELECT org_id FROM members WHERE user_id = ?1 ORDER BY org_id")?;
    let rows = stmt.query_map([user.as_str()], |r| {
        OrgId::parse(&r.get::<_, String>(0)?).map_err(conversion)
    })?;
    rows.collect()
}

/// Whether `member` is stored at its version.
pub(super) fn at_version(tx: &Transaction<'_>, member: &Member) -> StoreResult<bool> {
    tx.query_row(
        "SELECT EXISTS (SELECT 1 FROM members WHERE org_id = ?1 AND user_id = ?2 AND version = ?3)",
        params![member.org.as_str(), member.user.as_str(), member.version],
        |r| r.get(0),
    )
    .map_err(backend)
}

/// See [`knowledge_core::ports::DirectoryStore::update_member`].
pub(super) fn update_member(
    tx: &Transaction<'_>, p: &Member, m: &Member, a: &AuditEntry,
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

/// See [`knowledge_core::ports::DirectoryStore::remove_member`].
pub(super) fn remove_member(
    tx: &Transaction<'_>, o: &OrgId, u: &UserId, a: &AuditEntry,
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
    tx.execute(
        "DELETE FROM group_members WHERE org_id = ?1 AND user_id = ?2",
        p,
    )
    .map_err(backend)?;
    insert_audit(tx, a)?;
    Ok(true)
}

/// See [`knowledge_core::ports::DirectoryStore::remove_member_keeping`].
pub(super) fn remove_member_keeping(
    tx: &Transaction<'_>, m: &Member, a: &AuditEntry, k: &Member,
) -> StoreResult<bool> {
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
        Some(v) if v != m.version || !at_version(tx, k)? => Err(StoreError::Conflict),
        Some(_) => remove_member(tx, &m.org, &m.user, a),
    }
}
