//! MCP integrations end to end, and how the tools of several integrations are offered: an organisation connects the test MCP server (the official
//! Python SDK's, on loopback) through the admin commands, and the real service offers its tools
//! to the agent, runs them through the integration port, tells the server of a cancel, and
//! reaches a per-user server only with the member's own sealed token.

use std::sync::Arc;

use async_trait::async_trait;
use knowledge_core::adapters::integrations::FixedIntegrations;
use knowledge_core::clock::Timestamp;
use knowledge_core::domain::{
    Actor, AuditAction, AuditEntry, IntegrationAuth, MemberDataKind, Role, ToolPolicy, ToolRule,
};
use knowledge_core::ports::{
    Agent, AgentAction, AgentError, AgentReply, AgentRequest, CancelSignal, Integration,
    IntegrationError, TokenUsage, ToolCall, ToolSpec,
};
use knowledge_core::seal::Sealer;

use knowledge_mcp::test_server::start;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::support::{Api, Setup, kinds};

const SESSION: &str = "/api/managed-agents/session";

/// A service whose integrations are the organisations' MCP servers from its store.
async fn service(agent: Arc<dyn Agent>) -> (Api, Arc<Sealer>) {
    let dir = Arc::new(tempfile::tempdir().unwrap());
    let sealer = Arc::new(Sealer::new(&[9; 32]).unwrap());
    let api = Api::start_setup(Setup {
        dir: Some(dir),
        sealer: sealer.clone(),
        ..Setup::new(agent)
    })
    .await;
    (api, sealer)
}

/// An agent that calls the tools it is given in order, one per step, then answers with the
/// names of the tools it was offered.
pub(crate) struct ScriptedAgent {
    calls: Vec<ToolCall>,
    offered: mpsc::UnboundedSender<Vec<String>>,
}

#[async_trait]
impl Agent for ScriptedAgent {
    async fn health(&self) -> Result<(), AgentError> {
        Ok(())
    }

    async fn respond(&self, request: AgentRequest) -> Result<AgentReply, AgentError> {
        let names: Vec<String> = request.tools.iter().map(|t| t.name.clone()).collect();
        let _ = self.offered.send(names.clone());
        let done = request.steps.len() / 2;
        let action = match self.calls.get(done) {
            Some(call) if !request.must_answer => AgentAction::UseTools(vec![call.clone()]),
            _ => AgentAction::Answer(format!("offered: {}", names.join(", "))),
        };
        Ok(AgentReply {
            action,
            model: "test-model".to_owned(),
            usage: TokenUsage::default(),
            cost_micros: 0,
        })
    }
}

pub(crate) fn scripted(
    calls: Vec<ToolCall>,
) -> (Arc<ScriptedAgent>, mpsc::UnboundedReceiver<Vec<String>>) {
    let (offered, rx) = mpsc::unbounded_channel();
    (Arc::new(ScriptedAgent { calls, offered }), rx)
}

/// The admin lets `tool` of `integration` run without asking (the reference server's `fail`
/// and `slow` carry no annotations, so they would ask).
pub(crate) async fn allow(api: &Api, integration: &str, tool: &str) {
    let path = format!("/integrations/{integration}/tools/{tool}");
    let rule = json!({ "policy": "allow", "memberMayAlwaysAllow": true });
    let set = crate::support::admin(api, reqwest::Method::PUT, &path, Some(rule)).await;
    assert_eq!(set.status, 200, "{}", set.body);
}

pub(crate) fn call(tool: &str, input: Value) -> ToolCall {
    ToolCall {
        tool: tool.into(),
        input,
    }
}

#[tokio::test]
async fn a_connected_mcp_servers_tools_are_offered_called_and_recorded_in_the_transcript() {
    let server = start(&[]).await;
    let (agent, mut offered) = scripted(vec![
        call("kb_search", json!({ "query": "cancel" })),
        call("kb_fail", json!({ "reason": "no such page" })),
    ]);
    let (api, _) = service(agent).await;
    let created = api.post(SESSION, json!({ "text": "before" })).await;
    assert_eq!(created.body["noConnectors"], json!(true));
    api.settle().await;
    let _ = offered.recv().await;

    api.admin()
        .connect_integration(&api.user.org, "kb", &server.url, IntegrationAuth::None)
        .await
        .unwrap();
    allow(&api, "kb", "kb_fail").await;
    let created = api
        .post(SESSION, json!({ "text": "how do I cancel?" }))
        .await;
    assert_eq!(created.status, 200);
    assert_eq!(created.body["noConnectors"], json!(false));
    let id = created.body["id"].as_str().unwrap().to_owned();
    api.settle().await;

    let first_offer = offered.recv().await.unwrap();
    assert!(
        first_offer.contains(&"kb_search".to_owned())
            && first_offer.contains(&"kb_slow".to_owned()),
        "{first_offer:?}"
    );
    let events = api.all_events(&id).await;
    assert_eq!(
        kinds(&events),
        [
            "user_message",
            "tool_use",
            "tool_result",
            "tool_use",
            "tool_result",
            "agent_message",
            "status_idle"
        ]
    );
    assert_eq!(events[1]["payload"]["tool"], "kb_search");
    assert_eq!(events[1]["payload"]["input"], json!({ "query": "cancel" }));
    assert_eq!(events[2]["payload"]["output"]["query"], "cancel");
    assert_eq!(
        events[2]["payload"]["output"]["hits"][0]["title"],
        "Cancelling"
    );
    let failed = events[4]["payload"]["output"]["error"].as_str().unwrap();
    assert!(failed.contains("no such page"), "{failed}");
}

#[tokio::test]
async fn a_cancel_during_a_slow_mcp_tool_sends_the_cancellation_and_terminates_the_run() {
    let server = start(&[]).await;
    let (agent, _offered) = scripted(vec![call("kb_slow", json!({}))]);
    let (api, _) = service(agent).await;
    api.admin()
        .connect_integration(&api.user.org, "kb", &server.url, IntegrationAuth::None)
        .await
        .unwrap();
    allow(&api, "kb", "kb_slow").await;
    let id = api.create("wait for it").await;
    server.wait_for_counts(|c| c["started"] == 1).await;

    let r = api.cancel(&id).await;
    assert_eq!(r.status, 200);
    server.wait_for_counts(|c| c["cancelled"] == 1).await;
    api.settle().await;
    let k = kinds(&api.all_events(&id).await);
    assert_eq!(k, ["user_message", "tool_use", "status_terminated"]);
}

#[tokio::test]
async fn a_per_user_server_is_reached_only_with_the_members_sealed_token_which_leaves_with_them() {
    let server = start(&["--token", "ann-secret-token"]).await;
    let (agent, mut offered) = scripted(vec![call("crm_search", json!({ "query": "deals" }))]);
    let (api, sealer) = service(agent).await;
    let admin = api.admin();
    let org = api.user.org.clone();
    admin
        .connect_integration(&org, "crm", &server.url, IntegrationAuth::PerUser)
        .await
        .unwrap();

    // Without a token of their own the member does not reach the server.
    let created = api.post(SESSION, json!({ "text": "no token yet" })).await;
    assert_eq!(created.body["noConnectors"], json!(true));
    api.settle().await;
    assert_eq!(offered.recv().await.unwrap(), Vec::<String>::new());

    admin
        .set_credential(
            &org,
            &api.user.id,
            "crm",
            "ann-secret-token",
            sealer.clone(),
        )
        .await
        .unwrap();
    let stored = api
        .svc
        .store
        .list_member_data(&org, &api.user.id)
        .await
        .unwrap();
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].kind, MemberDataKind::IntegrationToken);
    assert!(
        !stored[0].value.contains("ann-secret-token"),
        "stored sealed"
    );

    let created = api.post(SESSION, json!({ "text": "with my token" })).await;
    assert_eq!(created.body["noConnectors"], json!(false));
    let id = created.body["id"].as_str().unwrap().to_owned();
    api.settle().await;
    let events = api.all_events(&id).await;
    assert_eq!(events[2]["type"], "tool_result");
    assert_eq!(events[2]["payload"]["output"]["query"], "deals");

    // Another admin keeps the organisation, so its only admin so far can go.
    admin.add_member(&org, None, Role::Admin).await.unwrap();
    admin.remove_member(&org, &api.user.id).await.unwrap();
    assert!(
        api.svc
            .store
            .list_member_data(&org, &api.user.id)
            .await
            .unwrap()
            .is_empty()
    );
}

/// An integration offering one tool, `shared`, that answers with the integration's name.
struct Offering(&'static str);

#[async_trait]
impl Integration for Offering {
    fn name(&self) -> &str {
        self.0
    }

    async fn tools(&self) -> Result<Vec<ToolSpec>, IntegrationError> {
        Ok(vec![ToolSpec {
            name: "shared".into(),
            description: format!("{}'s tool", self.0),
            input_schema: json!({ "type": "object" }),
            hints: knowledge_core::domain::ToolHints::READ_ONLY,
        }])
    }

    async fn call(
        &self, _: &str, _: &Value, _: CancelSignal<'_>,
    ) -> Result<Value, IntegrationError> {
        Ok(json!(self.0))
    }
}

#[tokio::test]
async fn a_tool_name_two_integrations_offer_is_offered_once_and_runs_the_first_ones_tool() {
    let (agent, mut offered) = scripted(vec![call("shared", json!({}))]);
    let org = knowledge_core::ids::OrgId::parse("org_default").unwrap();
    let integrations = FixedIntegrations::new()
        .connect(org.clone(), Arc::new(Offering("first")))
        .connect(org, Arc::new(Offering("second")));
    let api = Api::start_setup(Setup {
        integrations: Arc::new(integrations),
        ..Setup::new(agent)
    })
    .await;
    let id = api.create("which one?").await;
    api.settle().await;
    assert_eq!(offered.recv().await.unwrap(), ["shared"]);
    let events = api.all_events(&id).await;
    assert_eq!(events[2]["payload"]["output"], "first");
}

#[tokio::test]
async fn a_turn_on_a_service_refusing_private_destinations_is_offered_no_tool_of_one() {
    let server = start(&[]).await;
    let (agent, mut offered) = scripted(vec![]);
    let api = Api::start_setup(Setup {
        egress: knowledge_egress::Egress::PUBLIC_ONLY,
        ..Setup::new(agent)
    })
    .await;
    api.admin()
        .connect_integration(&api.user.org, "kb", &server.url, IntegrationAuth::None)
        .await
        .unwrap();
    let created = api.post(SESSION, json!({ "text": "search it" })).await;
    assert_eq!(created.status, 200, "{}", created.body);
    let id = created.body["id"].as_str().unwrap().to_owned();
    api.settle().await;
    let offer = offered.recv().await.unwrap();
    assert!(!offer.iter().any(|t| t.starts_with("kb_")), "{offer:?}");
    // The turn is answered from what it reaches, without waiting on the refused server.
    let events = api.all_events(&id).await;
    assert_eq!(
        kinds(&events),
        ["user_message", "agent_message", "status_idle"]
    );
}

#[tokio::test]
async fn a_tool_the_admin_blocked_is_never_offered_and_a_call_of_it_never_reaches_the_server() {
    let server = start(&[]).await;
    // The model asks for the blocked tool anyway (as one offered it before the block would),
    // then for the server's count of the notes it was asked to write.
    let (agent, mut offered) = scripted(vec![
        call("kb_create_note", json!({ "text": "hello" })),
        call("kb_notes", json!({})),
    ]);
    let (api, _) = service(agent).await;
    let org = &api.user.org;
    api.admin()
        .connect_integration(org, "kb", &server.url, IntegrationAuth::None)
        .await
        .unwrap();
    let rule = ToolRule {
        policy: ToolPolicy::Block,
        member_may_always_allow: false,
    };
    let audit = AuditEntry::new(
        org,
        Timestamp(1),
        Actor::Admin,
        AuditAction::ToolPolicyChanged,
        "kb",
    );
    (api.svc.store)
        .set_tool_rule(org, "kb", "kb_create_note", Some(rule), &audit)
        .await
        .unwrap();
    let id = api.create("write a note").await;
    api.settle().await;
    let first_offer = offered.recv().await.unwrap();
    assert!(
        first_offer.contains(&"kb_notes".to_owned()),
        "{first_offer:?}"
    );
    assert!(
        !first_offer.contains(&"kb_create_note".to_owned()),
        "{first_offer:?}"
    );
    let events = api.all_events(&id).await;
    assert_eq!(events[1]["payload"]["tool"], "kb_create_note");
    let refused = events[2]["payload"]["output"]["error"].as_str().unwrap();
    assert!(refused.contains("does not allow"), "{refused}");
    assert_eq!(
        events[4]["payload"]["output"]["created"], 0,
        "{}",
        events[4]
    );
}
