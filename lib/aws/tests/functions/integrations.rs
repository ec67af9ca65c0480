//! The integrations' functions (integrations, oauth-callback), and the OAuth grants CallAgent
//! reads and refreshes.

use std::collections::BTreeMap;

use knowledge_aws::{Handler, functions};
use knowledge_core::clock::{Clock, SystemClock};
use knowledge_core::domain::{
    Actor, AuditAction, AuditEntry, ClientRegistration, GrantOwner, IntegrationAuth,
    IntegrationConfig, OAuthClient,
};
use knowledge_core::ids::{OrgId, UserId};
use knowledge_core::ports::{AuthorizationServers, DirectoryStore};
use knowledge_core::seal::{Sealer, oauth_client_context};
use knowledge_core::vault::{GrantAt, Vault, VaultTiming};
use knowledge_dynamo::{DynamoStore, RequestCounter};
use knowledge_egress::Egress;
use knowledge_oauth::{BoundedHttp, HttpAuthorizationServers};
use knowledge_test_support::oauth::{RotatingServer, authorize};
use lambda_runtime::{Context, LambdaEvent};
use serde_json::{Value, json};
use std::sync::Arc;
use tower::ServiceExt;

use crate::support::{
    Deployment, KEY_HEX, ORG, ORIGIN, USER, endpoint, follow_up, requests, row, sample_input, step,
};

#[tokio::test]
async fn integrations_event_lists_the_organisations_oauth_integrations_in_two_queries() {
    knowledge_test_support::skip_without_dynamodb!();
    let d = Deployment::new().await;
    let (status, body, made) = d.invoke(functions::INTEGRATIONS).await;
    assert_eq!((status, &body), (200, &json!({ "connections": [] })));
    // The guard's membership read; the integrations and the member's data, one Query each.
    assert_eq!(made, requests(&[("GetItem", 1), ("Query", 2)]));
}

#[tokio::test]
async fn oauth_callback_event_without_its_connect_in_progress_connects_nothing() {
    knowledge_test_support::skip_without_dynamodb!();
    let d = Deployment::new().await;
    let response = (d.router(functions::OAUTH_CALLBACK).await)
        .oneshot(d.event(functions::OAUTH_CALLBACK))
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 400);
    let cleared = response.headers()["set-cookie"].to_str().unwrap();
    assert!(cleared.starts_with("__Host-ks_connect=;") && cleared.contains("Max-Age=0"));
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    let body: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(body["error"]["code"], "connect_failed", "{body}");
    // Only the take of the state's ticket, which finds none.
    assert_eq!(
        d.take_checked("oauth-callback"),
        requests(&[("DeleteItem", 1)])
    );
}

/// Connects the sample user's own account to `wiki`, an `oauth_member` integration of the
/// sample organisation on `server`, as the connect routes do: discovery, one registration,
/// the authorization (approved at once) and the code exchange, the grant stored by a vault.
async fn connect_oauth(d: &Deployment, server: &RotatingServer) {
    let servers = Arc::new(HttpAuthorizationServers::new(
        BoundedHttp::new(Egress::ANYWHERE).unwrap(),
    ));
    let redirect = format!("{ORIGIN}/api/oauth/callback/{ORG}/wiki");
    let found = servers.discover(&server.mcp_url()).await.unwrap();
    let (client_id, secret) = servers.register(&found, &redirect, "test").await.unwrap();
    let sealer = Arc::new(Sealer::from_hex(KEY_HEX).unwrap());
    let context = oauth_client_context(ORG, "wiki", &client_id);
    let oauth = found.with_client(OAuthClient {
        client_id,
        secret_sealed: secret.as_deref().map(|s| sealer.seal(&context, s)),
        registration: ClientRegistration::Dynamic,
    });
    let now = SystemClock.now();
    let integration = IntegrationConfig {
        name: "wiki".into(),
        url: server.mcp_url(),
        auth: IntegrationAuth::OauthMember,
        created_at: now,
        oauth: Some(oauth.clone()),
        org_grant_sealed: None,
        tool_rules: Default::default(),
    };
    let org = OrgId::parse(ORG).unwrap();
    let added = AuditEntry::new(
        &org,
        now,
        Actor::Admin,
        AuditAction::IntegrationConnected,
        "wiki",
    );
    d.store
        .put_integration(&org, &integration, &added)
        .await
        .unwrap();
    let asked = servers.authorization(&oauth, &redirect).unwrap();
    let back = reqwest::Url::parse(&authorize(&asked.url).await).unwrap();
    let code = back
        .query_pairs()
        .find(|(k, _)| k == "code")
        .unwrap()
        .1
        .into_owned();
    let tokens = servers
        .exchange_code(
            &oauth,
            secret.as_deref(),
            &redirect,
            &code,
            &asked.pkce_verifier,
        )
        .await
        .unwrap();
    let client = knowledge_dynamo::connect(Some(&endpoint()), RequestCounter::default()).await;
    let store = Arc::new(DynamoStore::new(client, &d.env.table));
    let vault = Vault::new(
        store,
        servers,
        sealer,
        Arc::new(SystemClock),
        VaultTiming::default(),
    );
    let user = UserId::parse(USER).unwrap();
    let at = GrantAt::new(&org, GrantOwner::Member(user.clone()), &integration);
    let connected = AuditEntry::new(
        &org,
        now,
        Actor::Member,
        AuditAction::AccountConnected,
        "wiki",
    );
    vault.connect(&at, tokens, &user, &connected).await.unwrap();
}

/// The sample deployment, reaching loopback (the MCP and authorization servers of the test).
async fn on_loopback() -> Deployment {
    let mut d = Deployment::new().await;
    d.env.egress = Egress::ANYWHERE;
    d
}

/// A fresh deployment on loopback with the sample user's grant on `server`, and a follow-up
/// whose run is bound to its execution (LoadTurn done): CallAgent's output and requests.
async fn call_agent_with_grant(server: &RotatingServer) -> (Value, BTreeMap<String, u64>) {
    let d = on_loopback().await;
    connect_oauth(&d, server).await;
    let turn = follow_up(&d).await;
    step(&d, Handler::LoadTurn, &turn).await;
    step(&d, Handler::CallAgent, &turn).await
}

#[tokio::test]
async fn call_agent_reads_an_oauth_grant_with_the_members_data_and_a_refresh_costs_three_requests()
{
    knowledge_test_support::skip_without_dynamodb!();
    // Tokens that last an hour: no refresh is due.
    let server = RotatingServer::with_mcp(3600).await;
    let (answered, made) = call_agent_with_grant(&server).await;
    assert_eq!(answered["next"], "finish", "{answered}");
    // As with no integration (see the task test), and one Query more for the member's data,
    // which a per-user credential costs as well: the grant comes in it.
    let step_cost = requests(&[
        ("GetItem", 1),
        ("BatchGetItem", 1),
        ("Query", 3),
        ("TransactWriteItems", 1),
    ]);
    assert_eq!(made, step_cost);
    assert_eq!(server.stats().await["refreshes"], 0);

    // Tokens that last 30 s, under the 60 s margin: a refresh is due at once. It costs the
    // grant read again under the flight lock, the lease claimed, and the new tokens stored.
    let server = RotatingServer::with_mcp(30).await;
    let (answered, made) = call_agent_with_grant(&server).await;
    assert_eq!(answered["next"], "finish", "{answered}");
    let refreshed = requests(&[
        ("GetItem", 2),
        ("BatchGetItem", 1),
        ("Query", 3),
        ("TransactWriteItems", 3),
    ]);
    assert_eq!(made, refreshed);
    assert_eq!(server.stats().await["refreshes"], 1);
}

#[tokio::test]
async fn two_call_agent_functions_needing_one_expired_grant_at_once_refresh_it_once() {
    knowledge_test_support::skip_without_dynamodb!();
    // The first token lasts 30 s, under the 60 s margin: due at once; the refreshed one an
    // hour; each refresh takes a second, so the other invocations meet it in flight.
    let server = RotatingServer::expiring(30).await;
    let d = on_loopback().await;
    connect_oauth(&d, &server).await;
    let turn = follow_up(&d).await;
    step(&d, Handler::LoadTurn, &turn).await;
    // Two function instances (two cold starts, two vaults), as two Lambda invocations of a
    // step delivered twice are, each given the step's input four times at once.
    let instances = [
        d.cold_start(row(Handler::CallAgent)).await,
        d.cold_start(row(Handler::CallAgent)).await,
    ];
    let mut payload = sample_input(Handler::CallAgent);
    payload["turn"]["userSeq"] = json!(turn.0);
    payload["execution"]["startedAt"] = json!(turn.1);
    let calls = (0..8).map(|i| {
        let handler = instances[i % 2].task().unwrap();
        let payload = payload.clone();
        async move {
            handler
                .handle(LambdaEvent::new(payload, Context::default()))
                .await
        }
    });
    for output in futures_util::future::join_all(calls).await {
        let output = output.unwrap();
        assert!(output.get("next").is_some(), "{output}");
    }
    let stats = server.stats().await;
    assert_eq!(
        (stats["refreshes"].as_u64(), stats["reuses"].as_u64()),
        (Some(1), Some(0)),
        "{stats}"
    );
}

#[tokio::test]
async fn test_integration_event_lists_the_servers_tools_with_the_admins_own_grant() {
    knowledge_test_support::skip_without_dynamodb!();
    let server = RotatingServer::with_mcp(3600).await;
    let d = on_loopback().await;
    crate::admin::promote_the_sample_user(&d).await;
    connect_oauth(&d, &server).await;
    d.counter.take();
    let (status, body, made) = d.invoke(functions::TEST_INTEGRATION).await;
    assert_eq!(status, 200, "{body}");
    let tools: Vec<&str> = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["wiki_whoami"], "{body}");
    // The admin's membership (the guard); the admin probe's rate window, read and written;
    // the integrations, read to find this one and again with the admin's data to reach it.
    assert_eq!(
        made,
        requests(&[("GetItem", 2), ("PutItem", 1), ("Query", 3)])
    );
}
