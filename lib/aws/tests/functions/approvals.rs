//! The approve function: a member's answer to a call their paused turn asks them about, on
//! moto, with the DynamoDB requests it makes; and the sweep expiring a call left unanswered.

use knowledge_aws::functions;
use knowledge_core::clock::{Clock, SystemClock, Timestamp};
use knowledge_core::domain::{
    Approval, ApprovalState, Awaiting, CallApproval, EventBody, NewEvent, TurnProgress,
};
use knowledge_core::ports::SessionStore;
use serde_json::{Value, json};

use crate::support::{Deployment, requests};

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
