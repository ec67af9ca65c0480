//! Behaviour under concurrent requests: exact rate limits, gap-free ordered logs, and deletes
//! racing the workflow.

use std::collections::HashSet;

use futures_util::future::join_all;
use serde_json::{Value, json};

use crate::support::{Api, GatedAgent, kinds};

#[tokio::test]
async fn fifty_concurrent_creates_by_one_user_give_ten_successes_and_forty_429s() {
    let api = Api::start().await;
    let replies = join_all((0..50).map(|i| {
        api.post(
            "/api/managed-agents/session",
            json!({ "text": format!("q{i}") }),
        )
    }))
    .await;
    let ok = replies.iter().filter(|r| r.status == 200).count();
    let limited: Vec<_> = replies.iter().filter(|r| r.status == 429).collect();
    let statuses: Vec<u16> = replies.iter().map(|r| r.status).collect();
    assert_eq!(ok, 10, "statuses: {statuses:?}");
    let others: Vec<_> = replies
        .iter()
        .filter(|r| r.status != 200 && r.status != 429)
        .map(|r| (r.status, &r.body))
        .collect();
    assert_eq!(limited.len(), 40, "other answers: {others:?}");
    assert!(
        limited
            .iter()
            .all(|r| r.retry_after().is_some_and(|s| (1..=60).contains(&s)))
    );
    api.settle().await;
    assert_eq!(
        api.get("/api/managed-agents/sessions").await.body["sessions"]
            .as_array()
            .unwrap()
            .len(),
        10
    );
}

#[tokio::test]
async fn a_poller_following_cursors_during_concurrent_follow_ups_sees_every_event_once_in_order() {
    let api = Api::start().await;
    let id = api.create("opening").await;
    const FOLLOW_UPS: usize = 20;
    let poll = async {
        let mut seen: Vec<Value> = vec![];
        // Twenty-one turns on the DynamoDB stand-in of a loaded two-core machine: bounded as every
        // wait for all runs to finish is.
        let deadline = tokio::time::Instant::now() + crate::support::SETTLE;
        loop {
            let q = match seen.last() {
                None => format!("/api/managed-agents/transcript?sessionId={id}"),
                Some(e) => format!(
                    "/api/managed-agents/transcript?sessionId={id}&sinceEventId={}",
                    e["id"].as_str().unwrap()
                ),
            };
            let r = api.get(&q).await;
            seen.extend(r.body["events"].as_array().unwrap().iter().cloned());
            let idles = seen.iter().filter(|e| e["type"] == "status_idle").count();
            if idles == FOLLOW_UPS + 1 && !r.body["hasMore"].as_bool().unwrap() {
                return seen;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "poller saw {} events",
                seen.len()
            );
            tokio::task::yield_now().await;
        }
    };
    let send = join_all((0..FOLLOW_UPS).map(|i| {
        let (api, id) = (&api, &id);
        async move { api.message(id, &format!("follow-up {i}")).await }
    }));
    let (seen, sent) = tokio::join!(poll, send);
    assert!(sent.iter().all(|r| r.status == 200));
    api.settle().await;
    // Every event once, in order, with nothing missed: ids are consecutive.
    let ids: Vec<&str> = seen.iter().map(|e| e["id"].as_str().unwrap()).collect();
    let expected: Vec<String> = (1..=seen.len() as u64)
        .map(|n| knowledge_core::ids::EventId::from_seq(n).to_string())
        .collect();
    assert_eq!(ids, expected);
    assert_eq!(seen, api.all_events(&id).await);
    let stamps: Vec<&str> = seen
        .iter()
        .map(|e| e["occurredAt"].as_str().unwrap())
        .collect();
    assert!(
        stamps.windows(2).all(|w| w[0] <= w[1]),
        "ascending by occurredAt"
    );
    // Every follow-up answered once.
    let k = kinds(&seen);
    assert_eq!(
        k.iter().filter(|t| *t == "user_message").count(),
        FOLLOW_UPS + 1
    );
    assert_eq!(
        k.iter().filter(|t| *t == "agent_message").count(),
        FOLLOW_UPS + 1
    );
    let texts: HashSet<&str> = seen
        .iter()
        .filter(|e| e["type"] == "user_message")
        .map(|e| e["payload"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts.len(), FOLLOW_UPS + 1);
}

#[tokio::test]
async fn concurrent_messages_and_cancels_keep_the_log_gap_free_with_at_most_one_terminated_per_run()
{
    let agent = GatedAgent::new();
    let api = Api::start_with(agent.clone()).await;
    let id = api.create("opening").await;
    agent.asked().await;
    let messages = join_all((0..10).map(|i| {
        let (api, id) = (&api, &id);
        async move { api.message(id, &format!("m{i}")).await }
    }));
    let cancels = join_all((0..10).map(|_| api.cancel(&id)));
    let (m, c) = tokio::join!(messages, cancels);
    assert!(m.iter().chain(c.iter()).all(|r| r.status == 200));
    agent.release(100);
    api.settle().await;
    let events = api.all_events(&id).await;
    let seqs: Vec<u64> = events
        .iter()
        .map(|e| e["id"].as_str().unwrap()[4..].parse().unwrap())
        .collect();
    assert_eq!(seqs, (1..=events.len() as u64).collect::<Vec<_>>());
    let k = kinds(&events);
    assert_eq!(k.iter().filter(|t| *t == "user_message").count(), 11);
    // After the last status_terminated or status_idle nothing is pending: the run ended cleanly.
    let t = api.transcript(&id).await;
    assert_eq!(t.body["workflowRunId"], json!(null));
    assert!(["status_idle", "status_terminated"].contains(&k.last().unwrap().as_str()));
    // No two status_terminated without a user message between them (one per run).
    let mut last_was_terminated = false;
    for kind in &k {
        if kind == "status_terminated" {
            assert!(
                !last_was_terminated,
                "two status_terminated for one run: {k:?}"
            );
            last_was_terminated = true;
        } else if kind == "user_message" {
            last_was_terminated = false;
        }
    }
}

#[tokio::test]
async fn after_a_delete_racing_the_workflow_nothing_of_the_session_remains() {
    let agent = GatedAgent::new();
    let api = Api::start_with(agent.clone()).await;
    let id = api.create("opening").await;
    agent.asked().await;
    let sends = join_all((0..5).map(|i| {
        let (api, id) = (&api, &id);
        async move { api.message(id, &format!("m{i}")).await }
    }));
    let delete = async {
        agent.release(1);
        api.delete_as(&api.user, &id).await
    };
    let (_, deleted) = tokio::join!(sends, delete);
    assert_eq!(deleted.status, 200);
    agent.release(100);
    api.settle().await;
    assert_eq!(api.svc.store.rows_for(&api.key(&id)).await.unwrap(), (0, 0));
}
