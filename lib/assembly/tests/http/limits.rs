//! The limits table: sliding-window rate limits, the monthly quota and the cost cap, all kept in
//! the store, plus transcript paging.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use knowledge_assembly::operator::{OperatorError, OrgChanges};
use knowledge_core::adapters::agent::BuiltinAgent;
use knowledge_core::domain::{EventKind, Plan};
use knowledge_core::ids::{EventId, SessionId};
use reqwest::Method;
use serde_json::json;

use knowledge_core::ports::{
    Agent, AgentAction, AgentError, AgentReply, AgentRequest, TokenUsage, ToolCall,
};
use knowledge_core::steps::MAX_AGENT_CALLS;

use crate::support::{Api, GatedAgent, PricedAgent, Setup, admin, docs};

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
async fn the_operators_org_set_keeps_what_an_admin_set_and_says_so_in_the_audit_log() {
    let api = Api::start().await;
    let limits = json!({ "monthlyQueryQuota": 50, "memberQuestionCap": 4 });
    let set = admin(&api, Method::PUT, "/usage/limits", Some(limits)).await;
    assert_eq!(set.status, 200);
    let off = admin(
        &api,
        Method::PUT,
        "/memory",
        Some(json!({ "enabled": false })),
    )
    .await;
    assert_eq!(off.status, 200);
    let changes = OrgChanges {
        plan: Some(Plan::Pro),
        cap_micros: Some(Some(3_000_000)),
        ..Default::default()
    };
    let org = api
        .admin()
        .update_org(&api.user.org, changes)
        .await
        .unwrap();
    assert_eq!(
        (org.plan, org.cost_cap_micros, org.monthly_query_quota),
        (Plan::Pro, Some(3_000_000), Some(50))
    );
    assert_eq!((org.member_caps.queries, org.memory_off), (Some(4), true));
    let log = admin(&api, Method::GET, "/audit?action=org.changed", None).await;
    let entry = &log.body["entries"][0];
    assert_eq!(entry["actor"], "command-line");
    assert_eq!(entry["to"], "plan pro, cost cap $3.00");
    // Nothing to change is said, and writes nothing.
    let nothing = api
        .admin()
        .update_org(&api.user.org, OrgChanges::default())
        .await;
    assert!(
        matches!(nothing, Err(OperatorError::Invalid(_))),
        "{nothing:?}"
    );
    let log = admin(&api, Method::GET, "/audit?action=org.changed", None).await;
    assert_eq!(log.body["entries"].as_array().unwrap().len(), 1);
    // A create of an organisation that exists is refused, and resets nothing.
    let again = api
        .admin()
        .create_org(Some(api.user.org.clone()), "Again", Plan::Free)
        .await;
    assert!(matches!(again, Err(OperatorError::Invalid(_))), "{again:?}");
    let org = api.admin().org(&api.user.org).await.unwrap();
    assert_eq!((org.plan, org.member_caps.queries), (Plan::Pro, Some(4)));
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

/// An agent whose every step costs `micros` and that searches again at each step until it
/// must answer, so a turn takes as many paid steps as the workflow allows. It answers nothing
/// until `open` is true.
struct SearchingAgent {
    micros: u64,
    calls: AtomicU64,
    open: tokio::sync::watch::Sender<bool>,
}

#[async_trait]
impl Agent for SearchingAgent {
    async fn health(&self) -> Result<(), AgentError> {
        Ok(())
    }

    async fn respond(&self, request: AgentRequest) -> Result<AgentReply, AgentError> {
        let mut open = self.open.subscribe();
        open.wait_for(|open| *open).await.expect("the gate is kept");
        self.calls.fetch_add(1, Ordering::SeqCst);
        let action = if request.must_answer {
            AgentAction::Answer("done searching".into())
        } else {
            AgentAction::UseTools(vec![ToolCall {
                tool: request.tools[0].name.clone(),
                input: json!({ "query": "cancel" }),
            }])
        };
        Ok(AgentReply {
            action,
            model: "test-model".to_owned(),
            usage: TokenUsage::default(),
            cost_micros: self.micros,
        })
    }
}

#[tokio::test]
async fn concurrent_turns_overspend_the_cost_cap_by_at_most_one_step_each() {
    const STEP: u64 = 300;
    const CAP: u64 = 1_000;
    const TURNS: u64 = 4;
    let agent = Arc::new(SearchingAgent {
        micros: STEP,
        calls: AtomicU64::new(0),
        open: tokio::sync::watch::Sender::new(false),
    });
    let api = Api::start_setup(Setup {
        integrations: docs(),
        ..Setup::new(agent.clone())
    })
    .await;
    api.admin()
        .update_org(
            &api.user.org,
            OrgChanges {
                cap_micros: Some(Some(CAP)),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let questions: Vec<String> = (0..TURNS).map(|i| format!("question {i}")).collect();
    // Every turn is admitted before any spends: what is measured is the spending of turns
    // already running, not whether a late question is let in (it is not, once the cap is met).
    let ids = futures_util::future::join_all(questions.iter().map(|q| api.create(q))).await;
    agent.open.send_replace(true);
    api.settle().await;

    // Unbounded, each turn would take MAX_AGENT_CALLS paid steps.
    let spent = api.admin().usage(&api.user.org).await.unwrap().cost_micros;
    assert!(spent >= CAP, "the turns reach the cap: {spent}");
    assert!(spent <= CAP + TURNS * STEP, "overspent: {spent}");
    assert_eq!(spent, agent.calls.load(Ordering::SeqCst) * STEP);
    assert!(spent < TURNS * u64::from(MAX_AGENT_CALLS) * STEP);
    let mut stopped = 0;
    for id in &ids {
        let events = api.all_events(id).await;
        let k = crate::support::kinds(&events);
        assert_eq!(k.last().map(String::as_str), Some("status_idle"), "{k:?}");
        if k.contains(&"error".to_owned()) {
            let error = events.iter().find(|e| e["type"] == "error").unwrap();
            assert_eq!(error["payload"]["code"], "cost_cap_reached");
            stopped += 1;
        }
    }
    assert!(stopped >= 1, "at least one turn was stopped by the cap");
    let r = api.message(&ids[0], "one more").await;
    assert_eq!((r.status, r.code()), (429, "cost_cap_reached"));
    assert_eq!(r.body["capUsd"], json!(0.001));
    assert_eq!(r.body["monthToDateUsd"], json!(spent as f64 / 1e6));
}

#[tokio::test]
async fn a_follow_up_queued_behind_the_turn_that_crosses_the_cap_is_not_answered() {
    let agent = GatedAgent::new();
    let api = Api::start_setup(Setup::new(Arc::new(PricedGate {
        inner: agent.clone(),
        micros: 2_000,
    })))
    .await;
    api.admin()
        .update_org(
            &api.user.org,
            OrgChanges {
                cap_micros: Some(Some(1_000)),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let id = api.create("first").await;
    assert_eq!(agent.asked().await, "first");
    // Accepted: the spend is still under the cap while the first answer is in flight.
    assert_eq!(api.message(&id, "second").await.status, 200);
    agent.release(1);
    api.settle().await;
    let events = api.all_events(&id).await;
    assert_eq!(
        crate::support::kinds(&events),
        [
            "user_message",
            "user_message",
            "agent_message",
            "status_idle",
            "error",
            "status_idle"
        ]
    );
    assert_eq!(events[4]["payload"]["code"], "cost_cap_reached");
    assert_eq!(
        api.admin().usage(&api.user.org).await.unwrap().cost_micros,
        2_000,
        "the queued turn made no provider call"
    );
}

/// A gated agent whose answers cost `micros`.
pub(crate) struct PricedGate {
    pub(crate) inner: Arc<GatedAgent>,
    pub(crate) micros: u64,
}

#[async_trait]
impl Agent for PricedGate {
    async fn health(&self) -> Result<(), AgentError> {
        Ok(())
    }

    async fn respond(&self, request: AgentRequest) -> Result<AgentReply, AgentError> {
        let mut reply = self.inner.respond(request).await?;
        reply.cost_micros = self.micros;
        Ok(reply)
    }
}
