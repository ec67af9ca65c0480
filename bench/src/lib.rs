//! What the benchmarks share: the real local service on a loopback port over a fresh store.

use std::sync::Arc;

use knowledge_core::clock::SystemClock;
use knowledge_core::ids::{OrgId, UserId};
use knowledge_core::ports::{Agent, Integrations};
use knowledge_local::admin::Admin;
use knowledge_local::{LocalService, LocalStore, Parts, SqliteStore};

/// The cookie-signing key of benchmark services.
pub const KEY: [u8; 32] = [7; 32];

/// A fresh store in a temporary directory (kept while the returned guard lives), with the
/// default organisation and its admin.
pub async fn fresh_store() -> (tempfile::TempDir, SqliteStore, OrgId, UserId) {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path()).unwrap();
    let (org, user) = Admin { store: &store }
        .bootstrap()
        .await
        .unwrap()
        .expect("a fresh store has no default organisation yet");
    (dir, store, org, user)
}

/// Serves the API over `store` on an ephemeral 127.0.0.1 port; returns the service and its base
/// URL, which is also the application origin.
pub async fn serve(
    store: &SqliteStore,
    agent: Arc<dyn Agent>,
    integrations: Arc<dyn Integrations>,
) -> (LocalService, String) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let service = LocalService::new(Parts {
        store: LocalStore::Sqlite(store.clone()),
        agent,
        integrations,
        clock: Arc::new(SystemClock),
        signing_key: KEY.to_vec(),
        app_origin: base.clone(),
    })
    .unwrap();
    let server = service.clone();
    tokio::spawn(async move {
        server
            .serve(listener, Default::default(), std::future::pending())
            .await
    });
    (service, base)
}
