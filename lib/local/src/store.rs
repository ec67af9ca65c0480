//! `LocalStore`: the store the local service runs on, the embedded SQLite file by default or a
//! DynamoDB table (real, or a stand-in on loopback) with `serve --store dynamodb`.

use std::ops::Deref;
use std::sync::Arc;

use knowledge_core::ids::{RunId, SessionKey};
use knowledge_core::ports::{Store, StoreError};

use crate::SqliteStore;

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

    /// The runs a previous process left in flight, to be resumed. Only the embedded store keeps
    /// an index of them: on DynamoDB, Step Functions owns runs, and finding them here would take
    /// a table scan, so a local process on DynamoDB that stops mid-turn leaves that session's
    /// run claimed (see docs/deploy.md).
    pub async fn running_sessions(&self) -> Result<Vec<(SessionKey, RunId)>, StoreError> {
        match self {
            Self::Sqlite(s) => s.running_sessions().await,
            #[cfg(feature = "dynamodb")]
            Self::Dynamo(_) => Ok(Vec::new()),
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
