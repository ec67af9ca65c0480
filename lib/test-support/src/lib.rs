//! What the service's HTTP tests share, in process (`lib/assembly/tests/http`) and over a socket
//! (`lib/local/tests/api`): the harnesses' core ([`harness`]: settings, cookies, users, the
//! wait for runs), the store they run on ([`stores`]: `KNOWLEDGE_TEST_STORE`, and the skip of
//! the DynamoDB cases when no moto runs), a client that speaks the interface, agents whose
//! timing the tests control, and the docs search as an integration with tools.

pub mod agents;
pub mod client;
pub mod documented;
pub mod harness;
pub mod oauth;
pub mod stores;

use std::sync::Arc;

use knowledge_core::adapters::integrations::FixedIntegrations;
use knowledge_core::ids::OrgId;
use knowledge_core::ports::Integrations;

pub use agents::{FailingAgent, GatedAgent, PricedAgent, UnreachableAgent};
pub use client::{Client, Network, Reply, SETTLE, Transport, User, WAIT, kinds};
pub use harness::{Basis, FAST, Harness, KEY};
pub use stores::{Opened, STORE_ENV, TestStore};

/// A docs folder indexed in memory and connected to the default organisation.
pub fn docs() -> Arc<dyn Integrations> {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("cancel.md"),
        "# Cancelling\n\nPOST the cancel endpoint to stop a running answer.\n\n\
         # Deleting\n\nDELETE the session to remove it for good.\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("limits.txt"),
        "Limits\n\nTen sessions a minute per user.\n",
    )
    .unwrap();
    let index = knowledge_docs::TantivyDocs::open(dir.path()).unwrap();
    Arc::new(
        FixedIntegrations::new().connect(OrgId::parse("org_default").unwrap(), Arc::new(index)),
    )
}

/// Single sign-on settings with a provider no test reaches, switched on or off: what SCIM needs
/// of an organisation.
pub fn sso_no_test_reaches(on: bool) -> knowledge_core::sso::SsoSettings {
    knowledge_core::sso::SsoSettings {
        issuer: "https://idp.example.com".into(),
        client_id: "knowledge".into(),
        client_secret: Some("secret".into()),
        enabled: on,
        ..Default::default()
    }
}
