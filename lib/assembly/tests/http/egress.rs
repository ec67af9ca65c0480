//! The outbound guard through the service: a listener on loopback counts every connection made
//! to it. A service that refuses private destinations (as on AWS) never connects to it, whether
//! an admin tests single sign-on or an integration there, or a member signs in through it; the
//! admin is told the rule. The same service allowing them (as locally) does connect.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use knowledge_core::adapters::agent::BuiltinAgent;
use knowledge_egress::Egress;
use reqwest::Method;
use serde_json::json;

use crate::support::{Api, Reply, Setup, admin};

/// A listener on 127.0.0.1 that counts connections and closes each at once.
async fn counting_listener() -> (u16, Arc<AtomicUsize>) {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = l.accept().await {
            seen.fetch_add(1, Ordering::SeqCst);
            drop(stream);
        }
    });
    (port, count)
}

async fn service(egress: Egress) -> Api {
    let mut setup = Setup::new(Arc::new(BuiltinAgent));
    setup.egress = egress;
    Api::start_setup(setup).await
}

/// Everything an admin or a member can make the service fetch at `port` on loopback, each
/// answer with what it is about.
async fn reach_for(api: &Api, port: u16) -> Vec<(String, Reply)> {
    let mut answers = Vec::new();
    for issuer in [
        format!("http://127.0.0.1:{port}"),
        format!("http://localhost:{port}"),
    ] {
        let r = admin(
            api,
            Method::POST,
            "/sso/test",
            Some(json!({ "issuer": issuer })),
        )
        .await;
        answers.push((format!("SSO test of {issuer}"), r));
    }
    let url = format!("http://localhost:{port}/mcp");
    let r = admin(
        api,
        Method::PUT,
        "/integrations/wiki",
        Some(json!({ "url": url })),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = admin(api, Method::POST, "/integrations/wiki/test", None).await;
    answers.push((format!("integration test of {url}"), r));
    // A member's sign-in through a provider there.
    let issuer = format!("http://localhost:{port}");
    let sso = json!({ "issuer": issuer, "clientId": "c", "clientSecret": "s", "enabled": true });
    let r = admin(api, Method::PUT, "/sso", Some(sso)).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let login = format!("/api/auth/login?org={}", api.user.org);
    answers.push(("a sign-in".into(), api.get(&login).await));
    answers
}

#[tokio::test]
async fn a_service_refusing_private_destinations_never_connects_to_one_an_admin_names() {
    let (port, connections) = counting_listener().await;
    let api = service(Egress::PUBLIC_ONLY).await;
    for (what, r) in reach_for(&api, port).await {
        assert_eq!(r.status, 400, "{what}: {}", r.body);
        assert_eq!(r.code(), "destination_refused", "{what}");
        let message = r.body["error"]["message"].as_str().unwrap();
        assert!(message.contains("a loopback address"), "{what}: {message}");
        assert!(
            message.contains("KNOWLEDGE_ALLOW_PRIVATE_DESTINATIONS"),
            "{what}: {message}"
        );
    }
    assert_eq!(
        connections.load(Ordering::SeqCst),
        0,
        "no connection was made"
    );
}

#[tokio::test]
async fn a_service_allowing_private_destinations_reaches_the_same_listener() {
    let (port, connections) = counting_listener().await;
    let api = service(Egress::ANYWHERE).await;
    for (what, r) in reach_for(&api, port).await {
        assert_eq!(r.status, 502, "{what}: {}", r.body);
    }
    assert!(
        connections.load(Ordering::SeqCst) >= 4,
        "each of them connected"
    );
}
