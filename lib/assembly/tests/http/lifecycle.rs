//! The interface's state table, a test per row, plus the run and cancel rules of DESIGN.md.

use serde_json::json;

use crate::support::{Api, GatedAgent, kinds};

#[tokio::test]
async fn creating_a_session_starts_a_run_and_answers_the_opening_message() {
    let api = Api::start().await;
    let r = api
        .post(
            "/api/managed-agents/session",
            json!({ "text": "What is our refund policy?" }),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let id = r.body["id"].as_str().unwrap();
    assert!(id.starts_with("ses_"));
    assert!(r.body["runId"].as_str().unwrap().starts_with("run_"));
    assert_eq!(r.body["noConnectors"], json!(true));
    api.settle().await;
    let t = api.transcript(id).await;
    assert_eq!(t.body["title"], "What is our refund policy?");
    let events = t.body["events"].as_array().unwrap();
    assert_eq!(
        kinds(events),
        ["user_message", "agent_message", "status_idle"]
    );
    assert_eq!(
        events[0]["payload"],
        json!({ "text": "What is our refund policy?" })
    );
    // The built-in agent with nothing connected says so (it never repeats the question).
    assert!(
        events[1]["payload"]["text"]
            .as_str()
            .unwrap()
            .contains("No integrations are connected")
    );
    assert_eq!(events[2]["payload"], json!({}));
}

#[tokio::test]
async fn a_running_session_shows_its_run_id_until_the_turn_finishes_with_status_idle() {
    let agent = GatedAgent::new();
    let api = Api::start_with(agent.clone()).await;
    let r = api
        .post("/api/managed-agents/session", json!({ "text": "hello" }))
        .await;
    let id = r.body["id"].as_str().unwrap();
    agent.asked().await;
    let running = api.transcript(id).await;
    assert_eq!(running.body["workflowRunId"], r.body["runId"]);
    agent.release(1);
    api.settle().await;
    let idle = api.transcript(id).await;
    assert_eq!(idle.body["workflowRunId"], json!(null));
    assert_eq!(
        kinds(idle.body["events"].as_array().unwrap())
            .last()
            .unwrap(),
        "status_idle"
    );
}

#[tokio::test]
async fn a_message_on_an_idle_session_is_logged_and_resumes_the_workflow() {
    let api = Api::start().await;
    let id = api.create("first").await;
    api.settle().await;
    let r = api.message(&id, "second").await;
    assert_eq!((r.status, &r.body), (200, &json!({ "ok": true })));
    api.settle().await;
    let events = api.all_events(&id).await;
    assert_eq!(
        kinds(&events),
        [
            "user_message",
            "agent_message",
            "status_idle",
            "user_message",
            "agent_message",
            "status_idle"
        ]
    );
    assert_eq!(events[3]["payload"]["text"], "second");
    assert!(
        events[4]["payload"]["text"]
            .as_str()
            .unwrap()
            .contains("No integrations are connected")
    );
}

#[tokio::test]
async fn a_message_during_a_turn_queues_behind_it_and_gets_its_own_turn() {
    let agent = GatedAgent::new();
    let api = Api::start_with(agent.clone()).await;
    let id = api.create("one").await;
    assert_eq!(agent.asked().await, "one");
    assert_eq!(api.message(&id, "two").await.status, 200);
    // The follow-up is in the log at once, before the in-flight turn ends.
    let now = api.all_events(&id).await;
    assert_eq!(kinds(&now), ["user_message", "user_message"]);
    agent.release(1);
    assert_eq!(agent.asked().await, "two");
    agent.release(1);
    api.settle().await;
    let events = api.all_events(&id).await;
    assert_eq!(
        kinds(&events),
        [
            "user_message",
            "user_message",
            "agent_message",
            "status_idle",
            "agent_message",
            "status_idle"
        ]
    );
    assert_eq!(events[2]["payload"]["text"], "answer to: one");
    assert_eq!(events[4]["payload"]["text"], "answer to: two");
}

#[tokio::test]
async fn cancel_stamps_the_session_and_the_workflow_exits_with_one_status_terminated() {
    let agent = GatedAgent::new();
    let api = Api::start_with(agent.clone()).await;
    let id = api.create("slow question").await;
    agent.asked().await;
    let r = api.cancel(&id).await;
    assert_eq!((r.status, &r.body), (200, &json!({ "ok": true })));
    api.settle().await;
    let stored = api
        .svc
        .store
        .get_session(&api.key(&id))
        .await
        .unwrap()
        .unwrap();
    assert!(stored.cancelled_at.is_some());
    let t = api.transcript(&id).await;
    assert_eq!(t.status, 200, "the transcript stays readable");
    assert_eq!(t.body["workflowRunId"], json!(null));
    assert_eq!(
        kinds(t.body["events"].as_array().unwrap()),
        ["user_message", "status_terminated"]
    );
}

#[tokio::test]
async fn cancelling_again_answers_already_cancelled_and_keeps_the_first_timestamp() {
    let agent = GatedAgent::new();
    let api = Api::start_with(agent.clone()).await;
    let id = api.create("slow question").await;
    agent.asked().await;
    assert_eq!(api.cancel(&id).await.body, json!({ "ok": true }));
    let first = api
        .svc
        .store
        .get_session(&api.key(&id))
        .await
        .unwrap()
        .unwrap()
        .cancelled_at;
    assert!(first.is_some(), "the first cancel stamps the session");
    api.clock.advance(5_000);
    let again = api.cancel(&id).await;
    assert_eq!(
        (again.status, &again.body),
        (200, &json!({ "ok": true, "alreadyCancelled": true }))
    );
    api.settle().await;
    let after_exit = api.cancel(&id).await;
    assert_eq!(
        after_exit.body,
        json!({ "ok": true, "alreadyCancelled": true })
    );
    let last = api
        .svc
        .store
        .get_session(&api.key(&id))
        .await
        .unwrap()
        .unwrap()
        .cancelled_at;
    assert_eq!(first, last);
}

#[tokio::test]
async fn cancel_of_a_session_that_is_not_running_changes_nothing() {
    let api = Api::start().await;
    let id = api.create("quick").await;
    api.settle().await;
    let before = api.all_events(&id).await;
    let r = api.cancel(&id).await;
    assert_eq!((r.status, &r.body), (200, &json!({ "ok": true })));
    assert_eq!(api.all_events(&id).await, before);
    let stored = api
        .svc
        .store
        .get_session(&api.key(&id))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.cancelled_at, None);
}

#[tokio::test]
async fn a_terminated_run_writes_status_terminated_once_and_nothing_after_it() {
    let agent = GatedAgent::new();
    let api = Api::start_with(agent.clone()).await;
    let id = api.create("one").await;
    agent.asked().await;
    api.message(&id, "queued").await;
    api.cancel(&id).await;
    api.cancel(&id).await;
    agent.release(5);
    api.settle().await;
    let events = api.all_events(&id).await;
    let k = kinds(&events);
    assert_eq!(k.iter().filter(|t| *t == "status_terminated").count(), 1);
    assert_eq!(k.last().unwrap(), "status_terminated");
    // The queued follow-up stays in the log, unanswered by the cancelled run.
    assert_eq!(k, ["user_message", "user_message", "status_terminated"]);
}

#[tokio::test]
async fn a_follow_up_after_cancel_starts_a_fresh_run_that_a_second_cancel_really_cancels() {
    let agent = GatedAgent::new();
    let api = Api::start_with(agent.clone()).await;
    let id = api.create("one").await;
    agent.asked().await;
    api.cancel(&id).await;
    api.settle().await;
    assert_eq!(api.message(&id, "two").await.status, 200);
    assert_eq!(agent.asked().await, "two");
    let t = api.transcript(&id).await;
    assert!(
        t.body["workflowRunId"].is_string(),
        "a new run is in flight"
    );
    let second = api.cancel(&id).await;
    assert_eq!(
        second.body,
        json!({ "ok": true }),
        "not alreadyCancelled: the new run is cancelled now"
    );
    api.settle().await;
    let k = kinds(&api.all_events(&id).await);
    assert_eq!(
        k,
        [
            "user_message",
            "status_terminated",
            "user_message",
            "status_terminated"
        ]
    );
}

#[tokio::test]
async fn a_message_right_after_cancel_finishes_the_cancelled_run_and_is_answered() {
    let agent = GatedAgent::new();
    let api = Api::start_with(agent.clone()).await;
    let id = api.create("one").await;
    agent.asked().await;
    api.cancel(&id).await;
    // No waiting for the cancelled run to exit: the message takes over at once.
    assert_eq!(api.message(&id, "two").await.status, 200);
    assert_eq!(agent.asked().await, "two");
    agent.release(1);
    api.settle().await;
    let events = api.all_events(&id).await;
    assert_eq!(
        kinds(&events),
        [
            "user_message",
            "status_terminated",
            "user_message",
            "agent_message",
            "status_idle"
        ]
    );
    assert_eq!(events[3]["payload"]["text"], "answer to: two");
}

#[tokio::test]
async fn deleting_a_running_session_cancels_it_then_removes_it_and_nothing_is_written_later() {
    let agent = GatedAgent::new();
    let api = Api::start_with(agent.clone()).await;
    let id = api.create("one").await;
    agent.asked().await;
    let r = api.delete_as(&api.user, &id).await;
    assert_eq!((r.status, &r.body), (200, &json!({ "ok": true })));
    agent.release(1);
    api.settle().await;
    assert_eq!(api.svc.store.rows_for(&api.key(&id)).await.unwrap(), (0, 0));
    assert_eq!(api.transcript(&id).await.status, 404);
    assert_eq!(api.message(&id, "more").await.status, 404);
}

#[tokio::test]
async fn deleting_an_idle_session_removes_it_and_all_its_events() {
    let api = Api::start().await;
    let id = api.create("one").await;
    api.settle().await;
    api.message(&id, "two").await;
    api.settle().await;
    assert_eq!(api.svc.store.rows_for(&api.key(&id)).await.unwrap(), (1, 6));
    assert_eq!(api.delete_as(&api.user, &id).await.status, 200);
    assert_eq!(api.svc.store.rows_for(&api.key(&id)).await.unwrap(), (0, 0));
    let list = api.get("/api/managed-agents/sessions").await;
    assert_eq!(list.body["sessions"], json!([]));
}

#[tokio::test]
async fn an_agent_failure_ends_the_turn_with_an_error_event_and_the_session_stays_usable() {
    let api = Api::start_with(std::sync::Arc::new(crate::support::FailingAgent)).await;
    let id = api.create("will fail").await;
    api.settle().await;
    let events = api.all_events(&id).await;
    assert_eq!(kinds(&events), ["user_message", "error", "status_idle"]);
    assert_eq!(events[1]["payload"]["code"], "agent_failed");
    let message = events[1]["payload"]["message"].as_str().unwrap();
    assert!(
        !message.is_empty() && !message.contains("secret"),
        "internal detail leaked: {message}"
    );
    assert_eq!(api.transcript(&id).await.body["workflowRunId"], json!(null));
    assert_eq!(api.message(&id, "try again").await.status, 200);
    api.settle().await;
    assert_eq!(kinds(&api.all_events(&id).await).len(), 6);
}
