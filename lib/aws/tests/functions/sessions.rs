//! The session functions: create-session, transcript, message, list-sessions, titles, memory,
//! cancel and delete-session.

use knowledge_aws::functions;
use knowledge_core::clock::{Clock, SystemClock};
use knowledge_core::domain::{MEMORY_ITEM, MemberDataKind};
use knowledge_core::ids::{SessionId, SessionKey};
use knowledge_core::ports::{DirectoryStore, SessionStore, StoredRows};
use serde_json::{Value, json};
use tower::ServiceExt;

use crate::support::{Deployment, SESSION, requests};

#[tokio::test]
async fn create_session_event_creates_a_session_and_starts_its_execution() {
    knowledge_test_support::skip_without_dynamodb!();
    let d = Deployment::new().await;
    let (status, body, made) = d.invoke(functions::CREATE_SESSION).await;
    assert_eq!(status, 200, "{body}");
    let run = body["runId"].as_str().unwrap();
    assert_eq!(d.executions().await, [run]);
    let id = SessionId::parse(body["id"].as_str().unwrap()).unwrap();
    let key = SessionKey {
        session: id,
        ..d.key.clone()
    };
    let stored = d.store.get_session(&key).await.unwrap().unwrap();
    assert_eq!(stored.run_id.map(|r| r.to_string()).as_deref(), Some(run));
    // One read of membership, organisation, usage and rate window; the integrations; one
    // transaction of session, event, rate window and query count.
    assert_eq!(
        made,
        requests(&[("BatchGetItem", 1), ("Query", 1), ("TransactWriteItems", 1)])
    );
}

#[tokio::test]
async fn transcript_event_reads_the_events_after_its_cursor_with_one_query() {
    knowledge_test_support::skip_without_dynamodb!();
    let d = Deployment::new().await;
    let (status, body, made) = d.invoke(functions::TRANSCRIPT).await;
    assert_eq!(status, 200, "{body}");
    // The sample event asks for the events after evt_000000000003.
    let kinds: Vec<&str> = body["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["user_message", "agent_message", "status_idle"]);
    assert_eq!(body["events"][0]["id"], "evt_000000000004");
    assert_eq!(body["hasMore"], false);
    assert_eq!(made, requests(&[("BatchGetItem", 1), ("Query", 1)]));
}

#[tokio::test]
async fn message_event_appends_the_question_and_starts_a_run() {
    knowledge_test_support::skip_without_dynamodb!();
    let d = Deployment::new().await;
    let (status, body, made) = d.invoke(functions::MESSAGE).await;
    assert_eq!((status, &body), (200, &json!({ "ok": true })));
    let session = d.store.get_session(&d.key).await.unwrap().unwrap();
    let run = session.run_id.expect("a run was claimed").to_string();
    assert_eq!(d.executions().await, [run]);
    let last = d.store.list_events(&d.key, 6, 10).await.unwrap();
    assert_eq!(last[0].body.text(), Some("And for annual plans?"));
    assert_eq!(
        made,
        requests(&[("BatchGetItem", 1), ("TransactWriteItems", 1)])
    );
}

#[tokio::test]
async fn list_sessions_event_lists_the_session() {
    knowledge_test_support::skip_without_dynamodb!();
    let d = Deployment::new().await;
    let (status, body, made) = d.invoke(functions::LIST_SESSIONS).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["sessions"][0]["id"], SESSION);
    assert_eq!(body["sessions"].as_array().unwrap().len(), 1);
    assert_eq!(made, requests(&[("GetItem", 1), ("Query", 1)]));
}

#[tokio::test]
async fn titles_event_renames_the_session_in_one_transaction_with_its_rate_window() {
    knowledge_test_support::skip_without_dynamodb!();
    let d = Deployment::new().await;
    let before = d.store.get_session(&d.key).await.unwrap().unwrap();
    d.counter.take();
    let (status, body, made) = d.invoke(functions::TITLES).await;
    assert_eq!(
        (status, &body),
        (200, &json!({ "ok": true, "title": "Refunds, renamed" }))
    );
    let after = d.store.get_session(&d.key).await.unwrap().unwrap();
    assert_eq!(after.title, "Refunds, renamed");
    assert_eq!(after.updated_at, before.updated_at);
    assert_eq!(
        made,
        requests(&[("BatchGetItem", 1), ("TransactWriteItems", 1)])
    );
}

#[tokio::test]
async fn memory_event_reads_the_membership_the_memory_and_the_switch_and_a_forget_is_one_transaction()
 {
    knowledge_test_support::skip_without_dynamodb!();
    let d = Deployment::new().await;
    let from = knowledge_core::domain::SavedFrom {
        session: &d.key.session,
        seq: 2,
    };
    let (org, user) = (&d.key.org, &d.key.user);
    knowledge_core::memory::change(&d.store, org, user, |m| {
        m.save("Prefers metric units", SystemClock.now(), from)
            .is_ok()
    })
    .await
    .unwrap();
    d.counter.take();
    let (status, body, made) = d.invoke(functions::MEMORY).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["notes"][0]["text"], "Prefers metric units");
    assert_eq!(body["notes"][0]["sessionId"], SESSION);
    assert_eq!(body["enabled"], true);
    assert_eq!(made, requests(&[("GetItem", 3)]));

    let mut request = d.event(functions::MEMORY);
    *request.method_mut() = axum::http::Method::DELETE;
    *request.uri_mut() = "/api/memory/notes/m1".parse().unwrap();
    request
        .headers_mut()
        .insert("origin", "https://app.example.com".parse().unwrap());
    let response = d
        .router(functions::MEMORY)
        .await
        .oneshot(request)
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    // The membership, the memory read, and its swap from the value read.
    let made = d.take_checked(functions::MEMORY.name);
    assert_eq!(made, requests(&[("GetItem", 2), ("TransactWriteItems", 1)]));
    let kept = d
        .store
        .get_member_data(org, user, MemberDataKind::AgentMemory, MEMORY_ITEM)
        .await
        .unwrap();
    assert!(!kept.unwrap().contains("metric"));
}

#[tokio::test]
async fn finding_sessions_by_title_is_the_membership_and_one_query_of_the_index() {
    knowledge_test_support::skip_without_dynamodb!();
    let d = Deployment::new().await;
    let mut request = d.event(functions::TITLES);
    *request.method_mut() = axum::http::Method::GET;
    *request.uri_mut() = "/api/managed-agents/find?q=REFUND".parse().unwrap();
    *request.body_mut() = lambda_http::Body::Empty;
    let response = d
        .router(functions::TITLES)
        .await
        .oneshot(request)
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    let body: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(body["sessions"][0]["id"], SESSION);
    assert_eq!(body["complete"], true);
    let made = d.take_checked(functions::TITLES.name);
    assert_eq!(made, requests(&[("GetItem", 1), ("Query", 1)]));
}

#[tokio::test]
async fn cancel_event_on_an_idle_session_changes_nothing() {
    knowledge_test_support::skip_without_dynamodb!();
    let d = Deployment::new().await;
    let before = d.store.get_session(&d.key).await.unwrap();
    d.counter.take();
    let (status, body, made) = d.invoke(functions::CANCEL).await;
    assert_eq!((status, &body), (200, &json!({ "ok": true })));
    assert_eq!(d.store.get_session(&d.key).await.unwrap(), before);
    // The rate window, written alone: a cancel takes a slot even when nothing runs.
    assert_eq!(made, requests(&[("BatchGetItem", 1), ("PutItem", 1)]));
}

#[tokio::test]
async fn cancel_event_on_a_running_turn_stamps_it_with_its_rate_window_in_one_transaction() {
    knowledge_test_support::skip_without_dynamodb!();
    let d = Deployment::new().await;
    let (status, body, _) = d.invoke(functions::MESSAGE).await;
    assert_eq!(status, 200, "{body}");
    let running = d.store.get_session(&d.key).await.unwrap().unwrap();
    assert!(running.in_flight() && running.cancelled_at.is_none());
    d.counter.take();
    let (status, body, made) = d.invoke(functions::CANCEL).await;
    assert_eq!((status, &body), (200, &json!({ "ok": true })));
    let stamped = d.store.get_session(&d.key).await.unwrap().unwrap();
    assert!(stamped.cancelled_at.is_some());
    assert_eq!(stamped.version, running.version + 1);
    assert_eq!(
        made,
        requests(&[("BatchGetItem", 1), ("TransactWriteItems", 1)])
    );
}

#[tokio::test]
async fn delete_session_event_removes_the_session_and_its_events() {
    knowledge_test_support::skip_without_dynamodb!();
    let d = Deployment::new().await;
    let (status, body, made) = d.invoke(functions::DELETE_SESSION).await;
    assert_eq!((status, &body), (200, &json!({ "ok": true })));
    assert_eq!(d.store.rows_for(&d.key).await.unwrap(), (0, 0));
    assert_eq!(
        made,
        // The mark (`deleting`) is the session record alone: a conditional PutItem.
        requests(&[
            ("BatchWriteItem", 1),
            ("DeleteItem", 1),
            ("GetItem", 2),
            ("PutItem", 1),
            ("Query", 1)
        ])
    );
}
