//! The authorization code flow against a server nobody here wrote: the MCP TypeScript SDK's
//! example server with its OAuth authorization server (`scripts/mcp-oauth`, which
//! `scripts/test` installs, in its strict mode: `resource` must be the MCP URL), started on free
//! loopback ports for the test. Discovery, Dynamic Client Registration, the authorization URL
//! with PKCE and `state`, the code exchange, and an MCP call with the token.

use knowledge_egress::Egress;
use knowledge_oauth::{BoundedHttp, OAuthError, authorization, discover, exchange_code, register};
use knowledge_test_support::oauth::SdkExampleServer;
use reqwest::Url;

/// The example server, its MCP endpoint parsed.
struct ExampleServer {
    url: Url,
    issuer: String,
    _server: SdkExampleServer,
}

impl ExampleServer {
    async fn start() -> Self {
        let server = SdkExampleServer::start().await;
        Self {
            url: Url::parse(&server.url).unwrap(),
            issuer: server.issuer.clone(),
            _server: server,
        }
    }
}

#[tokio::test]
async fn the_mcp_sdk_example_server_is_discovered_from_its_401_to_its_authorization_server() {
    let server = ExampleServer::start().await;
    let http = BoundedHttp::new(Egress::ANYWHERE).unwrap();
    let found = discover(&http, &server.url).await.unwrap();
    assert_eq!(found.resource, server.url.as_str());
    assert_eq!(found.issuer, server.issuer);
    assert_eq!(found.token_endpoint, format!("{}token", server.issuer));
    assert_eq!(
        found.authorization_endpoint,
        format!("{}authorize", server.issuer)
    );
    assert_eq!(
        found.registration_endpoint,
        Some(format!("{}register", server.issuer))
    );
    assert_eq!(found.revocation_endpoint, None, "the example offers none");
    assert_eq!(found.scopes, ["mcp:tools"]);
}

#[tokio::test]
async fn the_guard_refuses_the_example_server_on_loopback_where_private_addresses_are_refused() {
    let server = ExampleServer::start().await;
    let http = BoundedHttp::new(Egress::PUBLIC_ONLY).unwrap();
    let e = discover(&http, &server.url).await.unwrap_err();
    assert!(
        matches!(e, knowledge_oauth::DiscoveryError::Refused { .. }),
        "{e:?}"
    );
}

/// The redirect URI the tests register; nothing listens there: the authorization server's
/// redirect is read, not followed.
const REDIRECT_URI: &str = "http://127.0.0.1:9/api/oauth/callback/org_a/greeter";

/// Follows the authorization URL as a browser would up to the redirect back; returns the
/// `code` and `state` it carries. The example server approves at once.
async fn authorize(url: &str) -> (String, String) {
    let back = Url::parse(&knowledge_test_support::oauth::authorize(url).await).unwrap();
    assert!(back.as_str().starts_with(REDIRECT_URI), "{back}");
    let param = |name| {
        back.query_pairs()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
            .unwrap()
    };
    (param("code"), param("state"))
}

/// An MCP `initialize` to `server` with `token`; the status.
async fn initialize(server: &Url, token: Option<&str>) -> u16 {
    let mut request = reqwest::Client::new()
        .post(server.as_str())
        .header("accept", "application/json, text/event-stream")
        .json(&serde_json::json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": { "protocolVersion": "2025-06-18", "capabilities": {},
                        "clientInfo": { "name": "test", "version": "0" } },
        }));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    request.send().await.unwrap().status().as_u16()
}

#[tokio::test]
async fn a_client_registers_once_authorizes_with_pkce_and_calls_the_server_with_its_token() {
    let server = ExampleServer::start().await;
    let http = BoundedHttp::new(Egress::ANYWHERE).unwrap();
    let found = discover(&http, &server.url).await.unwrap();
    let client = register(&http, &found, REDIRECT_URI, "Knowledge (test)")
        .await
        .unwrap();
    assert!(
        client.client_secret.is_some(),
        "registered as a confidential client"
    );
    let asked = authorization(&found, &client, REDIRECT_URI, &found.scopes).unwrap();
    let (code, state) = authorize(&asked.url).await;
    assert_eq!(state, asked.state);
    // A verifier of another authorization does not redeem the code: PKCE holds.
    let other = authorization(&found, &client, REDIRECT_URI, &found.scopes).unwrap();
    let wrong = exchange_code(
        &http,
        &found,
        &client,
        REDIRECT_URI,
        &code,
        &other.pkce_verifier,
    )
    .await
    .unwrap_err();
    assert!(matches!(wrong, OAuthError::InvalidGrant(_)), "{wrong:?}");
    let tokens = exchange_code(
        &http,
        &found,
        &client,
        REDIRECT_URI,
        &code,
        &asked.pkce_verifier,
    )
    .await
    .unwrap();
    assert!(tokens.expires_in.is_some());
    assert_eq!(initialize(&server.url, None).await, 401);
    assert_eq!(
        initialize(&server.url, Some(&tokens.access_token)).await,
        200
    );
}
