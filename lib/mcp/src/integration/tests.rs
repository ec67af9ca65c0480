//! The adapter's tests that need no server: how tool results and errors are read.

use rmcp::model::{ErrorCode, ErrorData};
use serde_json::json;

use super::*;

fn result(value: Value) -> CallToolResult {
    serde_json::from_value(value).unwrap()
}

#[test]
fn structured_content_is_the_output_when_present() {
    let r = result(json!({
        "content": [{"type": "text", "text": "{\"n\": 1}"}],
        "structuredContent": {"n": 1}
    }));
    assert_eq!(tool_output(r).unwrap(), json!({"n": 1}));
}

#[test]
fn without_structured_content_the_content_list_is_the_output() {
    let r = result(json!({"content": [
        {"type": "text", "text": "first"},
        {"type": "image", "data": "AAAA", "mimeType": "image/png"}
    ]}));
    let output = tool_output(r).unwrap();
    assert_eq!(output[0], "first");
    assert_eq!(output[1]["type"], "image");
    assert_eq!(output[1]["mimeType"], "image/png");
}

#[test]
fn an_error_result_is_invalid_with_its_text() {
    let r = result(json!({
        "content": [{"type": "text", "text": "no such page"}, {"type": "text", "text": "try again"}],
        "isError": true
    }));
    match tool_output(r) {
        Err(IntegrationError::Invalid(m)) => assert_eq!(m, "no such page\ntry again"),
        other => panic!("expected Invalid, got {other:?}"),
    }
    let silent = result(json!({"content": [], "isError": true}));
    assert!(matches!(
        tool_output(silent),
        Err(IntegrationError::Invalid(_))
    ));
}

fn http() -> McpHttp {
    McpHttp::new(Egress::ANYWHERE).unwrap()
}

#[test]
fn a_json_rpc_error_is_invalid_and_a_transport_failure_unavailable() {
    let integration = McpIntegration::new(
        "wiki",
        "http://127.0.0.1:9/mcp",
        Credential::None,
        Timeouts::default(),
        http(),
    );
    let rpc = ServiceError::McpError(ErrorData::new(
        ErrorCode::INVALID_PARAMS,
        "bad page id",
        None,
    ));
    match integration.failed(rpc) {
        IntegrationError::Invalid(m) => assert_eq!(m, "bad page id"),
        other => panic!("expected Invalid, got {other:?}"),
    }
    assert!(matches!(
        integration.failed(ServiceError::TransportClosed),
        IntegrationError::Unavailable(_)
    ));
}

#[test]
fn the_input_must_be_an_object_or_null() {
    assert_eq!(arguments(&json!({"q": 1})).unwrap().unwrap()["q"], 1);
    assert!(arguments(&Value::Null).unwrap().is_none());
    assert!(matches!(
        arguments(&json!([1])),
        Err(IntegrationError::Invalid(_))
    ));
}

#[test]
fn the_token_is_not_in_the_debug_output() {
    let integration = McpIntegration::new(
        "wiki",
        "https://wiki.example/mcp",
        Credential::Bearer("secret-token".to_owned()),
        Timeouts::default(),
        http(),
    );
    let shown = format!("{integration:?}");
    assert!(shown.contains("wiki.example") && !shown.contains("secret-token"));
}
