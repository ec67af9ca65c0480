//! The adapter's sign-in against a fake provider that mints what a case asks for: a good token
//! yields the person with every claim; every token a real provider would not send (wrong
//! audience, issuer or nonce, expired, from the future, signed with another key, with the client
//! secret or not at all) is refused; keys are fetched again, once, for an unknown key id.

mod fake;

use std::error::Error;
use std::sync::atomic::Ordering;

use fake::{CLIENT_ID, CLIENT_SECRET, Fake, Minting, REDIRECT, Signing, now};
use knowledge_core::ports::{IdentityError, IdentityProvider, OidcClient, VerifiedIdentity};
use knowledge_egress::Egress;
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
/// token `edit` makes of a good one.
async fn sign_in(
    oidc: &OpenIdConnect, fake: &Fake, edit: impl FnOnce(&mut Minting),
) -> Result<VerifiedIdentity, IdentityError> {
    let c = client(fake);
    let auth = oidc.authorize(&c).await.unwrap();
    let (code, nonce) = fake.approve(&auth.url);
    assert_eq!(nonce, auth.nonce);
    let mut minting = Minting {
        signing: Signing::Key("first"),
        claims: fake.claims("ann-sub", &auth.nonce),
    };
    edit(&mut minting);
    fake.mint_next(minting);
    oidc.exchange(&c, &code, None, &auth.pkce_verifier, &auth.nonce)
        .await
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

#[track_caller]
fn assert_rejected(result: Result<VerifiedIdentity, IdentityError>) {
    match result {
        Err(e @ IdentityError::Rejected(_)) => {
            assert!(!chain(&e).contains(CLIENT_SECRET), "{}", chain(&e));
        }
        other => panic!("expected Rejected, got {other:?}"),
    }
}

#[tokio::test]
async fn a_good_token_yields_the_issuer_the_subject_and_every_claim() {
    let fake = Fake::start().await;
    let oidc = OpenIdConnect::new(Egress::ANYWHERE).unwrap();
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
    assert_eq!(who.claims["name"], json!("Ann Example"));
    // Claims whose types bend the standard come through as the provider sent them.
    assert_eq!(who.claims["updated_at"], json!("2025-12-23T10:59:07.841Z"));
    assert_eq!(who.claims["sub"], json!("ann-sub"));
}

#[tokio::test]
async fn tokens_signed_with_es256_or_ps256_verify_too() {
    let fake = Fake::start().await;
    let oidc = OpenIdConnect::new(Egress::ANYWHERE).unwrap();
    for name in ["ec", "pss"] {
        let who = sign_in(&oidc, &fake, |m| m.signing = Signing::Key(name)).await;
        assert_eq!(who.unwrap().subject, "ann-sub", "{name}");
    }
}

#[tokio::test]
async fn the_authorization_url_asks_for_a_code_with_pkce_state_nonce_and_the_scopes() {
    let fake = Fake::start().await;
    let oidc = OpenIdConnect::new(Egress::ANYWHERE).unwrap();
    let auth = oidc.authorize(&client(&fake)).await.unwrap();
    assert!(auth.url.starts_with(&format!("{}/authorize?", fake.issuer)));
    let url = reqwest::Url::parse(&auth.url).unwrap();
    let q: std::collections::HashMap<_, _> = url.query_pairs().into_owned().collect();
    assert_eq!(q["response_type"], "code");
    assert_eq!(q["state"], auth.state);
    assert_eq!(q["nonce"], auth.nonce);
    assert_eq!(q["redirect_uri"], REDIRECT);
    assert_eq!(q["code_challenge_method"], "S256");
    let mut scopes: Vec<&str> = q["scope"].split(' ').collect();
    scopes.sort();
    assert_eq!(scopes, ["email", "openid", "profile"]);
    assert!(auth.state.len() >= 16 && auth.nonce.len() >= 16 && auth.pkce_verifier.len() >= 43);
    let again = oidc.authorize(&client(&fake)).await.unwrap();
    assert_ne!(again.state, auth.state);
    assert_ne!(again.nonce, auth.nonce);
    assert_ne!(again.pkce_verifier, auth.pkce_verifier);
}

#[tokio::test]
async fn a_token_for_another_audience_is_refused() {
    let fake = Fake::start().await;
    let oidc = OpenIdConnect::new(Egress::ANYWHERE).unwrap();
    assert_rejected(sign_in(&oidc, &fake, |m| m.claims["aud"] = json!("another-client")).await);
    // Ours among others it does not trust.
    assert_rejected(
        sign_in(&oidc, &fake, |m| {
            m.claims["aud"] = json!([CLIENT_ID, "other"])
        })
        .await,
    );
}

#[tokio::test]
async fn a_token_from_another_issuer_is_refused_even_one_slash_apart() {
    let fake = Fake::start().await;
    let oidc = OpenIdConnect::new(Egress::ANYWHERE).unwrap();
    let issuer = format!("{}/", fake.issuer);
    assert_rejected(sign_in(&oidc, &fake, |m| m.claims["iss"] = json!(issuer)).await);
    assert_rejected(
        sign_in(&oidc, &fake, |m| {
            m.claims["iss"] = json!("https://evil.example.com")
        })
        .await,
    );
}

#[tokio::test]
async fn a_token_with_another_nonce_is_refused() {
    let fake = Fake::start().await;
    let oidc = OpenIdConnect::new(Egress::ANYWHERE).unwrap();
    assert_rejected(sign_in(&oidc, &fake, |m| m.claims["nonce"] = json!("replayed")).await);
    let without = sign_in(&oidc, &fake, |m| {
        m.claims.as_object_mut().unwrap().remove("nonce");
    });
    assert_rejected(without.await);
}

#[tokio::test]
async fn an_expired_token_is_refused_beyond_a_minute_of_skew() {
    let fake = Fake::start().await;
    let oidc = OpenIdConnect::new(Egress::ANYWHERE).unwrap();
    assert_rejected(sign_in(&oidc, &fake, |m| m.claims["exp"] = json!(now() - 120)).await);
    sign_in(&oidc, &fake, |m| m.claims["exp"] = json!(now() - 10))
        .await
        .unwrap();
}

#[tokio::test]
async fn a_token_issued_in_the_future_or_long_ago_is_refused() {
    let fake = Fake::start().await;
    let oidc = OpenIdConnect::new(Egress::ANYWHERE).unwrap();
    assert_rejected(sign_in(&oidc, &fake, |m| m.claims["iat"] = json!(now() + 600)).await);
    assert_rejected(sign_in(&oidc, &fake, |m| m.claims["iat"] = json!(now() - 3600)).await);
    // Within the skew allowed: issued a moment ahead.
    sign_in(&oidc, &fake, |m| m.claims["iat"] = json!(now() + 10))
        .await
        .unwrap();
}

#[tokio::test]
async fn a_token_signed_with_another_key_is_refused() {
    let fake = Fake::start().await;
    let oidc = OpenIdConnect::new(Egress::ANYWHERE).unwrap();
    assert_rejected(sign_in(&oidc, &fake, |m| m.signing = Signing::SecondAsFirst).await);
}

#[tokio::test]
async fn an_unsigned_token_is_refused() {
    let fake = Fake::start().await;
    let oidc = OpenIdConnect::new(Egress::ANYWHERE).unwrap();
    assert_rejected(sign_in(&oidc, &fake, |m| m.signing = Signing::Unsigned).await);
}

#[tokio::test]
async fn a_token_signed_with_the_client_secret_is_refused() {
    let fake = Fake::start().await;
    let oidc = OpenIdConnect::new(Egress::ANYWHERE).unwrap();
    assert_rejected(sign_in(&oidc, &fake, |m| m.signing = Signing::ClientSecret).await);
}

#[tokio::test]
async fn a_rotated_key_is_fetched_once_and_then_verifies() {
    let fake = Fake::start().await;
    let oidc = OpenIdConnect::new(Egress::ANYWHERE).unwrap();
    sign_in(&oidc, &fake, |_| {}).await.unwrap();
    let fetched = fake.jwks_hits.load(Ordering::SeqCst);
    fake.published.lock().unwrap().push("second");
    let rotated = sign_in(&oidc, &fake, |m| m.signing = Signing::Key("second")).await;
    assert_eq!(rotated.unwrap().subject, "ann-sub");
    assert_eq!(fake.jwks_hits.load(Ordering::SeqCst), fetched + 1);
    // The new key is cached from then on.
    sign_in(&oidc, &fake, |m| m.signing = Signing::Key("second"))
        .await
        .unwrap();
    assert_eq!(fake.jwks_hits.load(Ordering::SeqCst), fetched + 1);
}

#[tokio::test]
async fn unknown_key_ids_make_the_keys_be_fetched_at_most_once_per_interval() {
    let fake = Fake::start().await;
    let oidc = OpenIdConnect::new(Egress::ANYWHERE).unwrap();
    sign_in(&oidc, &fake, |_| {}).await.unwrap();
    let fetched = fake.jwks_hits.load(Ordering::SeqCst);
    // `second` is not published: the first unknown key id fetches the keys again, in vain.
    assert_rejected(sign_in(&oidc, &fake, |m| m.signing = Signing::Key("second")).await);
    assert_eq!(fake.jwks_hits.load(Ordering::SeqCst), fetched + 1);
    // A flood of them within the interval does not reach the provider, even once the key is
    // published: it is picked up at the next fetch.
    fake.published.lock().unwrap().push("second");
    for _ in 0..3 {
        assert_rejected(sign_in(&oidc, &fake, |m| m.signing = Signing::Key("second")).await);
    }
    assert_eq!(fake.jwks_hits.load(Ordering::SeqCst), fetched + 1);
}

#[tokio::test]
async fn a_refused_code_verifier_or_client_secret_is_rejected_without_the_secret_in_the_error() {
    let fake = Fake::start().await;
    let oidc = OpenIdConnect::new(Egress::ANYWHERE).unwrap();
    let c = client(&fake);
    let auth = oidc.authorize(&c).await.unwrap();
    let (code, _) = fake.approve(&auth.url);
    let wrong_verifier = "x".repeat(64);
    assert_rejected(
        oidc.exchange(&c, &code, None, &wrong_verifier, &auth.nonce)
            .await,
    );
    // Used up by the attempt, the code does not work with the right verifier either.
    assert_rejected(
        oidc.exchange(&c, &code, None, &auth.pkce_verifier, &auth.nonce)
            .await,
    );
    let mut wrong_secret = c.clone();
    wrong_secret.client_secret = "guess".into();
    let (code, _) = fake.approve(&auth.url);
    let result = oidc
        .exchange(&wrong_secret, &code, None, &auth.pkce_verifier, &auth.nonce)
        .await;
    let e = result.unwrap_err();
    let told = chain(&e);
    assert!(
        told.contains("invalid_client") && !told.contains("guess"),
        "{told}"
    );
    assert!(matches!(e, IdentityError::Rejected(_)), "{told}");
}

#[tokio::test]
async fn a_provider_that_takes_client_secret_post_alone_gets_the_secret_in_the_body() {
    let fake = Fake::start().await;
    fake.post_only.store(true, Ordering::SeqCst);
    let oidc = OpenIdConnect::new(Egress::ANYWHERE).unwrap();
    let who = sign_in(&oidc, &fake, |_| {}).await.unwrap();
    assert_eq!(who.subject, "ann-sub");
}

#[tokio::test]
async fn a_token_endpoint_that_answers_a_server_error_is_unavailable() {
    let fake = Fake::start().await;
    let oidc = OpenIdConnect::new(Egress::ANYWHERE).unwrap();
    let c = client(&fake);
    let auth = oidc.authorize(&c).await.unwrap();
    let (code, _) = fake.approve(&auth.url);
    fake.token_broken.store(true, Ordering::SeqCst);
    let result = oidc
        .exchange(&c, &code, None, &auth.pkce_verifier, &auth.nonce)
        .await;
    assert!(
        matches!(result, Err(IdentityError::Unavailable(_))),
        "{result:?}"
    );
}

#[tokio::test]
async fn malformed_id_tokens_are_refusals_not_outages() {
    let fake = Fake::start().await;
    let oidc = OpenIdConnect::new(Egress::ANYWHERE).unwrap();
    for claim in ["exp", "iat", "sub"] {
        let result = sign_in(&oidc, &fake, |m| {
            m.claims.as_object_mut().unwrap().remove(claim);
        })
        .await;
        assert_rejected(result);
    }
    for signing in [
        Signing::UnsignedAs("None"),
        Signing::UnsignedAs("NONE"),
        Signing::NotAJwt,
    ] {
        assert_rejected(sign_in(&oidc, &fake, |m| m.signing = signing).await);
    }
}

/// Starts a sign-in and has the fake approve it; returns the client, the authorization and
/// the code.
async fn approved(
    oidc: &OpenIdConnect, fake: &Fake,
) -> (OidcClient, knowledge_core::ports::Authorization, String) {
    let c = client(fake);
    let auth = oidc.authorize(&c).await.unwrap();
    let (code, _) = fake.approve(&auth.url);
    (c, auth, code)
}

#[tokio::test]
async fn an_iss_of_another_issuer_is_refused_before_the_code_is_sent() {
    let fake = Fake::start().await;
    let oidc = OpenIdConnect::new(Egress::ANYWHERE).unwrap();
    let (c, auth, code) = approved(&oidc, &fake).await;
    let other = format!("{}/", fake.issuer);
    let result = oidc
        .exchange(&c, &code, Some(&other), &auth.pkce_verifier, &auth.nonce)
        .await;
    assert_rejected(result);
    assert_eq!(fake.token_hits.load(Ordering::SeqCst), 0);
    let who = oidc
        .exchange(
            &c,
            &code,
            Some(&fake.issuer),
            &auth.pkce_verifier,
            &auth.nonce,
        )
        .await;
    assert_eq!(who.unwrap().subject, "ann-sub");
}

#[tokio::test]
async fn a_response_without_iss_is_refused_where_the_provider_says_it_always_sends_one() {
    let fake = Fake::start().await;
    fake.iss_supported.store(true, Ordering::SeqCst);
    let oidc = OpenIdConnect::new(Egress::ANYWHERE).unwrap();
    let (c, auth, code) = approved(&oidc, &fake).await;
    let result = oidc
        .exchange(&c, &code, None, &auth.pkce_verifier, &auth.nonce)
        .await;
    assert_rejected(result);
    assert_eq!(fake.token_hits.load(Ordering::SeqCst), 0);
    let who = oidc
        .exchange(
            &c,
            &code,
            Some(&fake.issuer),
            &auth.pkce_verifier,
            &auth.nonce,
        )
        .await;
    assert_eq!(who.unwrap().subject, "ann-sub");
}
