//! The real provider adapters (`OpenAiAgent`, `AnthropicAgent`) behind the real HTTP server,
//! pointed at the scripted fake provider of `knowledge_providers::fake`: what a session's
//! transcript shows, and what the provider was sent, for answers, tool calls, a cancel, and
//! each kind of provider failure. Every behaviour is one generic test, run once per wire
//! format by `for_each_provider!`.

use std::sync::Arc;
use std::time::Duration;

use axum::http::Method;
use knowledge_assembly::workflow::AGENT_DEFINITION;
use knowledge_core::adapters::integrations::FixedIntegrations;
use knowledge_core::memory::{FORGET_TOOL, SAVE_TOOL};
use knowledge_core::ports::Integrations;
use knowledge_core::steps::errors;
use knowledge_providers::fake::{
    AgentSetup, COST, Fake, KEY, PATIENCE, Reply, Seen, Wire, nowhere,
};
use serde_json::{Value, json};

use crate::support::{Api, Setup, docs, kinds};

const SESSION: &str = "/api/managed-agents/session";

/// A service whose agent is `W`'s adapter pointed at a fresh fake provider, which answers the
/// adapter's health probes itself and every other request from its script.
pub(crate) async fn service<W: Wire>(integrations: Arc<dyn Integrations>) -> (Api, Fake) {
    let fake = Fake::start().await;
    fake.always(Method::GET, W::models_path(), 200, json!({"data": []}));
    let agent = W::agent(&fake.base(), AgentSetup::default());
    let api = Api::start_setup(Setup {
        integrations,
        ..Setup::new(agent)
    })
    .await;
    (api, fake)
}

pub(crate) fn no_integrations() -> Arc<dyn Integrations> {
    Arc::new(FixedIntegrations::new())
}

/// The provider calls the fake received, in order.
pub(crate) fn calls<W: Wire>(fake: &Fake) -> Vec<Seen> {
    fake.seen_at(&Method::POST, W::chat_path())
}

/// How many times the state machine runs `CallAgent` for an `AgentFailed` step: once, and then
/// as often as its Retry for that error allows.
fn attempts_on_agent_failure() -> usize {
    let definition: Value = serde_json::from_str(AGENT_DEFINITION).unwrap();
    let retries = definition["States"]["CallAgent"]["Retry"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| {
            r["ErrorEquals"]
                .as_array()
                .unwrap()
                .contains(&json!(errors::AGENT))
        })
        .expect("CallAgent retries AgentFailed");
    1 + retries["MaxAttempts"].as_u64().unwrap() as usize
}

/// Runs the session's turns to their end and returns its events.
pub(crate) async fn settled(api: &Api, session: &str) -> Vec<Value> {
    api.settle().await;
    api.all_events(session).await
}

async fn a_plain_answer_is_logged_and_its_priced_usage_is_charged_to_the_organisation<W: Wire>() {
    let (api, fake) = service::<W>(no_integrations()).await;
    fake.script(Reply::json(200, W::answer("Use the cancel endpoint.")));

    let id = api.create("How do I cancel?").await;
    let events = settled(&api, &id).await;

    assert_eq!(
        kinds(&events),
        ["user_message", "agent_message", "status_idle"]
    );
    assert_eq!(events[1]["payload"]["text"], "Use the cancel endpoint.");
    let usage = api.admin().usage(&api.user.org).await.unwrap();
    assert_eq!(usage.cost_micros, COST);
    assert_eq!(
        fake.seen_at(&Method::GET, W::models_path()).len(),
        1,
        "creating the session checked the provider's health"
    );
    let [call] = &calls::<W>(&fake)[..] else {
        panic!("one provider call expected: {:?}", fake.seen())
    };
    W::assert_authenticated(call);
    let (_, asked) = W::system_and_question(&call.body);
    assert_eq!(asked, "How do I cancel?");
    // No integration: only the memory's tools, which an LLM agent is always offered.
    assert_eq!(W::declared_tools(&call.body), [SAVE_TOOL, FORGET_TOOL]);
}

async fn a_tool_call_round_trip_logs_the_search_and_sends_its_result_back_linked_by_id<W: Wire>() {
    let (api, fake) = service::<W>(docs()).await;
    fake.script(Reply::json(
        200,
        W::tool_call("provider_call_1", "search_docs", json!({"query": "cancel"})),
    ))
    .script(Reply::json(200, W::answer("POST the cancel endpoint.")));

    let id = api.create("How do I stop an answer?").await;
    let events = settled(&api, &id).await;

    assert_eq!(
        kinds(&events),
        [
            "user_message",
            "tool_use",
            "tool_result",
            "agent_message",
            "status_idle"
        ]
    );
    assert_eq!(
        events[1]["payload"],
        json!({"tool": "search_docs", "input": {"query": "cancel"}})
    );
    assert_eq!(events[2]["payload"]["tool"], "search_docs");
    let output = &events[2]["payload"]["output"];
    assert_eq!(output[0]["source"], "cancel.md", "{output}");
    assert_eq!(events[3]["payload"]["text"], "POST the cancel endpoint.");

    let [first, second] = &calls::<W>(&fake)[..] else {
        panic!("two provider calls expected: {:?}", fake.seen())
    };
    assert_eq!(
        W::declared_tools(&first.body),
        [SAVE_TOOL, FORGET_TOOL, "search_docs"]
    );
    assert_eq!(W::tool_choice(&first.body).as_deref(), Some("auto"));
    let exchange = W::exchange(&second.body);
    assert_eq!(exchange.tool, "search_docs");
    assert_eq!(exchange.input, json!({"query": "cancel"}));
    assert!(!exchange.call_id.is_empty());
    assert_eq!(
        exchange.call_id, exchange.result_id,
        "the result answers the call"
    );
    let sent: Value = serde_json::from_str(&exchange.output).unwrap();
    assert_eq!(&sent, output, "the provider got the docs output as logged");
}

async fn cancelling_a_slow_answer_aborts_the_provider_request_and_terminates_the_run<W: Wire>() {
    let (api, fake) = service::<W>(no_integrations()).await;
    fake.script(Reply::Hold);

    let id = api.create("Slow?").await;
    fake.arrival_at(&Method::POST, W::chat_path()).await;
    assert_eq!(api.cancel(&id).await.status, 200);

    fake.abort().await;
    let events = settled(&api, &id).await;
    assert_eq!(kinds(&events), ["user_message", "status_terminated"]);
    assert_eq!(
        calls::<W>(&fake).len(),
        1,
        "the cancelled call was not retried"
    );
    let usage = api.admin().usage(&api.user.org).await.unwrap();
    assert_eq!(usage.cost_micros, 0);
}

async fn cancelling_an_answer_mid_stream_drops_the_stream_at_once_and_leaves_no_draft<W: Wire>() {
    let (api, fake) = service::<W>(no_integrations()).await;
    fake.pace(Duration::from_millis(200));
    let words: Vec<String> = (1..=50).map(|n| format!("word{n}")).collect();
    fake.script(Reply::json(200, W::answer(&words.join(" "))));

    let id = api.create("Go on").await;
    // The draft shows while the answer streams (ten seconds of it in all).
    let asked = std::time::Instant::now();
    let shown = loop {
        let t = api.transcript(&id).await.body;
        if let Some(text) = t["draft"]["text"].as_str() {
            break text.to_owned();
        }
        assert!(asked.elapsed() < PATIENCE, "no draft in time: {t}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(words.join(" ").starts_with(&shown), "{shown}");
    assert_eq!(api.cancel(&id).await.status, 200);
    // The provider's stream is dropped at once, long before its last word.
    fake.abort().await;
    assert!(
        asked.elapsed() < Duration::from_secs(8),
        "{:?}",
        asked.elapsed()
    );
    let events = settled(&api, &id).await;
    assert_eq!(kinds(&events), ["user_message", "status_terminated"]);
    assert!(api.transcript(&id).await.body.get("draft").is_none());
}

async fn a_server_error_is_retried_by_the_workflow_and_the_turn_is_answered<W: Wire>() {
    let (api, fake) = service::<W>(no_integrations()).await;
    fake.script(Reply::json(500, W::error("server_error")))
        .script(Reply::json(200, W::answer("Fine now.")));

    let id = api.create("Hello?").await;
    let events = settled(&api, &id).await;

    assert_eq!(
        kinds(&events),
        ["user_message", "agent_message", "status_idle"]
    );
    assert_eq!(events[1]["payload"]["text"], "Fine now.");
    let [first, retry] = &calls::<W>(&fake)[..] else {
        panic!("two provider calls expected: {:?}", fake.seen())
    };
    assert_eq!(first.body, retry.body, "the retry asked the same question");
}

async fn a_rate_limit_is_waited_out_as_long_as_the_provider_asks_and_the_turn_is_answered<
    W: Wire,
>() {
    let (api, fake) = service::<W>(no_integrations()).await;
    fake.script(Reply::json(429, W::error("rate_limit_error")).with_header("retry-after", "1"))
        .script(Reply::json(200, W::answer("After the wait.")));

    let id = api.create("Hello?").await;
    let events = settled(&api, &id).await;

    assert_eq!(
        kinds(&events),
        ["user_message", "agent_message", "status_idle"]
    );
    assert_eq!(events[1]["payload"]["text"], "After the wait.");
    let [first, second] = &calls::<W>(&fake)[..] else {
        panic!("two provider calls expected: {:?}", fake.seen())
    };
    let waited = second.at.duration_since(first.at);
    assert!(
        waited >= Duration::from_secs(1),
        "the second call came {waited:?} after the first"
    );
}

async fn an_unreachable_provider_refuses_a_new_session_with_502_and_writes_nothing<W: Wire>() {
    let agent = W::agent(&nowhere().await, AgentSetup::default());
    let api = Api::start_with(agent).await;
    let before = api.admin().usage(&api.user.org).await.unwrap();

    let r = api.post(SESSION, json!({"text": "Anyone there?"})).await;

    assert_eq!(
        (r.status, r.code()),
        (502, "provider_unavailable"),
        "{}",
        r.body
    );
    let listed = api.get("/api/managed-agents/sessions").await;
    assert_eq!(listed.status, 200);
    assert_eq!(listed.body["sessions"], json!([]));
    let after = api.admin().usage(&api.user.org).await.unwrap();
    assert_eq!(after.queries, before.queries);
}

async fn malformed_replies_until_the_retries_run_out_fail_the_turn_and_the_session_stays_usable<
    W: Wire,
>() {
    let (api, fake) = service::<W>(no_integrations()).await;
    let attempts = attempts_on_agent_failure();
    for i in 0..attempts {
        fake.script(if i % 2 == 0 {
            Reply::raw(200, "<html>Bad gateway</html>")
        } else {
            Reply::json(200, json!({"result": "ok"}))
        });
    }

    let id = api.create("Hello?").await;
    let events = settled(&api, &id).await;

    assert_eq!(kinds(&events), ["user_message", "error", "status_idle"]);
    assert_eq!(events[1]["payload"]["code"], "agent_failed");
    assert_eq!(calls::<W>(&fake).len(), attempts);

    fake.script(Reply::json(200, W::answer("Back again.")));
    assert_eq!(api.message(&id, "Still there?").await.status, 200);
    let events = settled(&api, &id).await;
    assert_eq!(
        kinds(&events[3..]),
        ["user_message", "agent_message", "status_idle"]
    );
    assert_eq!(events[4]["payload"]["text"], "Back again.");
    assert_eq!(calls::<W>(&fake).len(), attempts + 1);
}

async fn a_refused_key_ends_the_turn_with_agent_rejected_after_one_provider_call<W: Wire>() {
    let (api, fake) = service::<W>(no_integrations()).await;
    fake.script(Reply::json(401, W::error("authentication_error")));

    let id = api.create("Hello?").await;
    let events = settled(&api, &id).await;

    assert_eq!(kinds(&events), ["user_message", "error", "status_idle"]);
    assert_eq!(events[1]["payload"]["code"], "agent_rejected");
    assert_eq!(calls::<W>(&fake).len(), 1, "a refusal is not retried");
    let transcript = serde_json::to_string(&events).unwrap();
    assert!(!transcript.contains(KEY), "{transcript}");
}

knowledge_providers::for_each_provider!(
    cancelling_an_answer_mid_stream_drops_the_stream_at_once_and_leaves_no_draft,
    a_plain_answer_is_logged_and_its_priced_usage_is_charged_to_the_organisation,
    a_tool_call_round_trip_logs_the_search_and_sends_its_result_back_linked_by_id,
    cancelling_a_slow_answer_aborts_the_provider_request_and_terminates_the_run,
    a_server_error_is_retried_by_the_workflow_and_the_turn_is_answered,
    a_rate_limit_is_waited_out_as_long_as_the_provider_asks_and_the_turn_is_answered,
    an_unreachable_provider_refuses_a_new_session_with_502_and_writes_nothing,
    malformed_replies_until_the_retries_run_out_fail_the_turn_and_the_session_stays_usable,
    a_refused_key_ends_the_turn_with_agent_rejected_after_one_provider_call,
);
