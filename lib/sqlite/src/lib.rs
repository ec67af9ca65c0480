//! `SqliteStore`: the storage ports on an embedded SQLite file (WAL, `synchronous=FULL`), so the
//! local service survives restarts and a `kill -9` loses nothing it acknowledged.
//!
//! One writer connection behind a mutex serialises writes (each in an immediate transaction);
//! readers use a small pool and never block the writer. Blocking calls run on tokio's blocking
//! pool. Other processes (the admin commands) may use the same file at the same time.
//!
//! One module per storage role ([`OrgStore`](knowledge_core::ports::OrgStore), and so on),
//! each with the row codec of its tables; the schema and its migration live in `schema`.

mod batch;
mod directory;
mod documents;
mod grants;
mod groups;
mod limits;
mod orgs;
mod schema;
mod sessions;
mod tail;
mod tally;
mod tickets;

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use knowledge_core::ids::{OrgId, RunId, SessionId, SessionKey, UserId};
use knowledge_core::ports::{BackendError, StoreError, StoreResult};
use rusqlite::config::DbConfig;
use rusqlite::{Connection, OpenFlags, TransactionBehavior};

use crate::schema::{SCHEMA, migrate};

/// Idle reader connections kept open at most.
const MAX_IDLE_READERS: usize = 8;

struct Inner {
    path: PathBuf,
    writer: Mutex<Connection>,
    readers: Mutex<Vec<Connection>>,
    tails: tail::Tails,
}

/// The embedded store. Cheap to clone; clones share connections.
#[derive(Clone)]
pub struct SqliteStore {
    inner: Arc<Inner>,
}

fn backend(e: impl Into<BackendError>) -> StoreError {
    StoreError::backend(e)
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
    // Plans must not depend on bound values: otherwise SQLite expires a cached statement each
    // time one of its range parameters is bound again (`seq > ?`, `LIMIT ?`), and every poll
    // would parse its query anew.
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
    Ok(conn)
}

impl SqliteStore {
    /// Opens (creating when absent) the database `store.db` in `dir`.
    pub fn open(dir: &Path) -> StoreResult<Self> {
        std::fs::create_dir_all(dir).map_err(backend)?;
        let path = dir.join("store.db");
        let writer = open_connection(&path).map_err(backend)?;
        writer.execute_batch(SCHEMA).map_err(backend)?;
        migrate(&writer).map_err(backend)?;
        let tails = tail::Tails::open(&path).map_err(backend)?;
        Ok(Self {
            inner: Arc::new(Inner {
                path,
                writer: Mutex::new(writer),
                readers: Mutex::new(Vec::new()),
                tails,
            }),
        })
    }

    /// Runs `f` on a reader connection on the blocking pool.
    async fn read<T, F>(&self, f: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    {
        let inner = self.inner.clone();
        let read = tokio::task::spawn_blocking(move || {
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
        });
        traced(read, "read").await.map_err(backend)?
    }

    /// Runs `f` in an immediate transaction on the writer connection; commits when it returns
    /// `Ok`, rolls back otherwise.
    async fn write<T, F>(&self, f: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&rusqlite::Transaction<'_>) -> StoreResult<T> + Send + 'static,
    {
        let inner = self.inner.clone();
        let write = tokio::task::spawn_blocking(move || {
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
        });
        traced(write, "write").await.map_err(backend)?
    }

    /// Sessions whose run was in flight when the process stopped, to be resumed at start-up.
    pub async fn running_sessions(&self) -> StoreResult<Vec<(SessionKey, RunId)>> {
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
}

pub(crate) fn conversion(e: impl std::error::Error + Send + Sync + 'static) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Text, Box::new(e))
}

pub(crate) fn text_parse<T: std::str::FromStr<Err = String>>(s: String) -> rusqlite::Result<T> {
    s.parse::<T>()
        .map_err(|e| conversion(std::io::Error::other(e)))
}

pub(crate) fn key_from(user: String, org: String, session: String) -> rusqlite::Result<SessionKey> {
    Ok(SessionKey {
        user: UserId::parse(&user).map_err(conversion)?,
        org: OrgId::parse(&org).map_err(conversion)?,
        session: SessionId::parse(&session).map_err(conversion)?,
    })
}

/// The row counts the conformance suite checks deletes by.
#[cfg(feature = "testing")]
mod testing {
    use knowledge_core::ids::SessionKey;
    use knowledge_core::ports::{StoreResult, StoredRows};
    use rusqlite::params;

    use crate::SqliteStore;

    #[async_trait::async_trait]
    impl StoredRows for SqliteStore {
        async fn rows_for(&self, key: &SessionKey) -> StoreResult<(u64, u64)> {
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
}

/// `request`, within a span of the store's (`sqlite read`, `sqlite write`) while traces are
/// on: the trace's store requests, as the AWS SDK's spans are on DynamoDB.
async fn traced<T>(request: impl Future<Output = T>, operation: &'static str) -> T {
    if !knowledge_core::trace::enabled() {
        return request.await;
    }
    let span = knowledge_core::trace_span!(
        "store",
        otel.name = format!("sqlite {operation}"),
        otel.kind = "client",
        db.system.name = "sqlite",
        db.operation.name = operation,
    );
    tracing::Instrument::instrument(request, span).await
}
