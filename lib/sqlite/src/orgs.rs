//! [`OrgStore`] on SQLite: the `orgs` table.

use async_trait::async_trait;
use knowledge_core::clock::Timestamp;
use rusqlite::{OptionalExtension, Row, params};

use crate::{SqliteStore, backend, conversion, text_parse};
use knowledge_core::domain::{AuditEntry, Org};
use knowledge_core::ids::OrgId;
use knowledge_core::ports::{OrgStore, StoreError, StoreResult};

use crate::directory::insert_audit;

fn org_from(r: &Row<'_>) -> rusqlite::Result<Org> {
    Ok(Org {
        id: OrgId::parse(&r.get::<_, String>(0)?).map_err(conversion)?,
        name: r.get(1)?,
        plan: text_parse(r.get(2)?)?,
        status: text_parse(r.get(3)?)?,
        sso_enabled: r.get(4)?,
        monthly_query_quota: r.get(5)?,
        cost_cap_micros: r.get(6)?,
        created_at: Timestamp(r.get(7)?),
        scim_token_sha256: r.get(8)?,
    })
}

#[async_trait]
impl OrgStore for SqliteStore {
    async fn put_org(&self, org: &Org) -> StoreResult<()> {
        let o = org.clone();
        self.write(move |tx| {
            tx.execute(
                "INSERT INTO orgs
                 (id, name, plan, status, sso_enabled, monthly_query_quota, cost_cap_micros, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
                 ON CONFLICT (id) DO UPDATE SET name = excluded.name, plan = excluded.plan,
                   status = excluded.status, sso_enabled = excluded.sso_enabled,
                   monthly_query_quota = excluded.monthly_query_quota,
                   cost_cap_micros = excluded.cost_cap_micros, created_at = excluded.created_at",
                params![
                    o.id.as_str(),
                    o.name,
                    o.plan.as_str(),
                    o.status.as_str(),
                    o.sso_enabled,
                    o.monthly_query_quota,
                    o.cost_cap_micros,
                    o.created_at.millis()
                ],
            )
            .map_err(backend)?;
            Ok(())
        })
        .await
    }

    async fn get_org(&self, org: &OrgId) -> StoreResult<Option<Org>> {
        let id = org.clone();
        self.read(move |c| {
            c.query_row(
                "SELECT id, name, plan, status, sso_enabled, monthly_query_quota, cost_cap_micros,
                        created_at, scim_token_sha256
                 FROM orgs WHERE id = ?1",
                [id.as_str()],
                org_from,
            )
            .optional()
        })
        .await
    }

    async fn set_scim_token(
        &self, org: &OrgId, sha256: &str, audit: &AuditEntry,
    ) -> StoreResult<()> {
        let (o, h, a) = (org.clone(), sha256.to_owned(), audit.clone());
        self.write(move |tx| {
            let n = tx
                .execute(
                    "UPDATE orgs SET scim_token_sha256 = ?2 WHERE id = ?1",
                    [o.as_str(), h.as_str()],
                )
                .map_err(backend)?;
            if n == 0 {
                return Err(StoreError::Gone);
            }
            insert_audit(tx, &a)
        })
        .await
    }
}
