//! The adapter against a fake provider that mints what a case asks for: a good token yields the
//! person with every claim; every token a real provider would not send (wrong audience, issuer
//! or nonce, expired, from the future, signed with another key or not at all) is refused; keys
//! are fetched again for an unknown key id; discovery is cached; a provider that redirects,
//! floods or is gone is unavailable.

mod fake;

use std::sync::atomic::Ordering;

use fake::{CLIENT_ID, CLIENT_SECRET, Discovery, Fake, Minting, REDIRECT};
use knowledge_core::ports::{IdentityError, IdentityProvider, OidcClient};
use knowledge_oidc::OpenIdConnect;
use serde_json::json;

fn client(fake: &Fake) -> OidcClient {
    OidcClient {
        issuer: fake.issuer.clone(),
        client_id: CLIENT_ID.into(),
        client_secret: CLIENT_SECRET.into(),
        redirect_uri: REDIRECT.into(),
    }
}

/// Starts a sign-in, has the fake approve it, and exchanges the code; the fake mints the
/// token `edit` makes of a good one (`None`: the good one).
async fn sign_in(
    oidc: &OpenIdConnect, fake: &Fake, edit: impl FnOnce(&mut Minting),
) -> Result<knowledge_core::ports::VerifiedIdentity, IdentityError> {
    let c = client(fake);
    let auth = oidc.authorize(&c).await.unwrap();
    assert!(auth.url.starts_with(&format!("{}/authorize?", fake.issuer)));
    let (code, nonce) = fake.approve(&auth.url);
    assert_eq!(nonce, auth.nonce);
    let mut minting = Minting {
        key: Some("first"),
        claims: fake.claims("ann-sub", &auth.nonce),
    };
    edit(&mut minting);
    fake.mint_next(minting);
    oidc.exchange(&c, &code, &auth.pkce_verifier, &auth.nonce)
        .await
}

fn assert_rejected(result: Result<knowledge_core::ports::VerifiedIdentity, IdentityError>) {
    assert!(
        matches!(result, Err(IdentityError::Rejected(_))),
        "{result:?}"
    );
}

#[tokio::test]
async fn a_good_token_yields_the_issuer_the_subject_and_every_claim() {
    let fake = Fake::start().await;
    let oidc = OpenIdConnect::new().unwrap();
    let who = sign_in(&oidc, &fake, |_| {}).await.unwrap();
    assert_eq!(
        (who.issuer.as_str(), who.subject.as_str()),
        (fake.issuer.as_str(), "ann-sub")
    );
    assert_eq!(who.claims["upn"], json!("ANN@corp.example.com"));
    assert_eq!(
        who.claims["preferred_username"],
        json!("ann@corp.example.com")
    );
    assert_eq!(who.claims["email"], json!("ann@example.com"));
}

#[tokio::test]
async fn the_authorization_url_asks_for_a_code_with_pkce_state_nonce_and_the_scopes() {
    let fake = Fake::start().await;
    let oidc = OpenIdConnect::new().unwrap();
    let auth = oidc.authorize(&client(&fake)).await.unwrap();
    let url = reqwest::Url::parse(&auth.url).unwrap();
    let q: std::collections::HashMap<_, _> = url.query_pairs().into_owned().collect();
    assert_eq!(q["state"], auth.state);
    assert_eq!(q["nonce"], auth.nonce);
    assert_eq!(q["redirect_uri"], REDIRECT);
    let scopes: Vec<&str> = q["scope"].split(' ').collect();
    assert!(
        ["openid", "email", "profile"]
            .iter()
            .all(|s| scopes.contains(s)),
        "{scopes:?}"
    );
    assert!(auth.state.len() >= 16 && auth.nonce.len() >= 16 && auth.pkce_verifier.len() >= 43);
    let again = oidc.authorize(&client(&fake)).await.unwrap();
    assert_ne!((again.state, again.nonce), (auth.state, auth.nonce));
}

#[tokio::test]
async fn tokens_for_another_audience_issuer_or_nonce_are_refused() {
    let fake = Fake::start().await;
    let oidc = OpenIdConnect::new().unwrap();
    assert_rejected(sign_in(&oidc, &fake, |m| m.claims["aud"] = json!("another-client")).await);
    assert_rejected(
        sign_in(&oidc, &fake, |m| {
            m.claims["aud"] = json!([CLIENT_ID, "other"])
        })
        .await,
    );
    let issuer = format!("{}/", fake.issuer);
    assert_rejected(sign_in(&oidc, &fake, |m| m.claims["iss"] = json!(issuer)).await);
    assert_rejected(sign_in(&oidc, &fake, |m| m.claims["nonce"] = json!("replayed")).await);
}

#[tokio::test]
async fn expired_tokens_and_tokens_from_the_future_are_refused_within_a_minute_of_skew() {
    let fake = Fake::start().await;
    let oidc = OpenIdConnect::new().unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    assert_rejected(sign_in(&oidc, &fake, |m| m.claims["exp"] = json!(now - 120)).await);
    assert_rejected(sign_in(&oidc, &fake, |m| m.claims["iat"] = json!(now + 600)).await);
    assert_rejected(sign_in(&oidc, &fake, |m| m.claims["iat"] = json!(now - 3600)).await);
    // Within the skew allowed: just expired, or issued a moment ahead.
    sign_in(&oidc, &fake, |m| m.claims["exp"] = json!(now - 10))
        .await
        .unwrap();
    sign_in(&oidc, &fake, |m| m.claims["iat"] = json!(now + 10))
        .await
        .unwrap();
}

#[tokio::test]
async fn tokens_signed_with_an_unpublished_key_or_not_signed_are_refused() {
    let fake = Fake::start().await;
    let oidc = OpenIdConnect::new().unwrap();
    // Signed by `second` with `first`'s key id: the signature does not verify.
    assert_rejected(sign_in(&oidc, &fake, |m| m.key = Some("second-as-first")).await);
    assert_rejected(sign_in(&oidc, &fake, |m| m.key = None).await);
}

#[tokio::test]
async fn a_rotated_key_is_fetched_once_and_then_verifies() {
    let fake = Fake::start().await;
    let oidc = OpenIdConnect::new().unwrap();
    sign_in(&oidc, &fake, |_| {}).await.unwrap();
    let fetched = fake.jwks_hits.load(Ordering::SeqCst);
    *fake.published.lock().unwrap() = vec!["first", "second"];
    let rotated = sign_in(&oidc, &fake, |m| m.key = Some("second")).await;
    assert_eq!(rotated.unwrap().subject, "ann-sub");
    assert_eq!(fake.jwks_hits.load(Ordering::SeqCst), fetched + 1);
}

#[tokio::test]
async fn unknown_key_ids_make_the_keys_be_fetched_at_most_once_per_interval() {
    let fake = Fake::start().await;
    let oidc = OpenIdConnect::new().unwrap();
    sign_in(&oidc, &fake, |_| {}).await.unwrap();
    let fetched = fake.jwks_hits.load(Ordering::SeqCst);
    // `second` is not published: the first unknown key id fetches the keys again, in vain.
    assert_rejected(sign_in(&oidc, &fake, |m| m.key = Some("second")).await);
    assert_eq!(fake.jwks_hits.load(Ordering::SeqCst), fetched + 1);
    // A flood of them within the interval does not reach the provider, even once the key is
    // published: it is picked up at the next fetch.
    *fake.published.lock().unwrap() = vec!["first", "second"];
    for _ in 0..3 {
        assert_rejected(sign_in(&oidc, &fake, |m| m.key = Some("second")).await);
    }
    assert_eq!(fake.jwks_hits.load(Ordering::SeqCst), fetched + 1);
}

#[tokio::test]
async fn discovery_is_cached_across_sign_ins() {
    let fake = Fake::start().await;
    let oidc = OpenIdConnect::new().unwrap();
    for _ in 0..3 {
        sign_in(&oidc, &fake, |_| {}).await.unwrap();
    }
    assert_eq!(fake.discovery_hits.load(Ordering::SeqCst), 1);
    // An admin's test of the configuration always asks the provider.
    oidc.discover(&fake.issuer).await.unwrap();
    assert_eq!(fake.discovery_hits.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_refused_code_is_rejected() {
    let fake = Fake::start().await;
    let oidc = OpenIdConnect::new().unwrap();
    let c = client(&fake);
    let auth = oidc.authorize(&c).await.unwrap();
    let (code, _) = fake.approve(&auth.url);
    let wrong_verifier = "x".repeat(64);
    assert_rejected(oidc.exchange(&c, &code, &wrong_verifier, &auth.nonce).await);
    // Used up by the attempt, the code does not work with the right verifier either.
    assert_rejected(
        oidc.exchange(&c, &code, &auth.pkce_verifier, &auth.nonce)
            .await,
    );
    let mut wrong_secret = c.clone();
    wrong_secret.client_secret = "guess".into();
    let (code, _) = fake.approve(&auth.url);
    assert_rejected(
        oidc.exchange(&wrong_secret, &code, &auth.pkce_verifier, &auth.nonce)
            .await,
    );
}

#[tokio::test]
async fn a_provider_that_redirects_floods_or_is_gone_is_unavailable() {
    let fake = Fake::start().await;
    for mode in [Discovery::Redirect, Discovery::Huge] {
        *fake.discovery.lock().unwrap() = mode;
        let oidc = OpenIdConnect::new().unwrap();
        let result = oidc.authorize(&client(&fake)).await;
        assert!(
            matches!(result, Err(IdentityError::Unavailable(_))),
            "{result:?}"
        );
    }
    let gone = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    let oidc = OpenIdConnect::new().unwrap();
    let mut c = client(&fake);
    c.issuer = gone;
    let result = oidc.authorize(&c).await;
    assert!(
        matches!(result, Err(IdentityError::Unavailable(_))),
        "{result:?}"
    );
}
