//! The approve function: a member's answer to a call their paused turn asks them about, on
//! moto, with the DynamoDB requests it makes; and the sweep expiring a call left unanswered.

use knowledge_aws::functions;
use knowledge_core::clock::{Clock, SystemClock, Timestamp};
use knowledge_core::domain::{
    Approval, ApprovalState, Awaiting, CallApproval, EventBody, NewEvent, TurnProgress,
};
use knowledge_core::ports::SessionStore;
use serde_json::{Value, json};

use knowledge_aws::Handler;
use knowledge_core::domain::{
    Actor, AuditAction, AuditEntry, IntegrationAuth, IntegrationConfig, ToolPolicy, ToolRule,
};
use knowledge_core::ids::{OrgId, RunId};
use knowledge_core::ports::DirectoryStore;
use knowledge_egress::Egress;

use crate::support::{Deployment, ORG, follow_up, requests, sample_input, step, task};

const APPROVE: &str = "/api/managed-agents/approve";

/// Pauses the sample session on a new question whose one call asks the member, expiring at
/// `expires_at`; returns the call's event id.
async fn pause(d: &Deployment, expires_at: Timestamp) -> String {
    let current = d.store.get_session(&d.key).await.unwrap().unwrap();
    let mut next = current.clone();
    next.version += 1;
    let approval = Approval {
        state: ApprovalState::Pending,
        integration: Some("tracker".into()),
        expires_at,
        may_always_allow: true,
    };
    let events = next.place(
        SystemClock.now(),
        vec![
            NewEvent::user_message("File it"),
            NewEvent::ToolUse {
                tool: "tracker_create_issue".into(),
                input: json!({ "title": "Refunds" }),
                approval: Some(approval),
            },
        ],
    );
    let (question, call) = (events[0].seq, events[1].seq);
    next.pending = vec![question];
    next.turn = Some(TurnProgress {
        step: 1,
        agent_calls: 1,
        from_seq: call,
        awaiting: Awaiting::Tools(vec![call]),
        approvals: vec![CallApproval {
            seq: call,
            state: ApprovalState::Pending,
            expires_at,
        }],
        calling: None,
    });
    (d.store)
        .commit_session(&next, current.version, &events, None, None)
        .await
        .unwrap();
    d.counter.take_item_actions();
    d.counter.take();
    format!("evt_{call:012}")
}

fn body(d: &Deployment, tool_use: &str, decision: &str) -> Value {
    json!({ "sessionId": d.key.session.as_str(), "toolUseId": tool_use, "decision": decision })
}

#[tokio::test]
async fn an_approval_resumes_the_paused_turn_in_one_transaction_and_starts_its_run() {
    knowledge_test_support::skip_without_dynamodb!();
    let d = Deployment::new().await;
    let tool_use = pause(&d, SystemClock.now().plus_millis(3_600_000)).await;
    let listed = d.store.list_sessions(&d.key.user, &d.key.org, 10).await;
    assert!(listed.unwrap()[0].awaits_member, "GSI1 says it waits");
    d.counter.take_item_actions();
    d.counter.take();
    let (status, answer, made) = (d.send(
        functions::APPROVE,
        "POST",
        APPROVE,
        body(&d, &tool_use, "approve"),
    ))
    .await;
    assert_eq!(
        (status, &answer),
        (200, &json!({ "ok": true, "state": "approved" }))
    );
    // The membership, rate window and session in one batch, the call's event in one query;
    // the rate window put; one transaction of the session and the rewritten event.
    assert_eq!(
        made,
        requests(&[
            ("BatchGetItem", 1),
            ("Query", 1),
            ("PutItem", 1),
            ("TransactWriteItems", 1)
        ])
    );
    let s = d.store.get_session(&d.key).await.unwrap().unwrap();
    let run = s.run_id.clone().expect("the answer claimed a run");
    assert_eq!(d.executions().await, [run.to_string()]);
    let seq: u64 = tool_use[4..].parse().unwrap();
    let events = d.store.list_events(&d.key, seq - 1, 1).await.unwrap();
    let EventBody::ToolUse { approval, .. } = &events[0].body else {
        panic!("{events:?}")
    };
    assert_eq!(approval.as_ref().unwrap().state, ApprovalState::Approved);
    let listed = d.store.list_sessions(&d.key.user, &d.key.org, 10).await;
    assert!(!listed.unwrap()[0].awaits_member);
    d.counter.take_item_actions();
    d.counter.take();

    // A second answer changes nothing: refused after the one batch and query, its rate slot
    // taken.
    let (status, answer, made) = (d.send(
        functions::APPROVE,
        "POST",
        APPROVE,
        body(&d, &tool_use, "decline"),
    ))
    .await;
    assert_eq!(status, 409, "{answer}");
    assert_eq!(answer["error"]["code"], "approval_answered");
    assert_eq!(
        made,
        requests(&[("BatchGetItem", 1), ("Query", 1), ("PutItem", 1)])
    );
    assert_eq!(d.store.get_session(&d.key).await.unwrap().unwrap(), s);
}

#[tokio::test]
async fn the_sweep_expires_a_call_left_unanswered_and_resumes_its_turn() {
    knowledge_test_support::skip_without_dynamodb!();
    let d = Deployment::new().await;
    let tool_use = pause(&d, SystemClock.now().plus_millis(-1_000)).await;
    let (answer, made) = d.sweep().await;
    assert_eq!(answer, json!({ "revived": 0, "failed": 0, "expired": 1 }));
    let s = d.store.get_session(&d.key).await.unwrap().unwrap();
    let run = s.run_id.clone().expect("the expiry claimed a run");
    assert_eq!(d.executions().await, [run.to_string()]);
    let turn = s.turn.unwrap();
    assert_eq!(turn.approvals[0].state, ApprovalState::Expired);
    let seq: u64 = tool_use[4..].parse().unwrap();
    let events = d.store.list_events(&d.key, seq - 1, 1).await.unwrap();
    assert!(
        matches!(&events[0].body, EventBody::ToolUse { approval: Some(a), .. } if a.state == ApprovalState::Expired)
    );
    // The index, one query per shard; the session, the step's events, one transaction of
    // the session and the rewritten event.
    let shards = u64::from(knowledge_dynamo::keys::STALE_SHARDS);
    assert_eq!(
        made,
        requests(&[
            ("Query", shards + 1),
            ("GetItem", 1),
            ("TransactWriteItems", 1)
        ])
    );
}

/// Connects the reference MCP server as `kb`, its search tool set to ask the member (the
/// built-in agent the Task functions run calls every search tool).
async fn connect_asking(d: &Deployment, url: &str) {
    let org = OrgId::parse(ORG).unwrap();
    let now = SystemClock.now();
    let integration = IntegrationConfig {
        name: "kb".into(),
        url: url.into(),
        auth: IntegrationAuth::None,
        created_at: now,
        oauth: None,
        org_grant_sealed: None,
        tool_rules: Default::default(),
    };
    let audit = |action| AuditEntry::new(&org, now, Actor::Admin, action, "kb");
    let store = &d.store;
    (store.put_integration(
        &org,
        &integration,
        &audit(AuditAction::IntegrationConnected),
    ))
    .await
    .unwrap();
    let rule = ToolRule {
        policy: ToolPolicy::Ask,
        member_may_always_allow: true,
    };
    let changed = audit(AuditAction::ToolPolicyChanged);
    (store.set_tool_rule(&org, "kb", "kb_search", Some(rule), &changed))
        .await
        .unwrap();
}

/// `h`'s sample event for the run `run`'s first execution, started now, where the last
/// step's output `at` left the turn; its output and DynamoDB requests.
async fn step_of(
    d: &Deployment, h: Handler, run: &RunId, at: &Value,
) -> (Value, std::collections::BTreeMap<String, u64>) {
    let mut payload = sample_input(h);
    payload["runId"] = json!(run.as_str());
    if payload.get("turn").is_some() {
        payload["turn"] = at["turn"].clone();
    }
    payload["execution"]["name"] = json!(run.as_str());
    payload["execution"]["id"] = json!(format!("arn:aws:states:us-east-1:1:express:agent:{run}:1"));
    payload["execution"]["startedAt"] = json!(SystemClock.now().to_iso8601());
    d.counter.take_item_actions();
    d.counter.take();
    let output = task(d, h, payload).await.unwrap();
    (output, d.take_checked(crate::support::row(h).name))
}

#[tokio::test]
async fn a_turn_pauses_in_call_agent_and_resumes_through_the_task_functions_once_approved() {
    knowledge_test_support::skip_without_dynamodb!();
    let server = knowledge_mcp::test_server::start(&[]).await;
    let mut d = Deployment::new().await;
    d.env.egress = Egress::ANYWHERE;
    connect_asking(&d, &server.url).await;
    let turn = follow_up(&d).await;
    step(&d, Handler::LoadTurn, &turn).await;
    let (paused, made) = step(&d, Handler::CallAgent, &turn).await;
    assert_eq!(paused["next"], "done", "{paused}");
    // As an answering step (the session; one batch; the integrations and the history; one
    // transaction), and the member's always-allowed tools of the integration.
    assert_eq!(
        made,
        requests(&[
            ("GetItem", 2),
            ("BatchGetItem", 1),
            ("Query", 2),
            ("TransactWriteItems", 1)
        ])
    );
    let s = d.store.get_session(&d.key).await.unwrap().unwrap();
    assert!(s.awaits_member() && s.run_id.is_none(), "{s:?}");
    let call = s.turn.as_ref().unwrap().approvals[0].seq;

    let tool_use = format!("evt_{call:012}");
    let (status, answer, _) = (d.send(
        functions::APPROVE,
        "POST",
        APPROVE,
        body(&d, &tool_use, "approve"),
    ))
    .await;
    assert_eq!(status, 200, "{answer}");
    let run = d
        .store
        .get_session(&d.key)
        .await
        .unwrap()
        .unwrap()
        .run_id
        .unwrap();
    let (loaded, _) = step_of(&d, Handler::LoadTurn, &run, &Value::Null).await;
    assert_eq!(loaded["next"], "tool", "{loaded}");
    let (ran, made) = step_of(&d, Handler::RunTool, &run, &loaded).await;
    assert_eq!(ran["next"], "agent", "{ran}");
    // A tool step's requests (the session, the call's event, the integrations, the result's
    // transaction), and the mark put before the call.
    assert_eq!(
        made,
        requests(&[
            ("GetItem", 1),
            ("Query", 2),
            ("PutItem", 1),
            ("TransactWriteItems", 1)
        ])
    );
    let (answered, _) = step_of(&d, Handler::CallAgent, &run, &ran).await;
    assert_eq!(answered["next"], "finish", "{answered}");
    let events = d.store.list_events(&d.key, call - 1, 10).await.unwrap();
    let EventBody::ToolResult { approval, tool, .. } = &events[1].body else {
        panic!("{events:?}")
    };
    assert_eq!(
        (tool.as_str(), *approval),
        ("kb_search", Some(ApprovalState::Approved))
    );
}
