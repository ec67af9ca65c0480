//! The storage ports' contract on the embedded SQLite store, a fresh file for each case.

use std::sync::Arc;

use knowledge_sqlite::SqliteStore;
use knowledge_store_tests::Tested;

async fn open() -> (Arc<dyn Tested>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path()).unwrap();
    (Arc::new(store), dir)
}

knowledge_store_tests::conformance!(open);
