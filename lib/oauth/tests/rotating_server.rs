//! Refresh, rotation, reuse detection and revocation against an authorization server built on
//! the Python `mcp` package's own handlers (`scripts/oauth_server.py`, run by the virtual
//! environment `scripts/test` makes), with a provider that rotates refresh tokens and revokes the
//! whole grant when a used one comes back.

use knowledge_core::domain::OAuthServer;
use knowledge_egress::Egress;
use knowledge_oauth::{
    BoundedHttp, ClientIdentity, OAuthError, Tokens, authorization, exchange_code, refresh,
    register, revoke,
};
use knowledge_test_support::oauth::RotatingServer;
use reqwest::Url;
use serde_json::Value;

const RESOURCE: &str = "http://127.0.0.1:9/mcp";
const REDIRECT_URI: &str = "http://127.0.0.1:9/api/oauth/callback/org_a/wiki";

/// The server, for tokens of `RESOURCE`.
async fn start() -> RotatingServer {
    RotatingServer::start(RESOURCE, 60).await
}

/// What discovery would find of `server`, for the resource `resource`.
async fn discovered(server: &RotatingServer, resource: &str) -> OAuthServer {
    let metadata: Value = reqwest::get(format!(
        "{}/.well-known/oauth-authorization-server",
        server.issuer
    ))
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    let text = |name: &str| metadata[name].as_str().map(str::to_owned);
    OAuthServer {
        resource: resource.into(),
        issuer: text("issuer").unwrap(),
        authorization_endpoint: text("authorization_endpoint").unwrap(),
        token_endpoint: text("token_endpoint").unwrap(),
        registration_endpoint: text("registration_endpoint"),
        revocation_endpoint: text("revocation_endpoint"),
        scopes: vec![],
        client_id_metadata_document_supported: false,
        iss_parameter_supported: false,
    }
}

/// How many refresh requests `server` served, and reuses it detected.
async fn counts(server: &RotatingServer) -> (u64, u64) {
    let stats = server.stats().await;
    (
        stats["refreshes"].as_u64().unwrap(),
        stats["reuses"].as_u64().unwrap(),
    )
}

fn http() -> BoundedHttp {
    BoundedHttp::new(Egress::ANYWHERE).unwrap()
}

/// Registers, authorizes (the server approves at once) and exchanges the code.
async fn connect(found: &OAuthServer) -> (ClientIdentity, Result<Tokens, OAuthError>) {
    let http = http();
    let client = register(&http, found, REDIRECT_URI, "Knowledge (test)")
        .await
        .unwrap();
    let asked = authorization(found, &client, REDIRECT_URI, &[]).unwrap();
    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let answer = browser.get(&asked.url).send().await.unwrap();
    assert_eq!(answer.status().as_u16(), 302);
    let back = Url::parse(answer.headers()["location"].to_str().unwrap()).unwrap();
    let param = |name| {
        back.query_pairs()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
            .unwrap()
    };
    assert_eq!(param("state"), asked.state);
    let code = param("code");
    let tokens = exchange_code(
        &http,
        found,
        &client,
        REDIRECT_URI,
        &code,
        &asked.pkce_verifier,
    )
    .await;
    (client, tokens)
}

#[tokio::test]
async fn a_refresh_rotates_the_token_and_a_reused_one_revokes_the_whole_grant() {
    let server = start().await;
    let found = discovered(&server, RESOURCE).await;
    let (client, tokens) = connect(&found).await;
    let first = tokens.unwrap();
    let r1 = first.refresh_token.clone().expect("a refresh token");
    let second = refresh(&http(), &found, &client, &r1, &[]).await.unwrap();
    let r2 = second
        .refresh_token
        .clone()
        .expect("a rotated refresh token");
    assert_ne!(r2, r1);
    assert_ne!(second.access_token, first.access_token);
    assert_eq!(counts(&server).await, (1, 0));
    // Sending the used token again is what single-flight refresh must never do: the server
    // takes it as a theft and revokes the grant, the new token included.
    let reused = refresh(&http(), &found, &client, &r1, &[])
        .await
        .unwrap_err();
    assert!(matches!(reused, OAuthError::InvalidGrant(_)), "{reused:?}");
    let after = refresh(&http(), &found, &client, &r2, &[])
        .await
        .unwrap_err();
    assert!(matches!(after, OAuthError::InvalidGrant(_)), "{after:?}");
    assert_eq!(counts(&server).await, (1, 1));
}

#[tokio::test]
async fn a_revoked_refresh_token_no_longer_refreshes() {
    let server = start().await;
    let found = discovered(&server, RESOURCE).await;
    let (client, tokens) = connect(&found).await;
    let r1 = tokens.unwrap().refresh_token.unwrap();
    revoke(&http(), &found, &client, &r1).await.unwrap();
    let e = refresh(&http(), &found, &client, &r1, &[])
        .await
        .unwrap_err();
    assert!(matches!(e, OAuthError::InvalidGrant(_)), "{e:?}");
}

#[tokio::test]
async fn a_code_is_redeemed_only_for_the_resource_it_was_asked_for() {
    let server = start().await;
    let found = discovered(&server, "http://127.0.0.1:9/another-mcp").await;
    let (_, tokens) = connect(&found).await;
    match tokens {
        Err(OAuthError::Refused(text)) => assert!(text.contains("invalid_target"), "{text}"),
        other => panic!("{other:?}"),
    }
}
