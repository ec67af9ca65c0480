//! The `audit` table: the entries every directory and organisation write adds in its own
//! transaction, and the log read newest first.

use knowledge_core::clock::Timestamp;
use knowledge_core::domain::{AuditDetail, AuditEntry};
use knowledge_core::ids::{OrgId, UserId};
use knowledge_core::ports::StoreResult;
use rusqlite::{Connection, Transaction, params};

use crate::{backend, conversion, text_parse};

pub(crate) fn insert_audit(tx: &Transaction<'_>, a: &AuditEntry) -> StoreResult<()> {
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

/// At most `limit` entries of `org` before the entry at (`at`, `id`), newest first.
pub(super) fn list_audit(
    c: &Connection, o: &OrgId, at: i64, id: &str, limit: i64,
) -> rusqlite::Result<Vec<AuditEntry>> {
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
}
