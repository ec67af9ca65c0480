//! The adapter's discovery against a fake provider: documents are cached per issuer and
//! fetched once for concurrent sign-ins, an admin's test always asks the provider, one slow
//! issuer holds up no other, and a provider that redirects, floods, names another issuer, fails
//! or is gone is unavailable.

mod fake;

use std::error::Error;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use fake::{CLIENT_ID, CLIENT_SECRET, Discovery, Fake, REDIRECT};
use knowledge_core::ports::{
    Authorization, IdentityDiscovery, IdentityError, IdentityProvider, OidcClient,
};
use knowledge_egress::Egress;
use knowledge_oidc::OpenIdConnect;

fn client(issuer: &str) -> OidcClient {
    OidcClient {
        issuer: issuer.to_owned(),
        client_id: CLIENT_ID.into(),
        client_secret: CLIENT_SECRET.into(),
        redirect_uri: REDIRECT.into(),
    }
}

/// The error and its causes, one after the other.
fn chain(e: &dyn Error) -> String {
    let mut out = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        out += &format!(": {c}");
        cause = c.source();
    }
    out
}

/// Asserts `result` is `Unavailable`, and returns what its causes tell.
#[track_caller]
fn unavailable(result: Result<Authorization, IdentityError>) -> String {
    match result {
        Err(e @ IdentityError::Unavailable(_)) => chain(&e),
        other => panic!("expected Unavailable, got {other:?}"),
    }
}

/// Discovery at `fake` in `mode`, by an adapter with nothing cached.
async fn authorize_with(fake: &Fake, mode: Discovery) -> Result<Authorization, IdentityError> {
    *fake.discovery.lock().unwrap() = mode;
    let oidc = OpenIdConnect::new(Egress::ANYWHERE).unwrap();
    oidc.authorize(&client(&fake.issuer)).await
}

#[tokio::test]
async fn discovery_is_fetched_once_for_many_sign_ins_and_again_for_an_admins_test() {
    let fake = Fake::start().await;
    let oidc = OpenIdConnect::new(Egress::ANYWHERE).unwrap();
    for _ in 0..3 {
        oidc.authorize(&client(&fake.issuer)).await.unwrap();
    }
    assert_eq!(fake.discovery_hits.load(Ordering::SeqCst), 1);
    assert_eq!(fake.jwks_hits.load(Ordering::SeqCst), 1);
    oidc.discover(&fake.issuer).await.unwrap();
    assert_eq!(fake.discovery_hits.load(Ordering::SeqCst), 2);
    assert_eq!(fake.jwks_hits.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn concurrent_sign_ins_of_one_issuer_share_one_discovery() {
    let fake = Fake::start().await;
    *fake.discovery_delay.lock().unwrap() = Duration::from_millis(500);
    let oidc = Arc::new(OpenIdConnect::new(Egress::ANYWHERE).unwrap());
    let sign_ins: Vec<_> = (0..5)
        .map(|_| {
            let (oidc, issuer) = (oidc.clone(), fake.issuer.clone());
            tokio::spawn(async move { oidc.authorize(&client(&issuer)).await })
        })
        .collect();
    for s in sign_ins {
        s.await.unwrap().unwrap();
    }
    assert_eq!(fake.discovery_hits.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn concurrent_sign_ins_share_the_failure_of_their_discovery() {
    let fake = Fake::start().await;
    *fake.discovery.lock().unwrap() = Discovery::Broken;
    *fake.discovery_delay.lock().unwrap() = Duration::from_millis(500);
    let oidc = Arc::new(OpenIdConnect::new(Egress::ANYWHERE).unwrap());
    let sign_ins: Vec<_> = (0..5)
        .map(|_| {
            let (oidc, issuer) = (oidc.clone(), fake.issuer.clone());
            tokio::spawn(async move { oidc.authorize(&client(&issuer)).await })
        })
        .collect();
    for s in sign_ins {
        let told = unavailable(s.await.unwrap());
        assert!(told.contains("500"), "{told}");
    }
    assert_eq!(fake.discovery_hits.load(Ordering::SeqCst), 1);
    // A later sign-in asks again, and gets through once the provider is back.
    *fake.discovery.lock().unwrap() = Discovery::Normal;
    *fake.discovery_delay.lock().unwrap() = Duration::ZERO;
    oidc.authorize(&client(&fake.issuer)).await.unwrap();
}

#[tokio::test]
async fn a_slow_issuer_holds_up_no_other_issuers_sign_ins() {
    let (slow, quick) = (Fake::start().await, Fake::start().await);
    *slow.discovery_delay.lock().unwrap() = Duration::from_secs(4);
    let oidc = Arc::new(OpenIdConnect::new(Egress::ANYWHERE).unwrap());
    let stuck = {
        let (oidc, issuer) = (oidc.clone(), slow.issuer.clone());
        tokio::spawn(async move { oidc.authorize(&client(&issuer)).await })
    };
    // Once the slow issuer's discovery is under way (at most a second later).
    for _ in 0..100 {
        if slow.discovery_hits.load(Ordering::SeqCst) == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(slow.discovery_hits.load(Ordering::SeqCst), 1);
    let quick_client = client(&quick.issuer);
    let quick_one = oidc.authorize(&quick_client);
    tokio::time::timeout(Duration::from_secs(2), quick_one)
        .await
        .expect("held up by the slow issuer")
        .unwrap();
    stuck.await.unwrap().unwrap();
}

#[tokio::test]
async fn a_redirect_from_the_discovery_endpoint_is_not_followed() {
    let fake = Fake::start().await;
    let told = unavailable(authorize_with(&fake, Discovery::Redirect).await);
    assert!(told.contains("307"), "{told}");
}

#[tokio::test]
async fn a_discovery_document_larger_than_the_limit_is_unavailable() {
    let fake = Fake::start().await;
    let told = unavailable(authorize_with(&fake, Discovery::Huge).await);
    assert!(told.contains("larger than"), "{told}");
}

#[tokio::test]
async fn an_endless_answer_is_cut_off_at_the_limit() {
    let issuer = fake::endless().await;
    let oidc = OpenIdConnect::new(Egress::ANYWHERE).unwrap();
    // Well within the client's time limit: the size limit is what ends it.
    let result = tokio::time::timeout(Duration::from_secs(3), oidc.authorize(&client(&issuer)))
        .await
        .expect("the answer was read for ever");
    let told = unavailable(result);
    assert!(told.contains("larger than"), "{told}");
}

#[tokio::test]
async fn a_discovery_document_naming_another_issuer_is_unavailable() {
    let fake = Fake::start().await;
    let told = unavailable(authorize_with(&fake, Discovery::OtherIssuer).await);
    assert!(told.contains("issuer"), "{told}");
}

#[tokio::test]
async fn an_unreachable_issuer_is_unavailable_for_sign_ins_and_for_an_admins_test() {
    let gone = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    let oidc = OpenIdConnect::new(Egress::ANYWHERE).unwrap();
    unavailable(oidc.authorize(&client(&gone)).await);
    let result = oidc.discover(&gone).await;
    assert!(
        matches!(result, Err(IdentityError::Unavailable(_))),
        "{result:?}"
    );
    let result = oidc.discover("not a url").await;
    assert!(
        matches!(result, Err(IdentityError::Unavailable(_))),
        "{result:?}"
    );
}
