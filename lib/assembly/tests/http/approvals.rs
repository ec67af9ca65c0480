//! Consent to tool calls end to end (`docs/design/approvals.md`): the reference MCP server's
//! write tool asks the member, the turn pauses with no run, and the member's answer through
//! `POST /approve` resumes it; the server's own count of the notes it was asked to write
//! (`kb_notes`, a read-only tool that runs without asking) says how often the call ran.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use knowledge_core::domain::{EventKind, IntegrationAuth};
use knowledge_core::ports::{
    Agent, AgentAction, AgentError, AgentReply, AgentRequest, TokenUsage, ToolCall,
};
use knowledge_mcp::test_server::{Server, start};
use serde_json::{Value, json};

use crate::mcp::call;
use crate::support::{Api, Setup, admin, kinds};

const APPROVE: &str = "/api/managed-agents/approve";
const SESSIONS: &str = "/api/managed-agents/sessions";

/// An agent that asks for each group of calls in one step, in order, then answers; each reply
/// costs `.1` micro-dollars.
struct Steps(Vec<Vec<ToolCall>>, u64);

#[async_trait]
impl Agent for Steps {
    async fn health(&self) -> Result<(), AgentError> {
        Ok(())
    }

    async fn respond(&self, request: AgentRequest) -> Result<AgentReply, AgentError> {
        let done = (request.steps.iter())
            .filter(|e| e.kind() == EventKind::ToolResult)
            .count();
        let mut called = 0;
        let mut next = None;
        for group in &self.0 {
            if called == done {
                next = Some(group.clone());
                break;
            }
            called += group.len();
        }
        let action = match next {
            Some(calls) if !request.must_answer => AgentAction::UseTools(calls),
            _ => AgentAction::Answer("done".into()),
        };
        Ok(AgentReply {
            action,
            model: "test-model".to_owned(),
            usage: TokenUsage::default(),
            cost_micros: self.1,
        })
    }
}

fn note(text: &str) -> ToolCall {
    call("kb_create_note", json!({ "text": text }))
}

fn count() -> ToolCall {
    call("kb_notes", json!({}))
}

/// A service whose organisation connected the reference server as `kb`, its agent asking
/// for `steps`; calls wait `wait` for their member when given.
async fn rig(steps: Vec<Vec<ToolCall>>, wait: Option<Duration>) -> (Api, Server) {
    rig_priced(steps, wait, 0).await
}

/// [`rig`] with each of the agent's replies costing `micros`.
async fn rig_priced(
    steps: Vec<Vec<ToolCall>>, wait: Option<Duration>, micros: u64,
) -> (Api, Server) {
    let server = start(&[]).await;
    let api = Api::start_setup(Setup {
        approval_wait: wait,
        ..Setup::new(Arc::new(Steps(steps, micros)))
    })
    .await;
    (api.admin())
        .connect_integration(&api.user.org, "kb", &server.url, IntegrationAuth::None)
        .await
        .unwrap();
    (api, server)
}

async fn answer(
    api: &Api, session: &str, tool_use: &Value, decision: &str,
) -> crate::support::Reply {
    let body = json!({ "sessionId": session, "toolUseId": tool_use, "decision": decision });
    api.post(APPROVE, body).await
}

/// The notes the server counts in the output of the log's last `kb_notes` call.
fn notes_written(events: &[Value]) -> u64 {
    let last = (events.iter().rev())
        .find(|e| e["type"] == "tool_result" && e["payload"]["tool"] == "kb_notes")
        .expect("the agent counted the notes");
    last["payload"]["output"]["created"].as_u64().unwrap()
}

async fn run_id(api: &Api, session: &str) -> Value {
    api.transcript(session).await.body["workflowRunId"].clone()
}

async fn awaits_member(api: &Api, session: &str) -> bool {
    let list = api.get(SESSIONS).await;
    let line = (list.body["sessions"].as_array().unwrap().iter())
        .find(|s| s["id"] == session)
        .unwrap()
        .clone();
    line["awaitingApproval"].as_bool().unwrap_or(false)
}

#[tokio::test]
async fn a_write_tool_waits_for_the_member_with_no_run_and_runs_once_when_approved() {
    let (api, _server) = rig(vec![vec![note("hello")], vec![count()]], None).await;
    let id = api.create("write a note").await;
    api.settle().await;
    let events = api.all_events(&id).await;
    assert_eq!(kinds(&events), ["user_message", "tool_use"]);
    let approval = &events[1]["payload"]["approval"];
    assert_eq!(approval["state"], "pending");
    assert_eq!(approval["integration"], "kb");
    assert_eq!(approval["mayAlwaysAllow"], true);
    assert!(approval["expiresAt"].as_str().unwrap().ends_with('Z'));
    assert_eq!(run_id(&api, &id).await, Value::Null);
    assert!(awaits_member(&api, &id).await);

    let approved = answer(&api, &id, &events[1]["id"], "approve").await;
    assert_eq!(approved.status, 200, "{}", approved.body);
    assert_eq!(approved.body["state"], "approved");
    api.settle().await;
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
    assert_eq!(events[1]["payload"]["approval"]["state"], "approved");
    assert_eq!(events[2]["payload"]["approval"], "approved");
    assert_eq!(events[2]["payload"]["output"]["id"], "note-1");
    // The read-only count ran without asking.
    assert!(events[3]["payload"].get("approval").is_none());
    assert_eq!(notes_written(&events), 1);
    assert!(!awaits_member(&api, &id).await);

    // Answering again changes nothing.
    let again = answer(&api, &id, &events[1]["id"], "approve").await;
    assert_eq!(again.status, 404, "the turn ended: {}", again.body);
    assert_eq!(api.all_events(&id).await, events);
}

#[tokio::test]
async fn a_declined_call_does_not_run_and_the_agent_is_told() {
    let (api, _server) = rig(vec![vec![note("hello")], vec![count()]], None).await;
    let id = api.create("write a note").await;
    api.settle().await;
    let use_id = api.all_events(&id).await[1]["id"].clone();
    let declined = answer(&api, &id, &use_id, "decline").await;
    assert_eq!(declined.status, 200, "{}", declined.body);
    assert_eq!(declined.body["state"], "declined");
    api.settle().await;
    let events = api.all_events(&id).await;
    assert_eq!(events[1]["payload"]["approval"]["state"], "declined");
    assert_eq!(events[2]["payload"]["approval"], "declined");
    let told = events[2]["payload"]["output"]["error"].as_str().unwrap();
    assert!(told.contains("declined"), "{told}");
    assert_eq!(notes_written(&events), 0);
    assert_eq!(kinds(&events).last().unwrap(), "status_idle");
}

#[tokio::test]
async fn always_allow_skips_the_next_ask_unless_the_admin_forbids_it() {
    let (api, _server) = rig(vec![vec![note("one")], vec![count()]], None).await;
    let first = api.create("write a note").await;
    api.settle().await;
    let use_id = api.all_events(&first).await[1]["id"].clone();
    let always = answer(&api, &first, &use_id, "always").await;
    assert_eq!(always.status, 200, "{}", always.body);
    api.settle().await;
    assert_eq!(notes_written(&api.all_events(&first).await), 1);

    // The next call of the tool runs without asking.
    let second = api.create("write another").await;
    api.settle().await;
    let events = api.all_events(&second).await;
    assert!(
        events[1]["payload"].get("approval").is_none(),
        "{}",
        events[1]
    );
    assert_eq!(notes_written(&events), 2);

    // An admin who forbids "always allow" for the tool makes it ask again, and refuses it.
    let rule = json!({ "policy": "ask", "memberMayAlwaysAllow": false });
    let set = admin(
        &api,
        reqwest::Method::PUT,
        "/integrations/kb/tools/kb_create_note",
        Some(rule),
    )
    .await;
    assert_eq!(set.status, 200, "{}", set.body);
    let third = api.create("and another").await;
    api.settle().await;
    let events = api.all_events(&third).await;
    assert_eq!(events[1]["payload"]["approval"]["mayAlwaysAllow"], false);
    let refused = answer(&api, &third, &events[1]["id"], "always").await;
    assert_eq!(refused.status, 409);
    assert_eq!(refused.code(), "always_not_permitted");
    assert_eq!(api.all_events(&third).await, events, "nothing changed");
}

#[tokio::test]
async fn a_cancel_while_waiting_ends_the_turn_and_a_late_answer_finds_no_call() {
    let (api, _server) = rig(vec![vec![note("hello")], vec![count()]], None).await;
    let id = api.create("write a note").await;
    api.settle().await;
    let use_id = api.all_events(&id).await[1]["id"].clone();
    let cancelled = api.cancel(&id).await;
    assert_eq!(cancelled.status, 200, "{}", cancelled.body);
    assert!(cancelled.body.get("alreadyCancelled").is_none());
    let events = api.all_events(&id).await;
    assert_eq!(
        kinds(&events),
        ["user_message", "tool_use", "status_terminated"]
    );
    assert_eq!(events[2]["payload"]["reason"], "cancelled");
    assert!(!awaits_member(&api, &id).await);

    let late = answer(&api, &id, &use_id, "approve").await;
    assert_eq!(late.status, 404, "{}", late.body);
    api.settle().await;
    assert_eq!(api.all_events(&id).await, events, "nothing ran");
    // The member goes on in the same session: the agent asks afresh.
    assert_eq!(api.message(&id, "again").await.status, 200);
    api.settle().await;
    let events = api.all_events(&id).await;
    assert_eq!(
        events.last().unwrap()["payload"]["approval"]["state"],
        "pending"
    );
}

#[tokio::test]
async fn a_follow_up_while_waiting_queues_and_the_answer_resumes_both_turns() {
    let (api, _server) = rig(vec![vec![note("hello")], vec![count()]], None).await;
    let id = api.create("write a note").await;
    api.settle().await;
    let use_id = api.all_events(&id).await[1]["id"].clone();
    assert_eq!(api.message(&id, "and then?").await.status, 200);
    api.settle().await;
    assert_eq!(run_id(&api, &id).await, Value::Null, "no run starts for it");
    let events = api.all_events(&id).await;
    assert_eq!(kinds(&events), ["user_message", "tool_use", "user_message"]);

    assert_eq!(answer(&api, &id, &use_id, "approve").await.status, 200);
    api.settle().await;
    let events = api.all_events(&id).await;
    // The first turn ends; the follow-up's turn runs and asks its own call.
    let idle = kinds(&events)
        .iter()
        .filter(|k| *k == "status_idle")
        .count();
    assert_eq!(idle, 1, "{:?}", kinds(&events));
    assert_eq!(notes_written(&events), 1);
    let last = events.last().unwrap();
    assert_eq!(last["payload"]["approval"]["state"], "pending", "{last}");
    assert_eq!(run_id(&api, &id).await, Value::Null);
}

#[tokio::test]
async fn two_calls_of_one_step_are_answered_each_and_run_when_both_are() {
    let (api, _server) = rig(vec![vec![note("a"), note("b")], vec![count()]], None).await;
    let id = api.create("write two notes").await;
    api.settle().await;
    let events = api.all_events(&id).await;
    assert_eq!(kinds(&events), ["user_message", "tool_use", "tool_use"]);
    assert_eq!(
        answer(&api, &id, &events[2]["id"], "approve").await.status,
        200
    );
    api.settle().await;
    assert_eq!(run_id(&api, &id).await, Value::Null, "one call still waits");
    let events = api.all_events(&id).await;
    assert_eq!(events[1]["payload"]["approval"]["state"], "pending");
    assert_eq!(events[2]["payload"]["approval"]["state"], "approved");
    assert_eq!(events.len(), 3);

    assert_eq!(
        answer(&api, &id, &events[1]["id"], "decline").await.status,
        200
    );
    api.settle().await;
    let events = api.all_events(&id).await;
    assert_eq!(events[3]["payload"]["approval"], "declined");
    assert_eq!(events[4]["payload"]["approval"], "approved");
    assert_eq!(notes_written(&events), 1);
}

#[tokio::test]
async fn two_approvals_at_once_run_the_call_once() {
    let (api, _server) = rig(vec![vec![note("hello")], vec![count()]], None).await;
    let id = api.create("write a note").await;
    api.settle().await;
    let use_id = api.all_events(&id).await[1]["id"].clone();
    let (a, b) = tokio::join!(
        answer(&api, &id, &use_id, "approve"),
        answer(&api, &id, &use_id, "always"),
    );
    let mut statuses = [a.status, b.status];
    statuses.sort();
    assert_eq!(statuses, [200, 409], "{} {}", a.body, b.body);
    let lost = if a.status == 409 { &a } else { &b };
    assert_eq!(lost.code(), "approval_answered");
    api.settle().await;
    assert_eq!(notes_written(&api.all_events(&id).await), 1);
}

#[tokio::test]
async fn a_call_not_answered_in_time_expires_in_the_sweep_and_the_agent_is_told() {
    let wait = Duration::from_secs(60);
    let (api, _server) = rig(vec![vec![note("hello")], vec![count()]], Some(wait)).await;
    let id = api.create("write a note").await;
    api.settle().await;
    let swept = api.svc.service.sweep().await.unwrap();
    assert_eq!(swept.expired, 0, "not yet");
    api.clock.advance(61_000);
    let swept = api.svc.service.sweep().await.unwrap();
    assert_eq!(swept.expired, 1);
    api.settle().await;
    let events = api.all_events(&id).await;
    assert_eq!(events[1]["payload"]["approval"]["state"], "expired");
    assert_eq!(events[2]["payload"]["approval"], "expired");
    let told = events[2]["payload"]["output"]["error"].as_str().unwrap();
    assert!(told.contains("in time"), "{told}");
    assert_eq!(notes_written(&events), 0);
    assert_eq!(kinds(&events).last().unwrap(), "status_idle");
    let late = answer(&api, &id, &events[1]["id"], "approve").await;
    assert_eq!(late.status, 404);
}

#[tokio::test]
async fn only_the_sessions_member_answers_and_only_a_call_that_asks() {
    let (api, _server) = rig(vec![vec![count()], vec![note("x")], vec![count()]], None).await;
    let id = api.create("count, then write").await;
    api.settle().await;
    let events = api.all_events(&id).await;
    assert_eq!(
        kinds(&events)[..4],
        ["user_message", "tool_use", "tool_result", "tool_use"]
    );
    // A call that ran without asking is not one to answer.
    let allowed = answer(&api, &id, &events[1]["id"], "approve").await;
    assert_eq!(allowed.status, 404);
    let other = api.new_user(&api.user.org).await;
    let body = json!({ "sessionId": id, "toolUseId": events[3]["id"], "decision": "approve" });
    let theirs = api.post_as(&other, APPROVE, body).await;
    assert_eq!(theirs.status, 404);
    for (decision, tool_use) in [
        ("maybe", json!(events[3]["id"])),
        ("approve", json!("evt_x")),
    ] {
        let body = json!({ "sessionId": id, "toolUseId": tool_use, "decision": decision });
        let bad = api.post(APPROVE, body).await;
        assert_eq!(bad.status, 400, "{}", bad.body);
    }
    assert_eq!(api.all_events(&id).await, events, "nothing changed");
}

#[tokio::test]
async fn a_member_lists_the_tools_they_always_allow_and_takes_one_back() {
    let (api, _server) = rig(vec![vec![note("one")], vec![count()]], None).await;
    let listed = api.get("/api/integrations/allowed-tools").await;
    assert_eq!(listed.body, json!({ "tools": [] }));
    let first = api.create("write a note").await;
    api.settle().await;
    let use_id = api.all_events(&first).await[1]["id"].clone();
    assert_eq!(answer(&api, &first, &use_id, "always").await.status, 200);
    api.settle().await;
    let listed = api.get("/api/integrations/allowed-tools").await;
    assert_eq!(
        listed.body,
        json!({ "tools": [{ "integration": "kb", "tool": "kb_create_note" }] })
    );
    // Another member's list is their own.
    let other = api.new_user(&api.user.org).await;
    let theirs = api.get_as(&other, "/api/integrations/allowed-tools").await;
    assert_eq!(theirs.body, json!({ "tools": [] }));

    let path = "/api/integrations/kb/allowed-tools/kb_create_note";
    let taken = api.send_delete(path).await;
    assert_eq!(taken.status, 200, "{}", taken.body);
    assert_eq!(api.send_delete(path).await.status, 404);
    let listed = api.get("/api/integrations/allowed-tools").await;
    assert_eq!(listed.body, json!({ "tools": [] }));
    // The next call asks again.
    let second = api.create("write another").await;
    api.settle().await;
    let events = api.all_events(&second).await;
    assert_eq!(events[1]["payload"]["approval"]["state"], "pending");
}

#[tokio::test]
async fn the_members_allowance_holds_for_the_resumed_turn() {
    // The step that asked cost $0.002, over the member's $0.001 allowance: once approved, the
    // call runs (it was asked for within the allowance) and the agent is not asked again.
    let steps = vec![vec![note("hello")], vec![count()]];
    let (api, _server) = rig_priced(steps, None, 2_000).await;
    let limits = json!({ "memberCapUsd": 0.001 });
    let set = admin(&api, reqwest::Method::PUT, "/usage/limits", Some(limits)).await;
    assert_eq!(set.status, 200, "{}", set.body);
    let id = api.create("write a note").await;
    api.settle().await;
    let use_id = api.all_events(&id).await[1]["id"].clone();
    assert_eq!(answer(&api, &id, &use_id, "approve").await.status, 200);
    api.settle().await;
    let events = api.all_events(&id).await;
    assert_eq!(
        kinds(&events),
        [
            "user_message",
            "tool_use",
            "tool_result",
            "error",
            "status_idle"
        ]
    );
    assert_eq!(events[3]["payload"]["code"], "member_cap_reached");
    let usage = api.admin().usage(&api.user.org).await.unwrap();
    assert_eq!(
        usage.cost_micros, 2_000,
        "one provider call, before the pause"
    );
}

#[tokio::test]
async fn an_approval_racing_a_cancel_has_one_outcome_and_the_call_runs_at_most_once() {
    // Either order may win; each round checks the outcome it got.
    for _ in 0..3 {
        let (api, server) = rig(vec![vec![note("hello")], vec![count()]], None).await;
        let id = api.create("write a note").await;
        api.settle().await;
        let use_id = api.all_events(&id).await[1]["id"].clone();
        let (approved, cancelled) =
            tokio::join!(answer(&api, &id, &use_id, "approve"), api.cancel(&id));
        assert_eq!(cancelled.status, 200, "{}", cancelled.body);
        api.settle().await;
        let events = api.all_events(&id).await;
        let ends: Vec<String> = (kinds(&events).into_iter())
            .filter(|k| k == "status_idle" || k == "status_terminated")
            .collect();
        assert_eq!(ends.len(), 1, "one end of the turn: {:?}", kinds(&events));
        let written = server.notes_created().await;
        match approved.status {
            // The cancel ended the turn first: nothing ran.
            404 => {
                assert_eq!(ends[0], "status_terminated");
                assert_eq!(written, 0);
            }
            // The approval landed first: the cancel stopped the resumed run, or came after it.
            200 => assert!(written <= 1, "{written}"),
            other => panic!("{other}: {}", approved.body),
        }
        assert_eq!(run_id(&api, &id).await, Value::Null);
        assert!(!awaits_member(&api, &id).await);
    }
}
