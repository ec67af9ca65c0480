//! `LocalStore`: the store the local service runs on, the embedded SQLite file by default or a
//! DynamoDB table (real, or a stand-in on loopback) with `serve --store dynamodb`.

use std::ops::Deref;
use std::sync::Arc;

use knowledge_core::ids::SessionKey;
use knowledge_core::ports::{Store, StoreError};

use crate::SqliteStore;

/// The most runs a restart looks through for its own on a shared table.
pub const OWN_RUNS_LIMIT: usize = 10_000;

#[derive(Clone)]
pub enum LocalStore {
    Sqlite(SqliteStore),
    #[cfg(feature = "dynamodb")]
    Dynamo(knowledge_dynamo::DynamoStore),
}

impl Deref for LocalStore {
    type Target = dyn Store;

    fn deref(&self) -> &(dyn Store + 'static) {
        match self {
            Self::Sqlite(s) => s,
            #[cfg(feature = "dynamodb")]
            Self::Dynamo(d) => d,
        }
    }
}

impl LocalStore {
    /// The store as the use cases take it.
    pub fn shared(&self) -> Arc<dyn Store> {
        match self {
            Self::Sqlite(s) => Arc::new(s.clone()),
            #[cfg(feature = "dynamodb")]
            Self::Dynamo(d) => Arc::new(d.clone()),
        }
    }

    /// The runs a previous process of this instance left in flight, whose executions (named
    /// `<prefix>:…`) are therefore dead. The embedded store is one process's: every run in it.
    /// A DynamoDB table may be served by other processes too: the runs in its index of live
    /// claims (at most [`OWN_RUNS_LIMIT`]) whose claim names an execution of this instance,
    /// bound to it or handed over by it, and those whose first or revived execution never
    /// bound them (the process that started it died first). Another live process could be a
    /// moment from binding such a claim: resuming it then costs that process's execution,
    /// which finds the claim moved and exits; the claim rules still let one answer.
    pub async fn own_runs(&self, prefix: &str) -> Result<Vec<SessionKey>, StoreError> {
        match self {
            Self::Sqlite(s) => Ok(s
                .running_sessions()
                .await?
                .into_iter()
                .map(|(k, _)| k)
                .collect()),
            #[cfg(feature = "dynamodb")]
            Self::Dynamo(d) => {
                use knowledge_core::domain::ExecClaim;
                use knowledge_core::ports::SessionStore;
                let every = knowledge_core::clock::Timestamp(i64::MAX / 4);
                let mut own = Vec::new();
                for key in d.stale_runs(every, OWN_RUNS_LIMIT).await? {
                    let claim = d.get_session(&key).await?.and_then(|s| s.exec);
                    let mine =
                        |id: &Option<String>| id.as_deref().is_some_and(|i| i.starts_with(prefix));
                    let never_bound = |c: &ExecClaim| c.id.is_none() && c.from.is_none();
                    if claim.is_some_and(|c| mine(&c.id) || mine(&c.from) || never_bound(&c)) {
                        own.push(key);
                    }
                }
                Ok(own)
            }
        }
    }

    /// How many session records and events are stored under `key`.
    #[cfg(feature = "testing")]
    pub async fn rows_for(&self, key: &SessionKey) -> Result<(u64, u64), StoreError> {
        match self {
            Self::Sqlite(s) => knowledge_core::ports::StoredRows::rows_for(s, key).await,
            #[cfg(feature = "dynamodb")]
            Self::Dynamo(d) => knowledge_core::ports::StoredRows::rows_for(d, key).await,
        }
    }

    /// `sqlite` or `dynamodb`, for messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Sqlite(_) => "sqlite",
            #[cfg(feature = "dynamodb")]
            Self::Dynamo(_) => "dynamodb",
        }
    }
}
