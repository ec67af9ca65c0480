//! The limits table: sliding-window rate limits, the monthly quota and the cost cap, all kept in
//! the store, plus transcript paging.

use std::sync::Arc;

use knowledge_core::agent::BuiltinAgent;
use knowledge_core::domain::EventKind;
use knowledge_core::ids::{EventId, SessionId};
use knowledge_local::admin::OrgChanges;
use serde_json::json;

use crate::support::{Api, PricedAgent};

const SESSION: &str = "/api/managed-agents/session";

#[tokio::test]
async fn the_eleventh_session_within_a_minute_is_429_with_retry_after() {
    let api = Api::start().await;
    for i in 0..10 {
        api.create(&format!("q{i}")).await;
    }
    let r = api.post(SESSION, json!({ "text": "one too many" })).await;
    assert_eq!(r.status, 429);
    assert_eq!(r.code(), "rate_limited");
    let retry = r.retry_after().expect("Retry-After header");
    assert!((1..=60).contains(&retry), "{retry}");
    assert_eq!(r.body["retryAfterSeconds"], json!(retry));
    // Once the window has slid past the first creation, a slot is free again.
    api.clock.advance(60_001);
    assert_eq!(
        api.post(SESSION, json!({ "text": "later" })).await.status,
        200
    );
}

#[tokio::test]
async fn the_twenty_first_session_within_an_hour_is_429_until_the_hour_slides() {
    let api = Api::start().await;
    for round in 0..2 {
        for i in 0..10 {
            api.create(&format!("r{round} q{i}")).await;
        }
        api.clock.advance(61_000);
    }
    let r = api.post(SESSION, json!({ "text": "21st" })).await;
    assert_eq!((r.status, r.code()), (429, "rate_limited"));
    let retry = r.retry_after().unwrap();
    assert!(retry > 60 && retry <= 3600 - 122 + 1, "{retry}");
    api.clock.advance(retry as i64 * 1000);
    assert_eq!(
        api.post(SESSION, json!({ "text": "after the hour" }))
            .await
            .status,
        200
    );
}

#[tokio::test]
async fn the_sixty_first_message_within_a_minute_is_429() {
    let api = Api::start().await;
    let id = api.create("start").await;
    for i in 0..60 {
        assert_eq!(
            api.message(&id, &format!("m{i}")).await.status,
            200,
            "message {i}"
        );
    }
    let r = api.message(&id, "61st").await;
    assert_eq!((r.status, r.code()), (429, "rate_limited"));
    assert!(r.retry_after().is_some());
    api.settle().await;
    let users = api
        .all_events(&id)
        .await
        .iter()
        .filter(|e| e["type"] == "user_message")
        .count();
    assert_eq!(users, 61, "the refused message was not logged");
}

#[tokio::test]
async fn the_thirty_first_cancel_within_a_minute_is_429() {
    let api = Api::start().await;
    let id = api.create("start").await;
    for _ in 0..30 {
        assert_eq!(api.cancel(&id).await.status, 200);
    }
    let r = api.cancel(&id).await;
    assert_eq!((r.status, r.code()), (429, "rate_limited"));
    assert!(r.retry_after().is_some());
}

#[tokio::test]
async fn rate_limits_hold_across_two_services_sharing_one_data_directory() {
    let first = Api::start().await;
    let second = Api::start_on(first.dir.clone(), Arc::new(BuiltinAgent)).await;
    for i in 0..5 {
        first.create(&format!("a{i}")).await;
        second.create(&format!("b{i}")).await;
    }
    assert_eq!(
        first.post(SESSION, json!({ "text": "x" })).await.status,
        429
    );
    assert_eq!(
        second.post(SESSION, json!({ "text": "x" })).await.status,
        429
    );
}

#[tokio::test]
async fn an_exhausted_monthly_quota_is_429_with_retry_after_and_counts_opening_messages() {
    let api = Api::start().await;
    api.admin()
        .update_org(
            &api.user.org,
            OrgChanges {
                quota: Some(Some(2)),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let id = api.create("first query").await;
    assert_eq!(api.message(&id, "second query").await.status, 200);
    let before = api.clock_now();
    let r = api.message(&id, "third query").await;
    let after = api.clock_now();
    assert_eq!((r.status, r.code()), (429, "quota_exhausted"));
    let retry = r.retry_after().unwrap();
    // The server read its clock between these two readings; the month ends at a whole second.
    let until = |t: knowledge_core::clock::Timestamp| {
        knowledge_core::clock::whole_seconds_until(t, t.next_month_start())
    };
    assert!(
        (until(after)..=until(before)).contains(&retry),
        "{retry} outside {}..={}",
        until(after),
        until(before)
    );
    assert!(r.body.get("capUsd").is_none());
    let c = api.post(SESSION, json!({ "text": "new session" })).await;
    assert_eq!((c.status, c.code()), (429, "quota_exhausted"));
    assert_eq!(api.admin().usage(&api.user.org).await.unwrap().queries, 2);
}

#[tokio::test]
async fn a_reached_cost_cap_is_429_with_month_to_date_and_cap_in_dollars() {
    // One answer costs $5.25: the turn under way when the $5 cap is crossed finishes, and
    // is charged; the next query is refused.
    let api = Api::start_with(Arc::new(PricedAgent { micros: 5_250_000 })).await;
    api.admin()
        .update_org(
            &api.user.org,
            OrgChanges {
                cap_micros: Some(Some(5_000_000)),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let id = api.create("expensive question").await;
    api.settle().await;
    let k = crate::support::kinds(&api.all_events(&id).await);
    assert_eq!(k, ["user_message", "agent_message", "status_idle"]);
    let r = api.message(&id, "over the cap").await;
    assert_eq!((r.status, r.code()), (429, "cost_cap_reached"));
    assert_eq!(r.body["monthToDateUsd"], json!(5.25));
    assert_eq!(r.body["capUsd"], json!(5.0));
    assert!(r.retry_after().is_some());
    let c = api.post(SESSION, json!({ "text": "new session" })).await;
    assert_eq!((c.status, c.code()), (429, "cost_cap_reached"));
}

#[tokio::test]
async fn transcript_pages_hold_a_hundred_events_and_has_more_leads_to_the_rest() {
    let api = Api::start().await;
    let key = api.key(SessionId::generate().as_str());
    crate::support::seed_session(&*api.svc.store, &key, api.clock_now(), 250).await;
    let id = key.session.to_string();

    let first = api.transcript(&id).await;
    assert_eq!(first.body["events"].as_array().unwrap().len(), 100);
    assert_eq!(first.body["hasMore"], json!(true));
    assert_eq!(first.body["backfillFailed"], json!(false));
    let all = api.all_events(&id).await;
    assert_eq!(all.len(), 250);
    for (i, e) in all.iter().enumerate() {
        assert_eq!(e["id"], EventId::from_seq(i as u64 + 1).to_string());
        assert_eq!(e["type"], EventKind::UserMessage.as_str());
        assert_eq!(e["payload"]["text"], format!("m{i}"));
    }
    let last = all.last().unwrap()["id"].as_str().unwrap();
    let tail = api
        .get(&format!(
            "/api/managed-agents/transcript?sessionId={id}&sinceEventId={last}"
        ))
        .await;
    assert_eq!(tail.body["events"], json!([]));
    assert_eq!(tail.body["hasMore"], json!(false));
}
