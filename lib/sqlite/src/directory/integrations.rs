//! The `integrations` table: an organisation's integrations, each stored as its settings' JSON
//! beside the organisation's sealed grant, which only the grant store writes.

use knowledge_core::domain::{AuditEntry, IntegrationConfig};
use knowledge_core::ids::OrgId;
use knowledge_core::ports::StoreResult;
use rusqlite::{Connection, Transaction, params};

use super::audit::insert_audit;
use crate::backend;

/// See [`knowledge_core::ports::DirectoryStore::put_integration`]:
/// `config` is the integration's settings as JSON.
pub(super) fn put_integration(
    tx: &Transaction<'_>, o: &OrgId, name: &str, config: &str, a: &AuditEntry,
) -> StoreResult<()> {
    tx.execute(
        "INSERT INTO integrations (org_id, name, config) VALUES (?1, ?2, ?3)
         ON CONFLICT (org_id, name) DO UPDATE SET config = excluded.config",
        params![o.as_str(), name, config],
    )
    .map_err(backend)?;
    insert_audit(tx, a)
}

/// Each integration of `o` by name: its settings' JSON and the organisation's sealed grant.
pub(super) fn list_integrations(
    c: &Connection, o: &OrgId,
) -> rusqlite::Result<Vec<(String, Option<String>)>> {
    let mut stmt = c.prepare_cached(
        "SELECT config, org_grant FROM integrations WHERE org_id = ?1 ORDER BY name",
    )?;
    let rows = stmt.query_map([o.as_str()], |r| Ok((r.get(0)?, r.get(1)?)))?;
    rows.collect()
}

/// Decodes what [`list_integrations`] read.
pub(super) fn integration_from(
    (config, grant): (String, Option<String>),
) -> StoreResult<IntegrationConfig> {
    let config: IntegrationConfig = serde_json::from_str(&config).map_err(backend)?;
    Ok(IntegrationConfig {
        org_grant_sealed: grant,
        ..config
    })
}

/// See [`knowledge_core::ports::DirectoryStore::remove_integration`].
pub(super) fn remove_integration(
    tx: &Transaction<'_>, o: &OrgId, name: &str, a: &AuditEntry,
) -> StoreResult<bool> {
    let removed = tx
        .execute(
            "DELETE FROM integrations WHERE org_id = ?1 AND name = ?2",
            params![o.as_str(), name],
        )
        .map_err(backend)?;
    if removed == 0 {
        return Ok(false);
    }
    insert_audit(tx, a)?;
    Ok(true)
}
