//! The admin's rules for an integration's tools over the admin API, against the reference MCP
//! server (annotated read-only and write tools): each tool's hints and policy as the test
//! lists them, a rule set and cleared with its audit entry, and bad requests refused without
//! a change.

use reqwest::Method;
use serde_json::{Value, json};

use crate::support::{Api, admin};

/// The tool `name` as the integration's test lists it.
fn tool<'a>(listed: &'a Value, name: &str) -> &'a Value {
    let tools = listed["tools"].as_array().unwrap();
    tools.iter().find(|t| t["name"] == name).unwrap()
}

#[tokio::test]
async fn an_admin_sets_and_clears_a_tools_rule_and_the_integration_shows_its_policy() {
    let api = Api::start().await;
    let server = knowledge_mcp::test_server::start(&[]).await;
    let put = json!({ "url": server.url });
    let r = admin(&api, Method::PUT, "/integrations/kb", Some(put)).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["toolRules"], json!([]));

    // As its server says: a read runs, a write asks, a tool that says nothing asks.
    let listed = admin(&api, Method::POST, "/integrations/kb/test", None).await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    let search = tool(&listed.body, "kb_search");
    assert_eq!(search["hints"]["readOnly"], true);
    assert_eq!(
        (&search["defaultPolicy"], &search["policy"]),
        (&json!("allow"), &json!("allow"))
    );
    assert!(search.get("rule").is_none());
    assert_eq!(tool(&listed.body, "kb_create_note")["policy"], "ask");
    assert_eq!(tool(&listed.body, "kb_fail")["hints"], json!({}));
    assert_eq!(tool(&listed.body, "kb_fail")["policy"], "ask");

    let path = "/integrations/kb/tools/kb_search";
    let rule = json!({ "policy": "block", "memberMayAlwaysAllow": false });
    let r = admin(&api, Method::PUT, path, Some(rule)).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let stored = json!({ "tool": "kb_search", "policy": "block", "memberMayAlwaysAllow": false });
    assert_eq!(r.body, stored);
    let r = admin(&api, Method::GET, "/integrations", None).await;
    assert_eq!(r.body["integrations"][0]["toolRules"], json!([stored]));
    let listed = admin(&api, Method::POST, "/integrations/kb/test", None).await;
    let search = tool(&listed.body, "kb_search");
    assert_eq!(
        (&search["defaultPolicy"], &search["policy"]),
        (&json!("allow"), &json!("block"))
    );
    assert_eq!(search["rule"], stored);
    // Permitted by default.
    let ask = json!({ "policy": "ask" });
    let r = admin(
        &api,
        Method::PUT,
        "/integrations/kb/tools/kb_fail",
        Some(ask),
    )
    .await;
    assert_eq!(r.body["memberMayAlwaysAllow"], true, "{}", r.body);

    let r = admin(&api, Method::DELETE, path, None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let listed = admin(&api, Method::POST, "/integrations/kb/test", None).await;
    assert_eq!(tool(&listed.body, "kb_search")["policy"], "allow");
    let r = admin(&api, Method::GET, "/audit", None).await;
    let changes = (r.body["entries"].as_array().unwrap().iter())
        .filter(|e| e["action"] == "integration.tool_policy_changed")
        .map(|e| e["target"].as_str().unwrap().to_owned())
        .collect::<Vec<_>>();
    assert_eq!(changes, ["kb_search", "kb_fail", "kb_search"], "{}", r.body);
}

#[tokio::test]
async fn a_rule_for_another_integrations_tool_a_bad_policy_or_no_integration_changes_nothing() {
    let api = Api::start().await;
    let put = json!({ "url": "https://mcp.example.com/mcp" });
    let r = admin(&api, Method::PUT, "/integrations/kb", Some(put)).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let block = json!({ "policy": "block" });
    for (path, body, status) in [
        ("/integrations/kb/tools/crm_search", block.clone(), 400),
        ("/integrations/kb/tools/kb_", block.clone(), 400),
        ("/integrations/kb/tools/kb_a%20b", block.clone(), 400),
        (
            "/integrations/kb/tools/kb_search",
            json!({ "policy": "sometimes" }),
            400,
        ),
        ("/integrations/kb/tools/kb_search", json!({}), 400),
        ("/integrations/crm/tools/crm_search", block.clone(), 404),
    ] {
        let r = admin(&api, Method::PUT, path, Some(body.clone())).await;
        assert_eq!(r.status, status, "{path} {body}: {}", r.body);
    }
    let r = admin(&api, Method::GET, "/integrations", None).await;
    assert_eq!(r.body["integrations"][0]["toolRules"], json!([]));
    let r = admin(&api, Method::GET, "/audit", None).await;
    let entries = r.body["entries"].as_array().unwrap();
    assert!(
        entries
            .iter()
            .all(|e| e["action"] != "integration.tool_policy_changed"),
        "{}",
        r.body
    );
}
