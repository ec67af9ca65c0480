//! The `member_data` table: the items a member holds (credentials, OAuth grants, agent
//! memory), each named within its kind. Writing one moves the member's version, so a member
//! read before the write is stale after it.

use knowledge_core::domain::{AuditEntry, MemberData};
use knowledge_core::ids::{OrgId, UserId};
use knowledge_core::ports::{StoreError, StoreResult};
use rusqlite::{Connection, OptionalExtension, Transaction, params};

use super::audit::insert_audit;
use crate::{backend, text_parse};

/// The value of `user`'s data item `kind` named `name`.
pub(crate) fn member_data_value(
    c: &Connection, org: &OrgId, user: &UserId, kind: &str, name: &str,
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

/// [`knowledge_core::ports::DirectoryStore::swap_member_data`]'s contract, inside `tx`.
pub(crate) fn swap_member_data(
    tx: &Transaction<'_>, org: &OrgId, user: &UserId, kind: &str, name: &str,
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

/// See [`knowledge_core::ports::DirectoryStore::put_member_data`].
pub(super) fn put_member_data(
    tx: &Transaction<'_>, o: &OrgId, u: &UserId, d: &MemberData, a: &AuditEntry,
) -> StoreResult<()> {
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
    insert_audit(tx, a)
}

/// Every data item of `user` in `org`, by kind and name.
pub(super) fn list_member_data(
    c: &Connection, o: &OrgId, u: &UserId,
) -> rusqlite::Result<Vec<MemberData>> {
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
}
