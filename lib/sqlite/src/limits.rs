//! [`LimitStore`] on SQLite: the `rate_windows` and `usage` tables.

use async_trait::async_trait;
use knowledge_core::clock::Timestamp;
use rusqlite::{Connection, OptionalExtension, params};

use crate::{SqliteStore, backend, conversion};
use knowledge_core::domain::Usage;
use knowledge_core::ids::OrgId;
use knowledge_core::ports::{LimitStore, RateWindow, StoreError, StoreResult, UsageRefused};

#[async_trait]
impl LimitStore for SqliteStore {
    async fn get_rate_window(&self, key: &str) -> StoreResult<RateWindow> {
        let key = key.to_owned();
        self.read(move |c| {
            let row: Option<(String, u64)> = c
                .query_row(
                    "SELECT hits, version FROM rate_windows WHERE key = ?1",
                    [&key],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .optional()?;
            match row {
                None => Ok(RateWindow::default()),
                Some((hits, version)) => {
                    let hits: Vec<Timestamp> = serde_json::from_str(&hits).map_err(conversion)?;
                    Ok(RateWindow { hits, version })
                }
            }
        })
        .await
    }

    async fn put_rate_window(
        &self, key: &str, hits: &[Timestamp], expected_version: u64, expires_at: Timestamp,
    ) -> StoreResult<()> {
        let key = key.to_owned();
        let hits = serde_json::to_string(hits).map_err(backend)?;
        self.write(move |tx| {
            let n = if expected_version == 0 {
                tx.execute(
                    "INSERT OR IGNORE INTO rate_windows (key, hits, version, expires_at) VALUES (?1, ?2, 1, ?3)",
                    params![key, hits, expires_at.millis()],
                )
            } else {
                tx.execute(
                    "UPDATE rate_windows SET hits = ?2, version = version + 1, expires_at = ?3
                     WHERE key = ?1 AND version = ?4",
                    params![key, hits, expires_at.millis(), expected_version],
                )
            }
            .map_err(backend)?;
            if n == 0 { Err(StoreError::Conflict) } else { Ok(()) }
        })
        .await
    }

    async fn consume_query(
        &self, org: &OrgId, month: &str, quota: Option<u64>, cap_micros: Option<u64>,
    ) -> StoreResult<Result<Usage, UsageRefused>> {
        let (o, m) = (org.clone(), month.to_owned());
        self.write(move |tx| {
            let usage = read_usage(tx, &o, &m).map_err(backend)?;
            let over_quota = quota.is_some_and(|q| usage.queries >= q);
            let over_cap = cap_micros.is_some_and(|c| usage.cost_micros >= c);
            if over_quota || over_cap {
                return Ok(Err(UsageRefused(usage)));
            }
            let after = Usage {
                queries: usage.queries + 1,
                ..usage
            };
            write_usage(tx, &o, &m, after).map_err(backend)?;
            Ok(Ok(after))
        })
        .await
    }

    async fn get_usage(&self, org: &OrgId, month: &str) -> StoreResult<Usage> {
        let (o, m) = (org.clone(), month.to_owned());
        self.read(move |c| read_usage(c, &o, &m)).await
    }
}

pub(crate) fn read_usage(c: &Connection, org: &OrgId, month: &str) -> rusqlite::Result<Usage> {
    Ok(c.query_row(
        "SELECT queries, cost_micros FROM usage WHERE org_id = ?1 AND month = ?2",
        [org.as_str(), month],
        |r| {
            Ok(Usage {
                queries: r.get(0)?,
                cost_micros: r.get(1)?,
            })
        },
    )
    .optional()?
    .unwrap_or_default())
}

pub(crate) fn write_usage(
    c: &Connection, org: &OrgId, month: &str, u: Usage,
) -> rusqlite::Result<()> {
    c.execute(
        "INSERT OR REPLACE INTO usage (org_id, month, queries, cost_micros) VALUES (?1, ?2, ?3, ?4)",
        params![org.as_str(), month, u.queries, u.cost_micros],
    )
    .map(|_| ())
}
