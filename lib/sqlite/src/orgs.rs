//! [`OrgStore`] on SQLite: the `orgs` table.

use async_trait::async_trait;
use knowledge_core::clock::Timestamp;
use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::{SqliteStore, backend, conversion, text_parse};
use knowledge_core::domain::{AuditEntry, Org, SsoConfig};
use knowledge_core::ids::OrgId;
use knowledge_core::ports::{OrgChanges, OrgLimits, OrgStore, StoreError, StoreResult};

use crate::directory::{insert_audit, unique};

fn org_from(r: &Row<'_>) -> rusqlite::Result<Org> {
    Ok(Org {
        id: OrgId::parse(&r.get::<_, String>(0)?).map_err(conversion)?,
        name: r.get(1)?,
        plan: text_parse(r.get(2)?)?,
        status: text_parse(r.get(3)?)?,
        monthly_query_quota: r.get(4)?,
        cost_cap_micros: r.get(5)?,
        created_at: Timestamp(r.get(6)?),
        scim_token_sha256: r.get(7)?,
        sso: r
            .get::<_, Option<String>>(8)?
            .map(|c| serde_json::from_str(&c))
            .transpose()
            .map_err(conversion)?,
        scim_token_created_at: r.get::<_, Option<i64>>(9)?.map(Timestamp),
        memory_off: r.get(10)?,
        member_caps: r
            .get::<_, Option<String>>(11)?
            .map(|c| serde_json::from_str(&c))
            .transpose()
            .map_err(conversion)?
            .unwrap_or_default(),
    })
}

#[async_trait]
impl OrgStore for SqliteStore {
    async fn put_org(&self, org: &Org) -> StoreResult<()> {
        let o = org.clone();
        self.write(move |tx| {
            tx.execute(
                "INSERT INTO orgs
                 (id, name, plan, status, monthly_query_quota, cost_cap_micros, created_at,
                  memory_off, member_caps)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
                 ON CONFLICT (id) DO UPDATE SET name = excluded.name, plan = excluded.plan,
                   status = excluded.status, monthly_query_quota = excluded.monthly_query_quota,
                   cost_cap_micros = excluded.cost_cap_micros, created_at = excluded.created_at,
                   memory_off = excluded.memory_off, member_caps = excluded.member_caps",
                params![
                    o.id.as_str(),
                    o.name,
                    o.plan.as_str(),
                    o.status.as_str(),
                    o.monthly_query_quota,
                    o.cost_cap_micros,
                    o.created_at.millis(),
                    o.memory_off,
                    serde_json::to_string(&o.member_caps).map_err(backend)?
                ],
            )
            .map_err(backend)?;
            Ok(())
        })
        .await
    }

    async fn get_org(&self, org: &OrgId) -> StoreResult<Option<Org>> {
        let id = org.clone();
        self.read(move |c| read_org(c, &id)).await
    }

    async fn set_scim_token(
        &self, org: &OrgId, sha256: &str, audit: &AuditEntry,
    ) -> StoreResult<()> {
        let (o, h, a) = (org.clone(), sha256.to_owned(), audit.clone());
        self.write(move |tx| {
            let n = tx
                .execute(
                    "UPDATE orgs SET scim_token_sha256 = ?2, scim_token_at = ?3 WHERE id = ?1",
                    params![o.as_str(), h.as_str(), a.at.millis()],
                )
                .map_err(backend)?;
            if n == 0 {
                return Err(StoreError::Gone);
            }
            insert_audit(tx, &a)
        })
        .await
    }

    async fn set_sso(
        &self, org: &OrgId, previous: Option<&SsoConfig>, next: &SsoConfig, audit: &AuditEntry,
    ) -> StoreResult<()> {
        let (o, expected, n, a) = (
            org.clone(),
            previous.map(|c| c.version),
            next.clone(),
            audit.clone(),
        );
        let config = serde_json::to_string(next).map_err(backend)?;
        self.write(move |tx| {
            let stored: Option<Option<String>> = tx
                .query_row("SELECT sso FROM orgs WHERE id = ?1", [o.as_str()], |r| {
                    r.get(0)
                })
                .optional()
                .map_err(backend)?;
            let stored = stored.ok_or(StoreError::Gone)?;
            let stored: Option<SsoConfig> = stored
                .map(|c| serde_json::from_str(&c))
                .transpose()
                .map_err(backend)?;
            if stored.as_ref().map(|c| c.version) != expected {
                return Err(StoreError::Conflict);
            }
            tx.execute("DELETE FROM sso_domains WHERE org_id = ?1", [o.as_str()])
                .map_err(backend)?;
            for domain in &n.email_domains {
                unique(tx.execute(
                    "INSERT INTO sso_domains (domain, org_id) VALUES (?1, ?2)",
                    [domain.as_str(), o.as_str()],
                ))?;
            }
            tx.execute(
                "UPDATE orgs SET sso = ?2 WHERE id = ?1",
                [o.as_str(), config.as_str()],
            )
            .map_err(backend)?;
            insert_audit(tx, &a)
        })
        .await
    }

    async fn set_limits(
        &self, org: &OrgId, limits: &OrgLimits, audit: &AuditEntry,
    ) -> StoreResult<()> {
        let (o, l, a) = (org.clone(), *limits, audit.clone());
        let member = serde_json::to_string(&limits.member).map_err(backend)?;
        self.write(move |tx| {
            let n = tx
                .execute(
                    "UPDATE orgs SET monthly_query_quota = ?2, cost_cap_micros = ?3,
                     member_caps = ?4 WHERE id = ?1",
                    params![o.as_str(), l.quota, l.cap_micros, member],
                )
                .map_err(backend)?;
            if n == 0 {
                return Err(StoreError::Gone);
            }
            insert_audit(tx, &a)
        })
        .await
    }

    async fn change_org(
        &self, org: &OrgId, changes: &OrgChanges, audit: &AuditEntry,
    ) -> StoreResult<()> {
        let (o, c, a) = (org.clone(), *changes, audit.clone());
        self.write(move |tx| {
            // Only the columns changed are written, in the one write transaction.
            let n = tx
                .execute(
                    "UPDATE orgs SET plan = COALESCE(?2, plan), status = COALESCE(?3, status),
                     monthly_query_quota = CASE WHEN ?4 THEN ?5 ELSE monthly_query_quota END,
                     cost_cap_micros = CASE WHEN ?6 THEN ?7 ELSE cost_cap_micros END
                     WHERE id = ?1",
                    params![
                        o.as_str(),
                        c.plan.map(|p| p.as_str()),
                        c.status.map(|s| s.as_str()),
                        c.quota.is_some(),
                        c.quota.flatten(),
                        c.cap_micros.is_some(),
                        c.cap_micros.flatten()
                    ],
                )
                .map_err(backend)?;
            if n == 0 {
                return Err(StoreError::Gone);
            }
            insert_audit(tx, &a)
        })
        .await
    }

    async fn set_memory(&self, org: &OrgId, on: bool, audit: &AuditEntry) -> StoreResult<()> {
        let (o, a) = (org.clone(), audit.clone());
        self.write(move |tx| {
            let n = tx
                .execute(
                    "UPDATE orgs SET memory_off = ?2 WHERE id = ?1",
                    params![o.as_str(), !on],
                )
                .map_err(backend)?;
            if n == 0 {
                return Err(StoreError::Gone);
            }
            insert_audit(tx, &a)
        })
        .await
    }

    async fn org_for_domain(&self, domain: &str) -> StoreResult<Option<OrgId>> {
        let d = domain.to_owned();
        self.read(move |c| {
            c.query_row(
                "SELECT org_id FROM sso_domains WHERE domain = ?1",
                [d.as_str()],
                |r| OrgId::parse(&r.get::<_, String>(0)?).map_err(conversion),
            )
            .optional()
        })
        .await
    }
}

/// The organisation's record.
pub(crate) fn read_org(c: &Connection, org: &OrgId) -> rusqlite::Result<Option<Org>> {
    c.prepare_cached(
        "SELECT id, name, plan, status, monthly_query_quota, cost_cap_micros, created_at,
                scim_token_sha256, sso, scim_token_at, memory_off, member_caps
         FROM orgs WHERE id = ?1",
    )?
    .query_row([org.as_str()], org_from)
    .optional()
}
