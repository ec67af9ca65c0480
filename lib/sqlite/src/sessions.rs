//! [`SessionStore`] on SQLite: the `sessions` and `events` tables.

use async_trait::async_trait;
use knowledge_core::clock::Timestamp;
use rusqlite::types::Value;
use rusqlite::{Connection, OptionalExtension, Row, params, params_from_iter};

use crate::{SqliteStore, backend, conversion, text_parse};
use knowledge_core::domain::{
    Draft, Event, EventBody, EventKind, FoundSessions, Session, SessionSummary, TitleQuery,
    TurnProgress,
};
use knowledge_core::ids::{OrgId, RunId, SessionId, SessionKey, UserId};
use knowledge_core::ports::{Charge, Gate, SessionStore, StoreError, StoreResult};

use crate::key_from;
use crate::limits::{self, OwnedGate, pass};

fn session_from(key: SessionKey, r: &Row<'_>) -> rusqlite::Result<Session> {
    let pending: String = r.get(5)?;
    let turn: Option<String> = r.get(9)?;
    let exec: Option<String> = r.get(10)?;
    Ok(Session {
        key,
        title: r.get(0)?,
        created_at: Timestamp(r.get(1)?),
        updated_at: Timestamp(r.get(2)?),
        cancelled_at: r.get::<_, Option<i64>>(3)?.map(Timestamp),
        run_id: r
            .get::<_, Option<String>>(4)?
            .map(|s| RunId::parse(&s))
            .transpose()
            .map_err(conversion)?,
        exec: exec
            .map(|c| serde_json::from_str(&c))
            .transpose()
            .map_err(conversion)?,
        pending: serde_json::from_str(&pending).map_err(conversion)?,
        turn: turn
            .map(|t| serde_json::from_str(&t))
            .transpose()
            .map_err(conversion)?,
        next_seq: r.get(6)?,
        version: r.get(7)?,
        deleting: r.get(8)?,
    })
}

fn event_from(r: &Row<'_>) -> rusqlite::Result<Event> {
    let kind = text_parse::<EventKind>(r.get(1)?)?;
    let payload: String = r.get(2)?;
    let payload = serde_json::from_str(&payload).map_err(conversion)?;
    Ok(Event {
        seq: r.get(0)?,
        body: EventBody::from_stored(kind, payload).map_err(conversion)?,
        occurred_at: Timestamp(r.get(3)?),
    })
}

fn insert_events(
    tx: &rusqlite::Transaction<'_>, key: &SessionKey, events: &[Event],
) -> StoreResult<()> {
    let mut stmt = tx
        .prepare_cached(
            "INSERT INTO events (user_id, org_id, session_id, seq, kind, payload, occurred_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        )
        .map_err(backend)?;
    for e in events {
        stmt.execute(params![
            key.user.as_str(),
            key.org.as_str(),
            key.session.as_str(),
            e.seq,
            e.kind().as_str(),
            e.body.payload().to_string(),
            e.occurred_at.millis(),
        ])
        .map_err(backend)?;
    }
    Ok(())
}

/// The session's columns, numbered as the statements bind them: ?1 user, ?2 organisation,
/// ?3 session, ?4 title, ?5 created, ?6 updated, ?7 cancelled, ?8 run, ?9 pending, ?10 next
/// sequence number, ?11 version, ?12 deleting, ?13 turn, ?14 execution claim, ?15 when the
/// run goes stale (the sweeper's index).
fn session_row(s: &Session) -> Vec<Value> {
    let k = &s.key;
    vec![
        Value::from(k.user.as_str().to_owned()),
        Value::from(k.org.as_str().to_owned()),
        Value::from(k.session.as_str().to_owned()),
        Value::from(s.title.clone()),
        Value::from(s.created_at.millis()),
        Value::from(s.updated_at.millis()),
        Value::from(s.cancelled_at.map(Timestamp::millis)),
        Value::from(s.run_id.as_ref().map(|r| r.as_str().to_owned())),
        Value::from(pending_json(s)),
        Value::from(s.next_seq as i64),
        Value::from(s.version as i64),
        Value::from(s.deleting),
        Value::from(turn_json(s)),
        Value::from(
            s.exec
                .as_ref()
                .map(|c| serde_json::to_string(c).expect("a claim serialises")),
        ),
        Value::from(s.stale_at().map(Timestamp::millis)),
    ]
}

/// Writes the session's record if it is still stored at `expected_version`, its draft
/// removed. Errors: `Conflict` when the version moved, `Gone` when there is no session.
fn update_session(
    tx: &rusqlite::Transaction<'_>, s: &Session, expected_version: u64,
) -> StoreResult<()> {
    let k = &s.key;
    let mut row = session_row(s);
    row.push(Value::from(expected_version as i64));
    let updated = tx
        .execute(
            "UPDATE sessions SET title = ?4, updated_at = ?6, cancelled_at = ?7, run_id = ?8,
             pending = ?9, next_seq = ?10, version = ?11, deleting = ?12, turn = ?13,
             exec = ?14, stale_at = ?15, draft = NULL
             WHERE user_id = ?1 AND org_id = ?2 AND session_id = ?3 AND version = ?16",
            params_from_iter(row),
        )
        .map_err(backend)?;
    if updated == 0 {
        let exists: bool = tx
            .query_row(
                "SELECT EXISTS (SELECT 1 FROM sessions
                 WHERE user_id = ?1 AND org_id = ?2 AND session_id = ?3)",
                [k.user.as_str(), k.org.as_str(), k.session.as_str()],
                |r| r.get(0),
            )
            .map_err(backend)?;
        return Err(if exists {
            StoreError::Conflict
        } else {
            StoreError::Gone
        });
    }
    Ok(())
}

/// A line of the session list from `session_id, title, updated_at, run_id IS NULL, turn`.
fn summary(r: &rusqlite::Row<'_>) -> rusqlite::Result<SessionSummary> {
    let released: bool = r.get(3)?;
    let turn: Option<String> = r.get(4)?;
    let asks = released
        && turn
            .and_then(|t| serde_json::from_str::<TurnProgress>(&t).ok())
            .is_some_and(|t| t.asks());
    Ok(SessionSummary {
        id: SessionId::parse(&r.get::<_, String>(0)?).map_err(conversion)?,
        title: r.get(1)?,
        updated_at: Timestamp(r.get(2)?),
        awaits_member: asks,
    })
}

fn pending_json(s: &Session) -> String {
    serde_json::to_string(&s.pending).expect("a list of integers serialises")
}

fn turn_json(s: &Session) -> Option<String> {
    s.turn
        .as_ref()
        .map(|t| serde_json::to_string(t).expect("turn progress serialises"))
}

#[async_trait]
impl SessionStore for SqliteStore {
    async fn create_session(
        &self, session: &Session, events: &[Event], gate: Option<&Gate<'_>>,
    ) -> StoreResult<()> {
        let (s, events) = (session.clone(), events.to_vec());
        let gate = gate.map(OwnedGate::of);
        self.write(move |tx| {
            let k = &s.key;
            let inserted = tx
                .execute(
                    "INSERT OR IGNORE INTO sessions
                     (user_id, org_id, session_id, title, created_at, updated_at, cancelled_at, run_id,
                      pending, next_seq, version, deleting, turn, exec, stale_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
                    params_from_iter(session_row(&s)),
                )
                .map_err(backend)?;
            if inserted == 0 {
                return Err(StoreError::AlreadyExists);
            }
            pass(tx, k, gate.as_ref().map(OwnedGate::gate).as_ref())?;
            insert_events(tx, k, &events)
        })
        .await
    }

    async fn get_session(&self, key: &SessionKey) -> StoreResult<Option<Session>> {
        let k = key.clone();
        self.read(move |c| read_session(c, &k)).await
    }

    async fn commit_session(
        &self, session: &Session, expected_version: u64, events: &[Event], charge: Option<&Charge>,
        gate: Option<&Gate<'_>>,
    ) -> StoreResult<()> {
        let (s, events, charge) = (session.clone(), events.to_vec(), charge.cloned());
        let gate = gate.map(OwnedGate::of);
        self.write(move |tx| {
            let k = &s.key;
            update_session(tx, &s, expected_version)?;
            pass(tx, k, gate.as_ref().map(OwnedGate::gate).as_ref())?;
            insert_events(tx, k, &events)?;
            if let Some(spent) = &charge {
                limits::charge(tx, k, spent)?;
            }
            Ok(())
        })
        .await
    }

    async fn rewrite_events(
        &self, session: &Session, expected_version: u64, rewritten: &[Event],
    ) -> StoreResult<()> {
        let (s, events) = (session.clone(), rewritten.to_vec());
        self.write(move |tx| {
            update_session(tx, &s, expected_version)?;
            let k = &s.key;
            let mut stmt = tx
                .prepare_cached(
                    "UPDATE events SET payload = ?5
                     WHERE user_id = ?1 AND org_id = ?2 AND session_id = ?3 AND seq = ?4",
                )
                .map_err(backend)?;
            for e in &events {
                stmt.execute(params![
                    k.user.as_str(),
                    k.org.as_str(),
                    k.session.as_str(),
                    e.seq,
                    e.body.payload().to_string(),
                ])
                .map_err(backend)?;
            }
            Ok(())
        })
        .await
    }

    async fn list_events(
        &self, key: &SessionKey, after: u64, limit: usize,
    ) -> StoreResult<Vec<Event>> {
        let k = key.clone();
        self.read(move |c| read_events(c, &k, after, limit)).await
    }

    async fn list_sessions(
        &self, user: &UserId, org: &OrgId, limit: usize,
    ) -> StoreResult<Vec<SessionSummary>> {
        let (u, o) = (user.clone(), org.clone());
        self.read(move |c| {
            let mut stmt = c.prepare_cached(
                "SELECT session_id, title, updated_at, run_id IS NULL, turn FROM sessions
                 WHERE user_id = ?1 AND org_id = ?2 AND deleting = 0
                 ORDER BY updated_at DESC, session_id DESC LIMIT ?3",
            )?;
            let rows = stmt.query_map(params![u.as_str(), o.as_str(), limit as i64], summary)?;
            rows.collect()
        })
        .await
    }

    async fn put_draft(&self, key: &SessionKey, run: &RunId, draft: &Draft) -> StoreResult<bool> {
        let (k, run) = (key.clone(), run.clone());
        let json = serde_json::to_string(draft).map_err(backend)?;
        self.write(move |tx| {
            let written = tx
                .execute(
                    "UPDATE sessions SET draft = ?5
                     WHERE user_id = ?1 AND org_id = ?2 AND session_id = ?3 AND run_id = ?4
                       AND deleting = 0",
                    params![
                        k.user.as_str(),
                        k.org.as_str(),
                        k.session.as_str(),
                        run.as_str(),
                        json
                    ],
                )
                .map_err(backend)?;
            Ok(written == 1)
        })
        .await
    }

    async fn find_sessions(
        &self, user: &UserId, org: &OrgId, query: &TitleQuery, limit: usize,
    ) -> StoreResult<FoundSessions> {
        // Every session of the member, newest first, read until `limit` match: the titles are
        // folded and matched in Rust, so that case folding is Unicode's, as on every store.
        let (u, o, query) = (user.clone(), org.clone(), query.clone());
        self.read(move |c| {
            let mut stmt = c.prepare_cached(
                "SELECT session_id, title, updated_at, run_id IS NULL, turn FROM sessions
                 WHERE user_id = ?1 AND org_id = ?2 AND deleting = 0
                 ORDER BY updated_at DESC, session_id DESC",
            )?;
            let mut rows = stmt.query(params![u.as_str(), o.as_str()])?;
            let mut sessions = vec![];
            while sessions.len() < limit {
                let Some(r) = rows.next()? else { break };
                let title: String = r.get(1)?;
                if query.matches(&title) {
                    sessions.push(summary(r)?);
                }
            }
            Ok(FoundSessions {
                sessions,
                complete: true,
            })
        })
        .await
    }

    async fn delete_session(&self, key: &SessionKey) -> StoreResult<bool> {
        let k = key.clone();
        self.write(move |tx| {
            let p = params![k.user.as_str(), k.org.as_str(), k.session.as_str()];
            tx.execute(
                "DELETE FROM events WHERE user_id = ?1 AND org_id = ?2 AND session_id = ?3",
                p,
            )
            .map_err(backend)?;
            let n = tx
                .execute(
                    "DELETE FROM sessions WHERE user_id = ?1 AND org_id = ?2 AND session_id = ?3",
                    p,
                )
                .map_err(backend)?;
            Ok(n > 0)
        })
        .await
    }

    async fn deleting_sessions(&self, limit: usize) -> StoreResult<Vec<SessionKey>> {
        self.read(move |c| {
            let mut stmt = c.prepare_cached(
                "SELECT user_id, org_id, session_id FROM sessions WHERE deleting = 1 LIMIT ?1",
            )?;
            let rows = stmt.query_map(params![limit as i64], |r| {
                key_from(r.get(0)?, r.get(1)?, r.get(2)?)
            })?;
            rows.collect()
        })
        .await
    }

    async fn stale_runs(&self, before: Timestamp, limit: usize) -> StoreResult<Vec<SessionKey>> {
        self.read(move |c| {
            // The partial index `sessions_stale` holds exactly the sessions with a run.
            let mut stmt = c.prepare_cached(
                "SELECT user_id, org_id, session_id FROM sessions
                 WHERE stale_at IS NOT NULL AND stale_at < ?1 ORDER BY stale_at LIMIT ?2",
            )?;
            let rows = stmt.query_map(params![before.millis(), limit as i64], |r| {
                key_from(r.get(0)?, r.get(1)?, r.get(2)?)
            })?;
            rows.collect()
        })
        .await
    }
}

/// A session's record ([`session_from`] reads its first eleven columns) and, twelfth, the
/// answer in progress kept beside it.
const SELECT_SESSION: &str = "SELECT title, created_at, updated_at, cancelled_at, run_id, pending,
    next_seq, version, deleting, turn, exec, draft
    FROM sessions WHERE user_id = ?1 AND org_id = ?2 AND session_id = ?3";

/// The session under `key`.
pub(crate) fn read_session(c: &Connection, key: &SessionKey) -> rusqlite::Result<Option<Session>> {
    c.prepare_cached(SELECT_SESSION)?
        .query_row(
            [key.user.as_str(), key.org.as_str(), key.session.as_str()],
            |r| session_from(key.clone(), r),
        )
        .optional()
}

/// The session and the answer in progress kept beside it, in one statement (as a transcript
/// poll reads them).
pub(crate) fn read_session_and_draft(
    c: &Connection, key: &SessionKey,
) -> rusqlite::Result<Option<(Session, Option<Draft>)>> {
    c.prepare_cached(SELECT_SESSION)?
        .query_row(
            [key.user.as_str(), key.org.as_str(), key.session.as_str()],
            |r| {
                let draft = (r.get::<_, Option<String>>(11)?)
                    .map(|j| serde_json::from_str(&j).map_err(conversion))
                    .transpose()?;
                Ok((session_from(key.clone(), r)?, draft))
            },
        )
        .optional()
}

/// The session's events with `seq > after`, ascending, at most `limit`.
pub(crate) fn read_events(
    c: &Connection, key: &SessionKey, after: u64, limit: usize,
) -> rusqlite::Result<Vec<Event>> {
    let mut stmt = c.prepare_cached(
        "SELECT seq, kind, payload, occurred_at FROM events
         WHERE user_id = ?1 AND org_id = ?2 AND session_id = ?3 AND seq > ?4
         ORDER BY seq LIMIT ?5",
    )?;
    let rows = stmt.query_map(
        params![
            key.user.as_str(),
            key.org.as_str(),
            key.session.as_str(),
            after,
            limit as i64
        ],
        event_from,
    )?;
    rows.collect()
}
