//! A member's month by day and by model on SQLite: the `member_usage_days` and
//! `member_usage_models` tables, written inside the transactions that count and charge (see
//! `limits`), and read with the month's counters.

use std::collections::BTreeMap;

use knowledge_core::domain::{DayUsage, ModelUsage, MonthUsage, Usage};
use knowledge_core::ids::{OrgId, SessionKey, UserId};
use rusqlite::{Connection, ToSql, params};

use crate::conversion;

/// Which members' months to read: one, or a page by user id.
#[derive(Clone, Copy)]
pub(crate) enum Which<'a> {
    One(&'a UserId),
    After(Option<&'a UserId>, usize),
}

/// Where a tally row counts: a day of the month, or a model.
#[derive(Clone, Copy)]
pub(crate) enum At<'a> {
    Day(u8),
    Model(&'a str),
}

impl At<'_> {
    /// The table, the column naming its row, and the column of its count (questions a day,
    /// calls a model).
    fn columns(self) -> (&'static str, &'static str, &'static str) {
        match self {
            At::Day(_) => ("member_usage_days", "day", "questions"),
            At::Model(_) => ("member_usage_models", "model", "calls"),
        }
    }

    fn value(&self) -> &dyn ToSql {
        match self {
            At::Day(day) => day,
            At::Model(model) => model,
        }
    }
}

/// What one write adds to a tally row.
pub(crate) struct Add {
    pub count: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cost_micros: u64,
}

/// Adds `add` to the member's row `at` of `month`, creating it.
pub(crate) fn add(
    c: &Connection, key: &SessionKey, month: &str, at: At<'_>, add: &Add,
) -> rusqlite::Result<()> {
    let (table, name, count) = at.columns();
    c.prepare_cached(&format!(
        "INSERT INTO {table}
           (org_id, month, user_id, {name}, {count}, input_tokens, output_tokens, cost_micros)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
         ON CONFLICT (org_id, month, user_id, {name}) DO UPDATE SET
           {count} = {count} + excluded.{count},
           input_tokens = input_tokens + excluded.input_tokens,
           output_tokens = output_tokens + excluded.output_tokens,
           cost_micros = cost_micros + excluded.cost_micros"
    ))?
    .execute(params![
        key.org.as_str(),
        month,
        key.user.as_str(),
        at.value(),
        add.count,
        add.input_tokens,
        add.output_tokens,
        add.cost_micros
    ])
    .map(|_| ())
}

/// The months of `org`'s members in `month` that `which` names, by user id, with their days
/// and models: the counters' key range, then the days' and the models' over the same users.
pub(crate) fn months(
    c: &Connection, org: &OrgId, month: &str, which: Which<'_>,
) -> rusqlite::Result<Vec<(UserId, MonthUsage)>> {
    let (one, after, limit) = match which {
        Which::One(user) => (Some(user.as_str()), None, -1),
        Which::After(after, limit) => (None, after.map(UserId::as_str), limit as i64),
    };
    let mut each: BTreeMap<String, MonthUsage> = BTreeMap::new();
    let mut stmt = c.prepare_cached(
        "SELECT user_id, queries, cost_micros FROM member_usage
         WHERE org_id = ?1 AND month = ?2 AND (?3 IS NULL OR user_id = ?3)
           AND (?4 IS NULL OR user_id > ?4)
         ORDER BY user_id LIMIT ?5",
    )?;
    let mut rows = stmt.query(params![org.as_str(), month, one, after, limit])?;
    while let Some(r) = rows.next()? {
        let usage = Usage {
            queries: r.get(1)?,
            cost_micros: r.get(2)?,
        };
        each.entry(r.get(0)?).or_default().usage = usage;
    }
    // Every member with days or models has counters: the same users' range holds them all.
    let (Some(first), Some(last)) = (each.keys().next(), each.keys().next_back()) else {
        return Ok(Vec::new());
    };
    let range = (org.as_str(), month, first.clone(), last.clone());
    for at in [At::Day(0), At::Model("")] {
        let (table, name, count) = at.columns();
        let mut stmt = c.prepare_cached(&format!(
            "SELECT user_id, {name}, {count}, input_tokens, output_tokens, cost_micros
             FROM {table} WHERE org_id = ?1 AND month = ?2 AND user_id BETWEEN ?3 AND ?4"
        ))?;
        let mut rows = stmt.query(params![range.0, range.1, range.2, range.3])?;
        while let Some(r) = rows.next()? {
            let Some(month) = each.get_mut(&r.get::<_, String>(0)?) else {
                continue;
            };
            let (n, input_tokens, output_tokens, cost_micros) =
                (r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?);
            match at {
                At::Day(_) => {
                    let day = DayUsage {
                        questions: n,
                        input_tokens,
                        output_tokens,
                        cost_micros,
                    };
                    month.days.insert(r.get(1)?, day);
                }
                At::Model(_) => {
                    let model = ModelUsage {
                        calls: n,
                        input_tokens,
                        output_tokens,
                        cost_micros,
                    };
                    month.models.insert(r.get(1)?, model);
                }
            }
        }
    }
    each.into_iter()
        .map(|(user, month)| Ok((UserId::parse(&user).map_err(conversion)?, month)))
        .collect()
}
