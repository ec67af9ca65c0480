//! [`LimitStore`] on SQLite: the `rate_windows`, `usage` and `member_usage` tables; the
//! members' months by day and by model are `tally`'s.

use async_trait::async_trait;
use knowledge_core::clock::Timestamp;
use rusqlite::{Connection, OptionalExtension, params};

use crate::tally::{self, At, Which, months};
use crate::{SqliteStore, backend, conversion};
use knowledge_core::domain::{MonthUsage, Usage};
use knowledge_core::ids::{OrgId, SessionKey, UserId};
use knowledge_core::policy::limits::Slot;
use knowledge_core::ports::{
    Charge, Gate, LimitStore, QueryCount, RateUpdate, RateWindow, StoreError, StoreResult,
};

#[async_trait]
impl LimitStore for SqliteStore {
    async fn get_rate_window(&self, key: &str) -> StoreResult<RateWindow> {
        let key = key.to_owned();
        self.read(move |c| read_rate_window(c, &key)).await
    }

    async fn put_rate_window(&self, update: RateUpdate<'_>) -> StoreResult<()> {
        let slot = Slot::from(&update);
        self.write(move |tx| write_rate_window(tx, &slot.update()))
            .await
    }

    async fn get_usage(&self, org: &OrgId, month: &str) -> StoreResult<Usage> {
        let (o, m) = (org.clone(), month.to_owned());
        self.read(move |c| read_usage(c, &o, &m)).await
    }

    async fn get_member_usage(
        &self, org: &OrgId, user: &UserId, month: &str,
    ) -> StoreResult<MonthUsage> {
        let (o, u, m) = (org.clone(), user.clone(), month.to_owned());
        self.read(move |c| {
            let mut found = months(c, &o, &m, Which::One(&u))?;
            Ok(found.pop().map(|(_, month)| month).unwrap_or_default())
        })
        .await
    }

    async fn list_member_usage_after(
        &self, org: &OrgId, month: &str, after: Option<&UserId>, limit: usize,
    ) -> StoreResult<Vec<(UserId, MonthUsage)>> {
        let (o, m, a) = (org.clone(), month.to_owned(), after.cloned());
        self.read(move |c| months(c, &o, &m, Which::After(a.as_ref(), limit)))
            .await
    }
}

/// The member's usage in `month` (zero when they asked nothing).
pub(crate) fn read_member_usage(
    c: &Connection, org: &OrgId, user: &UserId, month: &str,
) -> rusqlite::Result<Usage> {
    let found = c
        .prepare_cached(
            "SELECT queries, cost_micros FROM member_usage
             WHERE org_id = ?1 AND month = ?2 AND user_id = ?3",
        )?
        .query_row([org.as_str(), month, user.as_str()], usage_row)
        .optional()?;
    Ok(found.unwrap_or_default())
}

/// Adds `add` to the member's usage in `month`.
fn add_member_usage(
    c: &Connection, org: &OrgId, user: &UserId, month: &str, add: Usage,
) -> rusqlite::Result<()> {
    c.prepare_cached(
        "INSERT INTO member_usage (org_id, month, user_id, queries, cost_micros)
         VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT (org_id, month, user_id) DO UPDATE SET
           queries = queries + excluded.queries, cost_micros = cost_micros + excluded.cost_micros",
    )?
    .execute(params![
        org.as_str(),
        month,
        user.as_str(),
        add.queries,
        add.cost_micros
    ])
    .map(|_| ())
}

fn usage_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Usage> {
    Ok(Usage {
        queries: r.get(0)?,
        cost_micros: r.get(1)?,
    })
}

/// The organisation's usage in `month` (zero when nothing was counted).
pub(crate) fn read_usage(c: &Connection, org: &OrgId, month: &str) -> rusqlite::Result<Usage> {
    let found = c
        .prepare_cached("SELECT queries, cost_micros FROM usage WHERE org_id = ?1 AND month = ?2")?
        .query_row([org.as_str(), month], usage_row)
        .optional()?;
    Ok(found.unwrap_or_default())
}

/// Adds `add` to the organisation's usage in `month`.
fn add_usage(c: &Connection, org: &OrgId, month: &str, add: Usage) -> rusqlite::Result<()> {
    c.prepare_cached(
        "INSERT INTO usage (org_id, month, queries, cost_micros) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (org_id, month) DO UPDATE SET
           queries = queries + excluded.queries, cost_micros = cost_micros + excluded.cost_micros",
    )?
    .execute(params![org.as_str(), month, add.queries, add.cost_micros])
    .map(|_| ())
}

/// Adds `add` to the organisation's usage in `month` and to its member `key.user`'s.
fn add_both(c: &Connection, key: &SessionKey, month: &str, add: Usage) -> StoreResult<()> {
    add_usage(c, &key.org, month, add).map_err(backend)?;
    add_member_usage(c, &key.org, &key.user, month, add).map_err(backend)
}

/// Adds `charge`'s spend to the session's organisation and member, inside the commit's
/// transaction.
pub(crate) fn charge(c: &Connection, key: &SessionKey, charge: &Charge) -> StoreResult<()> {
    let spent = Usage {
        queries: 0,
        cost_micros: charge.micros,
    };
    // A call that cost nothing (no price set) leaves the organisation's counter alone.
    if charge.micros > 0 {
        add_usage(c, &key.org, &charge.month, spent).map_err(backend)?;
    }
    add_member_usage(c, &key.org, &key.user, &charge.month, spent).map_err(backend)?;
    // The call's tokens and spend on its day, and as one call of its model.
    let call = |count| tally::Add {
        count,
        input_tokens: charge.tokens.input,
        output_tokens: charge.tokens.output,
        cost_micros: charge.micros,
    };
    let month = &charge.month;
    tally::add(c, key, month, At::Day(charge.day), &call(0)).map_err(backend)?;
    tally::add(c, key, month, At::Model(&charge.model), &call(1)).map_err(backend)
}

/// The rate window under `key` (empty, version 0, when absent).
pub(crate) fn read_rate_window(c: &Connection, key: &str) -> rusqlite::Result<RateWindow> {
    let row: Option<(String, u64)> = c
        .prepare_cached("SELECT hits, version FROM rate_windows WHERE key = ?1")?
        .query_row([key], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    match row {
        None => Ok(RateWindow::default()),
        Some((hits, version)) => {
            let hits: Vec<Timestamp> = serde_json::from_str(&hits).map_err(conversion)?;
            Ok(RateWindow { hits, version })
        }
    }
}

/// Replaces the rate window if it is still at the update's expected version.
/// Errors: `Conflict` when it moved.
pub(crate) fn write_rate_window(c: &Connection, update: &RateUpdate<'_>) -> StoreResult<()> {
    let hits = serde_json::to_string(update.hits).map_err(backend)?;
    let (key, expires_at) = (update.key, update.expires_at.millis());
    let n = if update.expected_version == 0 {
        c.execute(
            "INSERT OR IGNORE INTO rate_windows (key, hits, version, expires_at) VALUES (?1, ?2, 1, ?3)",
            params![key, hits, expires_at],
        )
    } else {
        c.execute(
            "UPDATE rate_windows SET hits = ?2, version = version + 1, expires_at = ?3
             WHERE key = ?1 AND version = ?4",
            params![key, hits, expires_at, update.expected_version],
        )
    }
    .map_err(backend)?;
    if n == 0 {
        Err(StoreError::Conflict)
    } else {
        Ok(())
    }
}

/// Counts one query against the month of `key`'s organisation and member while both are
/// under their limits. Errors: `UsageLimit` with the organisation's counters, `MemberLimit`
/// with the member's.
fn count_query(c: &Connection, key: &SessionKey, count: &QueryCount<'_>) -> StoreResult<()> {
    let usage = read_usage(c, &key.org, count.month).map_err(backend)?;
    let over_quota = count.quota.is_some_and(|q| usage.queries >= q);
    let over_cap = count.cap_micros.is_some_and(|cap| usage.cost_micros >= cap);
    if over_quota || over_cap {
        return Err(StoreError::UsageLimit(usage));
    }
    let member = read_member_usage(c, &key.org, &key.user, count.month).map_err(backend)?;
    if count.member.reached(member) {
        return Err(StoreError::MemberLimit(member));
    }
    let one = Usage {
        queries: 1,
        cost_micros: 0,
    };
    add_both(c, key, count.month, one)?;
    let question = tally::Add {
        count: 1,
        input_tokens: 0,
        output_tokens: 0,
        cost_micros: 0,
    };
    tally::add(c, key, count.month, At::Day(count.day), &question).map_err(backend)
}

/// Passes `gate` for a write to the session `key`: the rate window, then the query count.
/// Run inside the write's transaction, whose rollback undoes both when either refuses.
pub(crate) fn pass(c: &Connection, key: &SessionKey, gate: Option<&Gate<'_>>) -> StoreResult<()> {
    let Some(gate) = gate else { return Ok(()) };
    write_rate_window(c, &gate.rate)?;
    if let Some(count) = &gate.query {
        count_query(c, key, count)?;
    }
    Ok(())
}

/// A [`Gate`] that owns its parts, to move into a blocking write: the rate window's slot,
/// and the query count with its month owned.
pub(crate) struct OwnedGate {
    rate: Slot,
    query: Option<(String, QueryCount<'static>)>,
}

impl OwnedGate {
    pub(crate) fn of(gate: &Gate<'_>) -> Self {
        Self {
            rate: Slot::from(&gate.rate),
            query: gate
                .query
                .map(|q| (q.month.to_owned(), QueryCount { month: "", ..q })),
        }
    }

    pub(crate) fn gate(&self) -> Gate<'_> {
        Gate {
            rate: self.rate.update(),
            query: (self.query.as_ref()).map(|(month, q)| QueryCount { month, ..*q }),
        }
    }
}
