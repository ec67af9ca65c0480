//! `SqliteStore`: the storage port on an embedded SQLite file (WAL, `synchronous=FULL`), so the
//! local service survives restarts and a `kill -9` loses nothing it acknowledged.
//!
//! One writer connection behind a mutex serialises writes (each in an immediate transaction);
//! readers use a small pool and never block the writer. Blocking calls run on tokio's blocking
//! pool. Other processes (the admin commands) may use the same file at the same time.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use knowledge_core::clock::Timestamp;
use knowledge_core::domain::{
    AuditEntry, Event, EventKind, IntegrationConfig, Member, MemberData, Org, Session,
    SessionSummary, Usage,
};
use knowledge_core::ids::{OrgId, RunId, SessionId, SessionKey, UserId};
use knowledge_core::ports::{Charge, RateWindow, Store, StoreError, UsageRefused};
use rusqlite::{Connection, OpenFlags, OptionalExtension, Row, TransactionBehavior, params};

const SCHEMA: &str = r#"
CREATE TABLE IF NOT EXISTS orgs (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    plan TEXT NOT NULL,
    status TEXT NOT NULL,
    sso_enabled INTEGER NOT NULL,
    monthly_query_quota INTEGER,
    cost_cap_micros INTEGER,
    created_at INTEGER NOT NULL,
    scim_token_sha256 TEXT
) STRICT;
CREATE TABLE IF NOT EXISTS members (
    org_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    role TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL DEFAULT 0,
    profile TEXT,
    user_name_key TEXT,
    version INTEGER NOT NULL DEFAULT 1,
    PRIMARY KEY (org_id, user_id)
) STRICT, WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS member_data (
    org_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    name TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (org_id, user_id, kind, name)
) STRICT, WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS integrations (
    org_id TEXT NOT NULL,
    name TEXT NOT NULL,
    config TEXT NOT NULL,
    PRIMARY KEY (org_id, name)
) STRICT, WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS audit (
    org_id TEXT NOT NULL,
    at INTEGER NOT NULL,
    id TEXT NOT NULL,
    actor TEXT NOT NULL,
    action TEXT NOT NULL,
    target TEXT NOT NULL,
    PRIMARY KEY (org_id, at, id)
) STRICT, WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS sessions (
    user_id TEXT NOT NULL,
    org_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    title TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    cancelled_at INTEGER,
    run_id TEXT,
    deleting INTEGER NOT NULL DEFAULT 0,
    pending TEXT NOT NULL,
    turn TEXT,
    next_seq INTEGER NOT NULL,
    version INTEGER NOT NULL,
    PRIMARY KEY (user_id, org_id, session_id)
) STRICT, WITHOUT ROWID;
DROP INDEX IF EXISTS sessions_by_update;
CREATE INDEX IF NOT EXISTS sessions_recent ON sessions (user_id, org_id, updated_at DESC, session_id DESC);
CREATE INDEX IF NOT EXISTS sessions_running ON sessions (run_id) WHERE run_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS sessions_deleting ON sessions (user_id, org_id, session_id) WHERE deleting = 1;
CREATE TABLE IF NOT EXISTS events (
    user_id TEXT NOT NULL,
    org_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    kind TEXT NOT NULL,
    payload TEXT NOT NULL,
    occurred_at INTEGER NOT NULL,
    PRIMARY KEY (user_id, org_id, session_id, seq)
) STRICT, WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS rate_windows (
    key TEXT PRIMARY KEY,
    hits TEXT NOT NULL,
    version INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS usage (
    org_id TEXT NOT NULL,
    month TEXT NOT NULL,
    queries INTEGER NOT NULL,
    cost_micros INTEGER NOT NULL,
    PRIMARY KEY (org_id, month)
) STRICT, WITHOUT ROWID;
"#;

/// Idle reader connections kept open at most.
const MAX_IDLE_READERS: usize = 8;

struct Inner {
    path: PathBuf,
    writer: Mutex<Connection>,
    readers: Mutex<Vec<Connection>>,
}

/// The embedded store. Cheap to clone; clones share connections.
#[derive(Clone)]
pub struct SqliteStore {
    inner: Arc<Inner>,
}

fn backend(e: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(e.to_string())
}

fn open_connection(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(std::time::Duration::from_secs(10))?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "FULL")?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    Ok(conn)
}

impl SqliteStore {
    /// Opens (creating when absent) the database `store.db` in `dir`.
    pub fn open(dir: &Path) -> Result<Self, StoreError> {
        std::fs::create_dir_all(dir).map_err(backend)?;
        let path = dir.join("store.db");
        let writer = open_connection(&path).map_err(backend)?;
        writer.execute_batch(SCHEMA).map_err(backend)?;
        migrate(&writer).map_err(backend)?;
        Ok(Self {
            inner: Arc::new(Inner {
                path,
                writer: Mutex::new(writer),
                readers: Mutex::new(Vec::new()),
            }),
        })
    }

    /// Runs `f` on a reader connection on the blocking pool.
    async fn read<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    {
        let inner = self.inner.clone();
        tokio::task::spawn_blocking(move || {
            let pooled = inner.readers.lock().expect("reader pool lock").pop();
            let conn = match pooled {
                Some(c) => c,
                None => open_connection(&inner.path).map_err(backend)?,
            };
            let out = f(&conn).map_err(backend);
            let mut pool = inner.readers.lock().expect("reader pool lock");
            if pool.len() < MAX_IDLE_READERS {
                pool.push(conn);
            }
            out
        })
        .await
        .map_err(backend)?
    }

    /// Runs `f` in an immediate transaction on the writer connection; commits when it returns
    /// `Ok`, rolls back otherwise.
    async fn write<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&rusqlite::Transaction<'_>) -> Result<T, StoreError> + Send + 'static,
    {
        let inner = self.inner.clone();
        tokio::task::spawn_blocking(move || {
            let mut conn = inner
                .writer
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(backend)?;
            let out = f(&tx)?;
            tx.commit().map_err(backend)?;
            Ok(out)
        })
        .await
        .map_err(backend)?
    }

    /// Sessions whose run was in flight when the process stopped, to be resumed at start-up.
    pub async fn running_sessions(&self) -> Result<Vec<(SessionKey, RunId)>, StoreError> {
        self.read(|c| {
            let mut stmt = c.prepare(
                "SELECT user_id, org_id, session_id, run_id FROM sessions
                 WHERE run_id IS NOT NULL AND deleting = 0",
            )?;
            let rows = stmt.query_map([], |r| {
                Ok((
                    key_from(r.get(0)?, r.get(1)?, r.get(2)?)?,
                    RunId::parse(&r.get::<_, String>(3)?).map_err(conversion)?,
                ))
            })?;
            rows.collect()
        })
        .await
    }

    /// How many session rows and event rows exist under `key`; both are 0 after a delete.
    pub async fn rows_for(&self, key: &SessionKey) -> Result<(u64, u64), StoreError> {
        let k = key.clone();
        self.read(move |c| {
            let p = params![k.user.as_str(), k.org.as_str(), k.session.as_str()];
            let sessions = c.query_row(
                "SELECT COUNT(*) FROM sessions WHERE user_id = ?1 AND org_id = ?2 AND session_id = ?3",
                p,
                |r| r.get(0),
            )?;
            let events = c.query_row(
                "SELECT COUNT(*) FROM events WHERE user_id = ?1 AND org_id = ?2 AND session_id = ?3",
                p,
                |r| r.get(0),
            )?;
            Ok((sessions, events))
        })
        .await
    }
}

fn conversion(e: impl std::error::Error + Send + Sync + 'static) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Text, Box::new(e))
}

fn text_parse<T: std::str::FromStr<Err = String>>(s: String) -> rusqlite::Result<T> {
    s.parse::<T>()
        .map_err(|e| conversion(std::io::Error::other(e)))
}

fn key_from(user: String, org: String, session: String) -> rusqlite::Result<SessionKey> {
    Ok(SessionKey {
        user: UserId::parse(&user).map_err(conversion)?,
        org: OrgId::parse(&org).map_err(conversion)?,
        session: SessionId::parse(&session).map_err(conversion)?,
    })
}

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

/// Brings a data directory written by an earlier version up to the current schema.
fn migrate(c: &Connection) -> rusqlite::Result<()> {
    for (table, column, decl) in [
        ("sessions", "turn", "TEXT"),
        ("orgs", "scim_token_sha256", "TEXT"),
        ("members", "updated_at", "INTEGER NOT NULL DEFAULT 0"),
        ("members", "profile", "TEXT"),
        ("members", "user_name_key", "TEXT"),
        ("members", "version", "INTEGER NOT NULL DEFAULT 1"),
    ] {
        let present: bool = c.query_row(
            "SELECT EXISTS (SELECT 1 FROM pragma_table_info(?1) WHERE name = ?2)",
            [table, column],
            |r| r.get(0),
        )?;
        if !present {
            c.execute_batch(&format!("ALTER TABLE {table} ADD COLUMN {column} {decl}"))?;
        }
    }
    c.execute_batch(
        "CREATE UNIQUE INDEX IF NOT EXISTS members_user_name
             ON members (org_id, user_name_key) WHERE user_name_key IS NOT NULL",
    )
}

const MEMBER_COLUMNS: &str = "org_id, user_id, role, created_at, updated_at, profile, version";

fn member_from(r: &Row<'_>) -> rusqlite::Result<Member> {
    let profile: Option<String> = r.get(5)?;
    let created_at = Timestamp(r.get(3)?);
    let updated_at = Timestamp(r.get(4)?);
    Ok(Member {
        org: OrgId::parse(&r.get::<_, String>(0)?).map_err(conversion)?,
        user: UserId::parse(&r.get::<_, String>(1)?).map_err(conversion)?,
        role: text_parse(r.get(2)?)?,
        created_at,
        updated_at: updated_at.max(created_at),
        profile: profile
            .map(|p| serde_json::from_str(&p))
            .transpose()
            .map_err(conversion)?,
        version: r.get(6)?,
    })
}

fn profile_json(m: &Member) -> Result<Option<String>, StoreError> {
    m.profile
        .as_ref()
        .map(serde_json::to_string)
        .transpose()
        .map_err(backend)
}

/// Whether a write failed on a uniqueness rule (primary key or the `userName` index).
fn is_unique_violation(e: &rusqlite::Error) -> bool {
    matches!(
        e,
        rusqlite::Error::SqliteFailure(f, _)
            if f.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE
                || f.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_PRIMARYKEY
    )
}

fn insert_audit(tx: &rusqlite::Transaction<'_>, a: &AuditEntry) -> Result<(), StoreError> {
    tx.execute(
        "INSERT INTO audit (org_id, at, id, actor, action, target) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![
            a.org.as_str(),
            a.at.millis(),
            a.id,
            a.actor.as_str(),
            a.action.as_str(),
            a.target
        ],
    )
    .map_err(backend)?;
    Ok(())
}

fn session_from(key: SessionKey, r: &Row<'_>) -> rusqlite::Result<Session> {
    let pending: String = r.get(5)?;
    let turn: Option<String> = r.get(9)?;
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
    let payload: String = r.get(2)?;
    Ok(Event {
        seq: r.get(0)?,
        kind: text_parse::<EventKind>(r.get(1)?)?,
        payload: serde_json::from_str(&payload).map_err(conversion)?,
        occurred_at: Timestamp(r.get(3)?),
    })
}

fn insert_events(
    tx: &rusqlite::Transaction<'_>,
    key: &SessionKey,
    events: &[Event],
) -> Result<(), StoreError> {
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
            e.kind.as_str(),
            e.payload.to_string(),
            e.occurred_at.millis(),
        ])
        .map_err(backend)?;
    }
    Ok(())
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
impl Store for SqliteStore {
    async fn put_org(&self, org: &Org) -> Result<(), StoreError> {
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

    async fn get_org(&self, org: &OrgId) -> Result<Option<Org>, StoreError> {
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
        &self,
        org: &OrgId,
        sha256: &str,
        audit: &AuditEntry,
    ) -> Result<(), StoreError> {
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

    async fn create_member(&self, member: &Member, audit: &AuditEntry) -> Result<(), StoreError> {
        let (m, a) = (member.clone(), audit.clone());
        self.write(move |tx| {
            let inserted = tx.execute(
                "INSERT INTO members
                 (org_id, user_id, role, created_at, updated_at, profile, user_name_key, version)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                params![
                    m.org.as_str(),
                    m.user.as_str(),
                    m.role.as_str(),
                    m.created_at.millis(),
                    m.updated_at.millis(),
                    profile_json(&m)?,
                    m.profile.as_ref().map(|p| p.user_name_key()),
                    m.version,
                ],
            );
            match inserted {
                Ok(_) => insert_audit(tx, &a),
                Err(e) if is_unique_violation(&e) => Err(StoreError::AlreadyExists),
                Err(e) => Err(backend(e)),
            }
        })
        .await
    }

    async fn get_member(&self, org: &OrgId, user: &UserId) -> Result<Option<Member>, StoreError> {
        let (o, u) = (org.clone(), user.clone());
        self.read(move |c| {
            c.query_row(
                &format!("SELECT {MEMBER_COLUMNS} FROM members WHERE org_id = ?1 AND user_id = ?2"),
                [o.as_str(), u.as_str()],
                member_from,
            )
            .optional()
        })
        .await
    }

    async fn find_member_by_user_name(
        &self,
        org: &OrgId,
        key: &str,
    ) -> Result<Option<Member>, StoreError> {
        let (o, k) = (org.clone(), key.to_owned());
        self.read(move |c| {
            c.query_row(
                &format!(
                    "SELECT {MEMBER_COLUMNS} FROM members WHERE org_id = ?1 AND user_name_key = ?2"
                ),
                [o.as_str(), k.as_str()],
                member_from,
            )
            .optional()
        })
        .await
    }

    async fn list_members(&self, org: &OrgId) -> Result<Vec<Member>, StoreError> {
        let o = org.clone();
        self.read(move |c| {
            let mut stmt = c.prepare_cached(&format!(
                "SELECT {MEMBER_COLUMNS} FROM members WHERE org_id = ?1 ORDER BY user_id"
            ))?;
            let rows = stmt.query_map([o.as_str()], member_from)?;
            rows.collect()
        })
        .await
    }

    async fn update_member(
        &self,
        previous: &Member,
        next: &Member,
        audit: &AuditEntry,
    ) -> Result<(), StoreError> {
        let (p, m, a) = (previous.clone(), next.clone(), audit.clone());
        self.write(move |tx| {
            let updated = tx.execute(
                "UPDATE members SET role = ?3, updated_at = ?4, profile = ?5, user_name_key = ?6,
                        version = ?7
                 WHERE org_id = ?1 AND user_id = ?2 AND version = ?8",
                params![
                    m.org.as_str(),
                    m.user.as_str(),
                    m.role.as_str(),
                    m.updated_at.millis(),
                    profile_json(&m)?,
                    m.profile.as_ref().map(|p| p.user_name_key()),
                    m.version,
                    p.version,
                ],
            );
            match updated {
                Ok(1) => insert_audit(tx, &a),
                Ok(_) => {
                    let exists: bool = tx
                        .query_row(
                            "SELECT EXISTS (SELECT 1 FROM members WHERE org_id = ?1 AND user_id = ?2)",
                            [m.org.as_str(), m.user.as_str()],
                            |r| r.get(0),
                        )
                        .map_err(backend)?;
                    Err(if exists {
                        StoreError::Conflict
                    } else {
                        StoreError::Gone
                    })
                }
                Err(e) if is_unique_violation(&e) => Err(StoreError::AlreadyExists),
                Err(e) => Err(backend(e)),
            }
        })
        .await
    }

    async fn remove_member(
        &self,
        org: &OrgId,
        user: &UserId,
        audit: &AuditEntry,
    ) -> Result<bool, StoreError> {
        let (o, u, a) = (org.clone(), user.clone(), audit.clone());
        self.write(move |tx| {
            let p = [o.as_str(), u.as_str()];
            let n = tx
                .execute("DELETE FROM members WHERE org_id = ?1 AND user_id = ?2", p)
                .map_err(backend)?;
            if n == 0 {
                return Ok(false);
            }
            tx.execute(
                "DELETE FROM member_data WHERE org_id = ?1 AND user_id = ?2",
                p,
            )
            .map_err(backend)?;
            insert_audit(tx, &a)?;
            Ok(true)
        })
        .await
    }

    async fn put_member_data(
        &self,
        org: &OrgId,
        user: &UserId,
        data: &MemberData,
    ) -> Result<(), StoreError> {
        let (o, u, d) = (org.clone(), user.clone(), data.clone());
        self.write(move |tx| {
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
            Ok(())
        })
        .await
    }

    async fn list_member_data(
        &self,
        org: &OrgId,
        user: &UserId,
    ) -> Result<Vec<MemberData>, StoreError> {
        let (o, u) = (org.clone(), user.clone());
        self.read(move |c| {
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
        })
        .await
    }

    async fn put_integration(
        &self,
        org: &OrgId,
        integration: &IntegrationConfig,
        audit: &AuditEntry,
    ) -> Result<(), StoreError> {
        let (o, i, a) = (org.clone(), integration.clone(), audit.clone());
        let config = serde_json::to_string(&i).map_err(backend)?;
        self.write(move |tx| {
            tx.execute(
                "INSERT INTO integrations (org_id, name, config) VALUES (?1, ?2, ?3)
                 ON CONFLICT (org_id, name) DO UPDATE SET config = excluded.config",
                params![o.as_str(), i.name, config],
            )
            .map_err(backend)?;
            insert_audit(tx, &a)
        })
        .await
    }

    async fn list_integrations(&self, org: &OrgId) -> Result<Vec<IntegrationConfig>, StoreError> {
        let o = org.clone();
        let configs: Vec<String> = self
            .read(move |c| {
                let mut stmt = c.prepare_cached(
                    "SELECT config FROM integrations WHERE org_id = ?1 ORDER BY name",
                )?;
                let rows = stmt.query_map([o.as_str()], |r| r.get(0))?;
                rows.collect()
            })
            .await?;
        configs
            .iter()
            .map(|c| serde_json::from_str(c).map_err(backend))
            .collect()
    }

    async fn remove_integration(
        &self,
        org: &OrgId,
        name: &str,
        audit: &AuditEntry,
    ) -> Result<bool, StoreError> {
        let (o, n, a) = (org.clone(), name.to_owned(), audit.clone());
        self.write(move |tx| {
            let removed = tx
                .execute(
                    "DELETE FROM integrations WHERE org_id = ?1 AND name = ?2",
                    params![o.as_str(), n],
                )
                .map_err(backend)?;
            if removed == 0 {
                return Ok(false);
            }
            insert_audit(tx, &a)?;
            Ok(true)
        })
        .await
    }

    async fn list_audit(&self, org: &OrgId, limit: usize) -> Result<Vec<AuditEntry>, StoreError> {
        let o = org.clone();
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.read(move |c| {
            let mut stmt = c.prepare_cached(
                "SELECT at, id, actor, action, target FROM audit WHERE org_id = ?1
                 ORDER BY at DESC, id DESC LIMIT ?2",
            )?;
            let rows = stmt.query_map(params![o.as_str(), limit], |r| {
                Ok(AuditEntry {
                    org: o.clone(),
                    at: Timestamp(r.get(0)?),
                    id: r.get(1)?,
                    actor: text_parse(r.get(2)?)?,
                    action: text_parse(r.get(3)?)?,
                    target: r.get(4)?,
                })
            })?;
            rows.collect()
        })
        .await
    }

    async fn create_session(&self, session: &Session, events: &[Event]) -> Result<(), StoreError> {
        let (s, events) = (session.clone(), events.to_vec());
        self.write(move |tx| {
            let k = &s.key;
            let inserted = tx
                .execute(
                    "INSERT OR IGNORE INTO sessions
                     (user_id, org_id, session_id, title, created_at, updated_at, cancelled_at, run_id,
                      pending, next_seq, version, deleting, turn)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
                    params![
                        k.user.as_str(),
                        k.org.as_str(),
                        k.session.as_str(),
                        s.title,
                        s.created_at.millis(),
                        s.updated_at.millis(),
                        s.cancelled_at.map(Timestamp::millis),
                        s.run_id.as_ref().map(RunId::as_str),
                        pending_json(&s),
                        s.next_seq,
                        s.version,
                        s.deleting,
                        turn_json(&s)
                    ],
                )
                .map_err(backend)?;
            if inserted == 0 {
                return Err(StoreError::AlreadyExists);
            }
            insert_events(tx, k, &events)
        })
        .await
    }

    async fn get_session(&self, key: &SessionKey) -> Result<Option<Session>, StoreError> {
        let k = key.clone();
        self.read(move |c| {
            c.query_row(
                "SELECT title, created_at, updated_at, cancelled_at, run_id, pending, next_seq, version,
                 deleting, turn FROM sessions WHERE user_id = ?1 AND org_id = ?2 AND session_id = ?3",
                [k.user.as_str(), k.org.as_str(), k.session.as_str()],
                |r| session_from(k.clone(), r),
            )
            .optional()
        })
        .await
    }

    async fn commit_session(
        &self,
        session: &Session,
        expected_version: u64,
        events: &[Event],
        charge: Option<&Charge>,
    ) -> Result<(), StoreError> {
        let (s, events, charge) = (session.clone(), events.to_vec(), charge.cloned());
        self.write(move |tx| {
            let k = &s.key;
            let updated = tx
                .execute(
                    "UPDATE sessions SET title = ?4, updated_at = ?5, cancelled_at = ?6, run_id = ?7,
                     pending = ?8, next_seq = ?9, version = ?10, deleting = ?12, turn = ?13
                     WHERE user_id = ?1 AND org_id = ?2 AND session_id = ?3 AND version = ?11",
                    params![
                        k.user.as_str(),
                        k.org.as_str(),
                        k.session.as_str(),
                        s.title,
                        s.updated_at.millis(),
                        s.cancelled_at.map(Timestamp::millis),
                        s.run_id.as_ref().map(RunId::as_str),
                        pending_json(&s),
                        s.next_seq,
                        s.version,
                        expected_version,
                        s.deleting,
                        turn_json(&s)
                    ],
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
                return Err(if exists { StoreError::Conflict } else { StoreError::Gone });
            }
            insert_events(tx, k, &events)?;
            if let Some(charge) = charge {
                let usage = read_usage(tx, &k.org, &charge.month).map_err(backend)?;
                let after = Usage { cost_micros: usage.cost_micros.saturating_add(charge.micros), ..usage };
                write_usage(tx, &k.org, &charge.month, after).map_err(backend)?;
            }
            Ok(())
        })
        .await
    }

    async fn list_events(
        &self,
        key: &SessionKey,
        after: u64,
        limit: usize,
    ) -> Result<Vec<Event>, StoreError> {
        let k = key.clone();
        self.read(move |c| {
            let mut stmt = c.prepare_cached(
                "SELECT seq, kind, payload, occurred_at FROM events
                 WHERE user_id = ?1 AND org_id = ?2 AND session_id = ?3 AND seq > ?4
                 ORDER BY seq LIMIT ?5",
            )?;
            let rows = stmt.query_map(
                params![
                    k.user.as_str(),
                    k.org.as_str(),
                    k.session.as_str(),
                    after,
                    limit as i64
                ],
                event_from,
            )?;
            rows.collect()
        })
        .await
    }

    async fn list_sessions(
        &self,
        user: &UserId,
        org: &OrgId,
        limit: usize,
    ) -> Result<Vec<SessionSummary>, StoreError> {
        let (u, o) = (user.clone(), org.clone());
        self.read(move |c| {
            let mut stmt = c.prepare_cached(
                "SELECT session_id, title, updated_at FROM sessions
                 WHERE user_id = ?1 AND org_id = ?2 AND deleting = 0
                 ORDER BY updated_at DESC, session_id DESC LIMIT ?3",
            )?;
            let rows = stmt.query_map(params![u.as_str(), o.as_str(), limit as i64], |r| {
                Ok(SessionSummary {
                    id: SessionId::parse(&r.get::<_, String>(0)?).map_err(conversion)?,
                    title: r.get(1)?,
                    updated_at: Timestamp(r.get(2)?),
                })
            })?;
            rows.collect()
        })
        .await
    }

    async fn delete_session(&self, key: &SessionKey) -> Result<bool, StoreError> {
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

    async fn deleting_sessions(&self, limit: usize) -> Result<Vec<SessionKey>, StoreError> {
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

    async fn get_rate_window(&self, key: &str) -> Result<RateWindow, StoreError> {
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
        &self,
        key: &str,
        hits: &[Timestamp],
        expected_version: u64,
        expires_at: Timestamp,
    ) -> Result<(), StoreError> {
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
        &self,
        org: &OrgId,
        month: &str,
        quota: Option<u64>,
        cap_micros: Option<u64>,
    ) -> Result<Result<Usage, UsageRefused>, StoreError> {
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

    async fn get_usage(&self, org: &OrgId, month: &str) -> Result<Usage, StoreError> {
        let (o, m) = (org.clone(), month.to_owned());
        self.read(move |c| read_usage(c, &o, &m)).await
    }
}

fn read_usage(c: &Connection, org: &OrgId, month: &str) -> rusqlite::Result<Usage> {
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

fn write_usage(c: &Connection, org: &OrgId, month: &str, u: Usage) -> rusqlite::Result<()> {
    c.execute(
        "INSERT OR REPLACE INTO usage (org_id, month, queries, cost_micros) VALUES (?1, ?2, ?3, ?4)",
        params![org.as_str(), month, u.queries, u.cost_micros],
    )
    .map(|_| ())
}
