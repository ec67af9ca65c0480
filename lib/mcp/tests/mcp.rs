//! `McpIntegration` against a real MCP server on loopback: `scripts/mcp_server.py`, built on
//! the official Python SDK, one server per test.

use std::pin::pin;
use std::time::Duration;

use knowledge_core::domain::{ToolHints, ToolPolicy};
use knowledge_core::ports::{Integration, IntegrationError};
use knowledge_egress::Egress;
use knowledge_mcp::test_server::start;
use knowledge_mcp::{Credential, McpHttp, McpIntegration, Timeouts};
use serde_json::{Value, json};
use tokio::time::timeout;

/// How long a test waits for the server to record something.
const PATIENCE: Duration = Duration::from_secs(60);

fn http() -> McpHttp {
    McpHttp::new(Egress::ANYWHERE).unwrap()
}

fn integration(url: &str, token: Option<&str>) -> McpIntegration {
    McpIntegration::new(
        "test",
        url,
        token.map_or(Credential::None, |t| Credential::Bearer(t.to_owned())),
        Timeouts::default(),
        http(),
    )
}

/// Calls `tool` with a cancel signal that never fires.
async fn call(
    integration: &McpIntegration, tool: &str, input: Value,
) -> Result<Value, IntegrationError> {
    let never = pin!(std::future::pending::<()>());
    integration.call(tool, &input, never).await
}

#[tokio::test]
async fn tools_are_listed_with_the_integration_prefix_and_their_schemas() {
    let server = start(&[]).await;
    let tools = integration(&server.url, None).tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "test_search",
            "test_fail",
            "test_slow",
            "test_cancellations",
            "test_create_note",
            "test_notes"
        ]
    );
    let search = &tools[0];
    assert_eq!(
        search.description,
        "Searches the test corpus for the query."
    );
    assert_eq!(search.input_schema["type"], "object");
    assert_eq!(search.input_schema["properties"]["query"]["type"], "string");
    assert_eq!(search.input_schema["required"], json!(["query"]));
}

#[tokio::test]
async fn a_tools_annotations_become_its_hints_and_its_default_policy() {
    let server = start(&[]).await;
    let tools = integration(&server.url, None).tools().await.unwrap();
    let policy = |name: &str| {
        let tool = tools.iter().find(|t| t.name == name).unwrap();
        (tool.hints, tool.hints.default_policy())
    };
    let (search, reads) = policy("test_search");
    assert_eq!(
        (search.read_only, search.destructive),
        (Some(true), Some(false))
    );
    assert_eq!(reads, ToolPolicy::Allow);
    let (create, writes) = policy("test_create_note");
    assert_eq!(
        (create.read_only, create.idempotent),
        (Some(false), Some(false))
    );
    assert_eq!(writes, ToolPolicy::Ask);
    // No annotations at all: it asks.
    let (fail, unknown) = policy("test_fail");
    assert_eq!(fail, ToolHints::default());
    assert_eq!(unknown, ToolPolicy::Ask);
}

#[tokio::test]
async fn a_call_returns_the_tools_output() {
    let server = start(&[]).await;
    let output = call(
        &integration(&server.url, None),
        "test_search",
        json!({"query": "cancel"}),
    )
    .await
    .unwrap();
    assert_eq!(
        output,
        json!({"query": "cancel", "hits": [{"title": "Cancelling", "score": 6}]})
    );
}

#[tokio::test]
async fn an_erroring_tool_gives_invalid_with_its_message() {
    let server = start(&[]).await;
    let result = call(
        &integration(&server.url, None),
        "test_fail",
        json!({"reason": "the wiki is down"}),
    )
    .await;
    match result {
        Err(IntegrationError::Invalid(message)) => {
            assert!(message.ends_with("the wiki is down"), "{message}");
        }
        other => panic!("expected Invalid, got {other:?}"),
    }
}

#[tokio::test]
async fn an_unknown_tool_or_arguments_the_tool_refuses_give_invalid() {
    let server = start(&[]).await;
    let integration = integration(&server.url, None);
    let unknown = call(&integration, "test_nothing", json!({})).await;
    assert!(
        matches!(&unknown, Err(IntegrationError::Invalid(m)) if m.contains("test_nothing")),
        "{unknown:?}"
    );
    let unprefixed = call(&integration, "search", json!({"query": "x"})).await;
    assert!(
        matches!(unprefixed, Err(IntegrationError::Invalid(_))),
        "{unprefixed:?}"
    );
    let missing = call(&integration, "test_search", json!({})).await;
    assert!(
        matches!(missing, Err(IntegrationError::Invalid(_))),
        "{missing:?}"
    );
}

#[tokio::test]
async fn a_slow_call_cancelled_midway_returns_cancelled_and_the_server_records_it() {
    let server = start(&[]).await;
    let integration = integration(&server.url, None);
    // The run is cancelled once the server is running the call.
    let running = pin!(server.wait_for_counts(|c| c["started"] == 1));
    let result = integration.call("test_slow", &json!({}), running).await;
    assert!(
        matches!(result, Err(IntegrationError::Cancelled)),
        "{result:?}"
    );
    server.wait_for_counts(|c| c["cancelled"] == 1).await;
}

#[tokio::test]
async fn a_server_requiring_a_token_refuses_a_call_without_it_and_accepts_it_with_it() {
    let server = start(&["--token", "s3cret-token"]).await;
    let input = json!({"query": "q"});
    for token in [None, Some("wrong-token")] {
        let refused = call(
            &integration(&server.url, token),
            "test_search",
            input.clone(),
        )
        .await;
        match refused {
            Err(IntegrationError::Unavailable(message)) => {
                assert!(!message.contains("wrong-token"), "{message}");
            }
            other => panic!("expected Unavailable with token {token:?}, got {other:?}"),
        }
    }
    let listed = integration(&server.url, None).tools().await;
    assert!(
        matches!(listed, Err(IntegrationError::Unavailable(_))),
        "{listed:?}"
    );
    let accepted = call(
        &integration(&server.url, Some("s3cret-token")),
        "test_search",
        input,
    )
    .await
    .unwrap();
    assert_eq!(accepted["query"], "q");
}

#[tokio::test]
async fn an_unreachable_url_gives_unavailable() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let closed = integration(&format!("http://127.0.0.1:{port}/mcp"), None);
    let result = call(&closed, "test_search", json!({"query": "q"})).await;
    assert!(
        matches!(result, Err(IntegrationError::Unavailable(_))),
        "{result:?}"
    );
    assert!(matches!(
        closed.tools().await,
        Err(IntegrationError::Unavailable(_))
    ));
}

#[tokio::test]
async fn a_server_that_never_answers_gives_unavailable_after_the_connect_timeout() {
    // Connections complete in the listener's backlog, but nothing ever answers them.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", silent.local_addr().unwrap());
    let timeouts = Timeouts {
        connect: Duration::from_millis(300),
        request: Duration::from_millis(300),
    };
    let integration = McpIntegration::new("test", url, Credential::None, timeouts, http());
    let result = timeout(
        PATIENCE,
        call(&integration, "test_search", json!({"query": "q"})),
    )
    .await
    .expect("the connect timeout bounds the call");
    assert!(
        matches!(result, Err(IntegrationError::Unavailable(_))),
        "{result:?}"
    );
}
