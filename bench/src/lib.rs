//! What the benchmarks share: the real local service on a loopback port over a fresh store.

use std::sync::Arc;

use knowledge_assembly::Settings;
use knowledge_assembly::operator::Operator;
use knowledge_core::ids::{OrgId, UserId};
use knowledge_core::ports::{Agent, Integrations};
use knowledge_core::seal::Sealer;
use knowledge_http::cookie::CookieSigner;
use knowledge_local::{LocalService, LocalStore, SqliteStore};

/// The cookie-signing key of benchmark services.
pub const KEY: [u8; 32] = [7; 32];

/// A fresh store in a temporary directory (kept while the returned guard lives), with the
/// default organisation and its admin.
pub async fn fresh_store() -> (tempfile::TempDir, SqliteStore, OrgId, UserId) {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path()).unwrap();
    let (org, user) = Operator {
        store: std::sync::Arc::new(store.clone()),
    }
    .bootstrap()
    .await
    .unwrap()
    .expect("a fresh store has no default organisation yet");
    (dir, store, org, user)
}

/// The settings of a benchmark service at `origin`: its cookie key [`KEY`], a sealing key,
/// `agent`, and `integrations` as the fixed ones.
pub fn settings(
    origin: &str, agent: Arc<dyn Agent>, integrations: Arc<dyn Integrations>,
) -> Settings {
    Settings {
        cookie_signer: Some(Arc::new(CookieSigner::new(&KEY).unwrap())),
        sealer: Some(Arc::new(Sealer::new(&KEY).unwrap())),
        agent: Some(agent),
        fixed_integrations: integrations,
        identity_provider: Some(Arc::new(
            knowledge_oidc::OpenIdConnect::new(knowledge_egress::Egress::ANYWHERE).unwrap(),
        )),
        authorization_servers: Some(Arc::new(knowledge_oauth::HttpAuthorizationServers::new(
            knowledge_oauth::BoundedHttp::new(knowledge_egress::Egress::ANYWHERE).unwrap(),
        ))),
        ..Settings::new(origin)
    }
}

/// Serves the API over `store` on an ephemeral 127.0.0.1 port; returns the service and its base
/// URL, which is also the application origin.
pub async fn serve(
    store: &SqliteStore, agent: Arc<dyn Agent>, integrations: Arc<dyn Integrations>,
) -> (LocalService, String) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let service = LocalService::new(
        settings(&base, agent, integrations),
        LocalStore::Sqlite(store.clone()),
        "bench",
    )
    .unwrap();
    let server = service.clone();
    tokio::spawn(async move {
        server
            .serve(listener, Default::default(), std::future::pending())
            .await
    });
    (service, base)
}
