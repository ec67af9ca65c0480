//! The `integrations` table: an organisation's integrations, each stored as its settings' JSON
//! beside the organisation's sealed grant, which only the grant store writes, and its tools'
//! rules (a JSON object by tool), which change a tool at a time.

use knowledge_core::domain::{AuditEntry, IntegrationConfig, ToolRule};
use knowledge_core::ids::OrgId;
use knowledge_core::ports::{StoreError, StoreResult};
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

/// See [`knowledge_core::ports::DirectoryStore::set_tool_rule`]: one key of the `rules`
/// object set (`rule` as JSON) or removed, in the statement that reads it.
pub(super) fn set_tool_rule(
    tx: &Transaction<'_>, o: &OrgId, name: &str, tool: &str, rule: Option<&str>, a: &AuditEntry,
) -> StoreResult<()> {
    // A JSON path quotes the key: `$."wiki_create-page"`; a tool name never holds a quote.
    let path = format!("$.{}", serde_json::to_string(tool).map_err(backend)?);
    let changed = match rule {
        Some(rule) => tx.execute(
            "UPDATE integrations SET rules = json_set(coalesce(rules, '{}'), ?3, json(?4))
             WHERE org_id = ?1 AND name = ?2",
            params![o.as_str(), name, path, rule],
        ),
        None => tx.execute(
            "UPDATE integrations SET rules = json_remove(coalesce(rules, '{}'), ?3)
             WHERE org_id = ?1 AND name = ?2",
            params![o.as_str(), name, path],
        ),
    }
    .map_err(backend)?;
    if changed == 0 {
        return Err(StoreError::Gone);
    }
    insert_audit(tx, a)
}

/// What [`list_integrations`] reads of one: its settings' JSON, the organisation's sealed
/// grant and its tools' rules' JSON.
pub(super) type IntegrationRow = (String, Option<String>, Option<String>);

/// Each integration of `o` by name.
pub(super) fn list_integrations(
    c: &Connection, o: &OrgId,
) -> rusqlite::Result<Vec<IntegrationRow>> {
    let mut stmt = c.prepare_cached(
        "SELECT config, org_grant, rules FROM integrations WHERE org_id = ?1 ORDER BY name",
    )?;
    let rows = stmt.query_map([o.as_str()], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
    rows.collect()
}

/// Decodes what [`list_integrations`] read.
pub(super) fn integration_from(
    (config, grant, rules): IntegrationRow,
) -> StoreResult<IntegrationConfig> {
    let config: IntegrationConfig = serde_json::from_str(&config).map_err(backend)?;
    let tool_rules = match rules {
        Some(rules) => serde_json::from_str::<std::collections::BTreeMap<String, ToolRule>>(&rules)
            .map_err(backend)?,
        None => Default::default(),
    };
    Ok(IntegrationConfig {
        org_grant_sealed: grant,
        tool_rules,
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
