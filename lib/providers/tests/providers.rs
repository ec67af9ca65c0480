//! Both adapters against fake providers ([`knowledge_providers::fake`], feature `fake`): real
//! HTTP servers on 127.0.0.1 that speak each wire format, follow a script of replies and record
//! what they were sent. Every behaviour is one generic test, run once per provider by
//! `for_each_provider!`.

use std::time::Duration;

use axum::http::Method;
use knowledge_core::clock::Timestamp;
use knowledge_core::domain::{Event, EventKind};
use knowledge_core::ids::OrgId;
use knowledge_core::ports::{AgentAction, AgentError, AgentRequest, Drafts, ToolCall, ToolSpec};
use knowledge_providers::HealthPolicy;
use knowledge_providers::fake::{
    AgentSetup, Anthropic, COST, Exchange, Fake, KEY, OpenAi, Reply, USAGE, Wire, bounded, nowhere,
};
use serde_json::{Value, json};
use tokio::sync::oneshot;

// --- Requests ----------------------------------------------------------------------------

fn event(seq: u64, kind: EventKind, payload: Value) -> Event {
    Event {
        seq,
        body: knowledge_core::domain::EventBody::from_stored(kind, payload).unwrap(),
        occurred_at: Timestamp(0),
    }
}

fn question(text: &str) -> AgentRequest {
    AgentRequest {
        org: OrgId::generate(),
        history: vec![event(1, EventKind::UserMessage, json!({"text": text}))],
        steps: vec![],
        tools: vec![],
        must_answer: false,
        memory: None,
    }
}

fn with_search(mut request: AgentRequest) -> AgentRequest {
    request.tools.push(ToolSpec {
        name: "search_docs".into(),
        description: "Searches the organisation's documents.".into(),
        input_schema: json!({"type": "object",
            "properties": {"query": {"type": "string"}}, "required": ["query"]}),
        hints: knowledge_core::domain::ToolHints::default(),
    });
    request
}

// --- The tests, each generic over the wire format ----------------------------------------

async fn a_plain_answer_comes_back_with_its_usage_priced<W: Wire>() {
    let fake = Fake::start().await;
    fake.script(Reply::json(200, W::answer("Use the cancel endpoint.")));
    let agent = W::agent(&fake.base(), AgentSetup::default());

    let reply = agent.respond(question("How do I cancel?")).await.unwrap();

    assert_eq!(
        reply.action,
        AgentAction::Answer("Use the cancel endpoint.".into())
    );
    assert_eq!(reply.usage, USAGE);
    assert_eq!(reply.cost_micros, COST);
    let seen = fake.last();
    assert_eq!(
        (seen.method, seen.path.as_str()),
        (Method::POST, W::chat_path())
    );
    assert_eq!(seen.body["model"], "test-model");
    let (system, asked) = W::system_and_question(&seen.body);
    assert!(system.contains("Markdown"), "{system}");
    assert_eq!(asked, "How do I cancel?");
    assert_eq!(W::declared_tools(&seen.body), Vec::<String>::new());
    assert_eq!(W::tool_choice(&seen.body), None);
}

async fn a_tool_call_round_trip_links_the_call_and_its_result_by_one_id<W: Wire>() {
    let fake = Fake::start().await;
    fake.script(Reply::json(
        200,
        W::tool_call("provider_id_1", "search_docs", json!({"query": "cancel"})),
    ))
    .script(Reply::json(200, W::answer("POST /cancel stops it.")));
    let agent = W::agent(&fake.base(), AgentSetup::default());

    let first = with_search(question("How do I cancel?"));
    let reply = agent.respond(first.clone()).await.unwrap();
    assert_eq!(
        reply.action,
        AgentAction::UseTools(vec![ToolCall {
            tool: "search_docs".into(),
            input: json!({"query": "cancel"}),
        }])
    );
    let asked = fake.last().body;
    assert_eq!(W::declared_tools(&asked), ["search_docs"]);
    assert_eq!(W::tool_choice(&asked).as_deref(), Some("auto"));

    let mut next = first;
    next.steps = vec![
        event(
            2,
            EventKind::ToolUse,
            json!({"tool": "search_docs", "input": {"query": "cancel"}}),
        ),
        event(
            3,
            EventKind::ToolResult,
            json!({"tool": "search_docs", "output": [{"source": "cancelling.md"}]}),
        ),
    ];
    let reply = agent.respond(next).await.unwrap();
    assert_eq!(
        reply.action,
        AgentAction::Answer("POST /cancel stops it.".into())
    );
    assert_eq!(
        W::exchange(&fake.last().body),
        Exchange {
            call_id: "call_2".into(),
            tool: "search_docs".into(),
            input: json!({"query": "cancel"}),
            result_id: "call_2".into(),
            output: r#"[{"source":"cancelling.md"}]"#.into(),
        }
    );
}

async fn dropping_a_slow_answer_aborts_the_request_at_the_provider<W: Wire>() {
    let fake = Fake::start().await;
    fake.script(Reply::Hold);
    let agent = W::agent(&fake.base(), AgentSetup::default());

    let mut respond = agent.respond(question("Slow?"));
    tokio::select! {
        reply = &mut respond => panic!("the fake never answers, yet got {reply:?}"),
        _ = fake.arrival() => {}
    }
    drop(respond);

    fake.abort().await;
}

async fn a_provider_that_does_not_answer_in_time_is_unreachable<W: Wire>() {
    let fake = Fake::start().await;
    fake.script(Reply::Hold);
    let setup = AgentSetup {
        timeout: Duration::from_millis(200),
        ..AgentSetup::default()
    };
    let agent = W::agent(&fake.base(), setup);

    let error = bounded("the request to time out", agent.respond(question("Slow?")))
        .await
        .unwrap_err();

    assert!(
        matches!(&error, AgentError::Unreachable(m) if m.contains("timed out")),
        "{error:?}"
    );
}

async fn a_server_error_fails_the_call_and_the_next_call_succeeds<W: Wire>() {
    let fake = Fake::start().await;
    fake.script(Reply::json(500, W::error("server_error")))
        .script(Reply::json(200, W::answer("Fine now.")));
    let agent = W::agent(&fake.base(), AgentSetup::default());

    let error = agent.respond(question("Hello?")).await.unwrap_err();
    assert!(
        matches!(&error, AgentError::Failed(m) if m.contains("500") && m.contains("server_error")),
        "{error:?}"
    );
    let reply = agent.respond(question("Hello?")).await.unwrap();
    assert_eq!(reply.action, AgentAction::Answer("Fine now.".into()));
}

async fn statuses_are_classified_as_the_workflow_expects<W: Wire>() {
    // `Failed` is retried by the workflow, `Rejected` is not.
    let cases = [
        (500, "Failed"),
        (503, "Failed"),
        (529, "Failed"),
        (408, "Failed"),
        (400, "Rejected"),
        (404, "Rejected"),
        (403, "Rejected"),
    ];
    let fake = Fake::start().await;
    let agent = W::agent(&fake.base(), AgentSetup::default());
    for (status, expected) in cases {
        fake.script(Reply::json(status, W::error("some_error")));
        let error = agent.respond(question("Hello?")).await.unwrap_err();
        assert!(
            format!("{error:?}").starts_with(expected),
            "{status}: {error:?}"
        );
        let text = error.to_string();
        assert!(text.contains(&status.to_string()), "{text}");
        assert!(text.contains("some_error"), "{text}");
        assert!(!text.contains(KEY), "the error text leaks the key: {text}");
    }
}

async fn a_rate_limit_carries_the_providers_retry_after<W: Wire>() {
    let fake = Fake::start().await;
    fake.script(Reply::json(429, W::error("rate_limit_error")).with_header("retry-after", "1"));
    let agent = W::agent(&fake.base(), AgentSetup::default());

    let error = agent.respond(question("Hello?")).await.unwrap_err();

    assert!(
        matches!(
            error,
            AgentError::RateLimited {
                retry_after: Some(d)
            } if d == Duration::from_secs(1)
        ),
        "{error:?}"
    );
}

async fn an_unreachable_provider_is_unhealthy_and_unreachable<W: Wire>() {
    let agent = W::agent(&nowhere().await, AgentSetup::default());

    let health = bounded("the health check", agent.health()).await;
    assert!(
        matches!(health, Err(AgentError::Unreachable(_))),
        "{health:?}"
    );
    let reply = bounded("the call", agent.respond(question("Anyone?"))).await;
    assert!(
        matches!(reply, Err(AgentError::Unreachable(_))),
        "{reply:?}"
    );
}

async fn malformed_responses_fail_the_call<W: Wire>() {
    let cases = [
        ("not JSON", Reply::raw(200, "<html>Bad gateway</html>")),
        ("the wrong shape", Reply::json(200, json!({"result": "ok"}))),
        (
            "tool input that is not an object",
            Reply::json(200, W::tool_call("id_1", "search_docs", json!(["cancel"]))),
        ),
        (
            "a body over 4 MiB",
            Reply::raw(200, "x".repeat(4 * 1024 * 1024 + 1)),
        ),
    ];
    let fake = Fake::start().await;
    let agent = W::agent(&fake.base(), AgentSetup::default());
    for (what, reply) in cases {
        fake.script(reply);
        let result = agent.respond(with_search(question("Hello?"))).await;
        assert!(
            matches!(result, Err(AgentError::Failed(_))),
            "{what}: {result:?}"
        );
    }
}

async fn a_refused_key_is_rejected_and_unhealthy<W: Wire>() {
    let fake = Fake::start().await;
    fake.script(Reply::json(401, W::error("authentication_error")))
        .script(Reply::json(401, W::error("authentication_error")));
    let agent = W::agent(&fake.base(), AgentSetup::default());

    let error = agent.respond(question("Hello?")).await.unwrap_err();
    assert!(matches!(error, AgentError::Rejected(_)), "{error:?}");
    assert!(!error.to_string().contains(KEY), "{error}");
    let health = agent.health().await;
    assert!(matches!(health, Err(AgentError::Rejected(_))), "{health:?}");
    let seen = fake.last();
    assert_eq!(
        (seen.method, seen.path.as_str()),
        (Method::GET, W::models_path())
    );
}

async fn health_counts_only_outages_and_refused_keys_as_unhealthy<W: Wire>() {
    let fake = Fake::start().await;
    for (status, healthy) in [
        (200, true),
        (404, true),
        (429, true),
        (500, false),
        (503, false),
        (401, false),
        (403, false),
    ] {
        // A fresh agent each time, so that no outcome is cached.
        let agent = W::agent(&fake.base(), AgentSetup::default());
        fake.script(Reply::json(status, json!({})));
        assert_eq!(agent.health().await.is_ok(), healthy, "{status}");
        W::assert_authenticated(&fake.last());
    }
}

/// A policy with TTLs other than the defaults, to show that they are honoured. The checks
/// meant to fall within a TTL stop a whole second short of it, far more than the real time
/// the test's own statements take.
const SHORT: HealthPolicy = HealthPolicy {
    ok_ttl: Duration::from_secs(30),
    failure_ttl: Duration::from_secs(2),
    timeout: Duration::from_secs(3),
};

/// Moves the runtime's clock on by `by` (the health cache reads it) without waiting.
async fn skip(by: Duration) {
    tokio::time::pause();
    tokio::time::advance(by).await;
    tokio::time::resume();
}

async fn a_healthy_check_is_reused_within_its_ttl<W: Wire>() {
    let fake = Fake::start().await;
    let setup = AgentSetup {
        health: SHORT,
        ..AgentSetup::default()
    };
    let agent = W::agent(&fake.base(), setup);
    fake.script(Reply::json(200, json!({"data": []})))
        .script(Reply::json(200, json!({"data": []})));

    agent.health().await.unwrap();
    agent.health().await.unwrap();
    skip(SHORT.ok_ttl - Duration::from_secs(1)).await;
    agent.health().await.unwrap();
    assert_eq!(
        fake.seen().len(),
        1,
        "a check within the TTL made a request"
    );

    skip(Duration::from_secs(1)).await;
    agent.health().await.unwrap();
    assert_eq!(
        fake.seen().len(),
        2,
        "a check after the TTL made no request"
    );
}

async fn a_failed_check_is_retried_after_its_shorter_ttl<W: Wire>() {
    let fake = Fake::start().await;
    let setup = AgentSetup {
        health: SHORT,
        ..AgentSetup::default()
    };
    let agent = W::agent(&fake.base(), setup);
    fake.script(Reply::json(503, json!({})))
        .script(Reply::json(200, json!({})));

    assert!(agent.health().await.is_err());
    skip(SHORT.failure_ttl - Duration::from_secs(1)).await;
    assert!(agent.health().await.is_err());
    assert_eq!(
        fake.seen().len(),
        1,
        "a failure was re-checked within its TTL"
    );

    skip(Duration::from_secs(1)).await;
    agent.health().await.unwrap();
    assert_eq!(fake.seen().len(), 2);
}

async fn concurrent_health_checks_share_one_probe<W: Wire>() {
    let fake = Fake::start().await;
    let (release, gate) = oneshot::channel();
    fake.script(Reply::After(gate, Box::new(Reply::json(503, json!({})))))
        .script(Reply::json(200, json!({})));
    let agent = W::agent(&fake.base(), AgentSetup::default());

    let (first, second, ()) = tokio::join!(agent.health(), agent.health(), async {
        fake.arrival().await;
        release.send(()).unwrap();
    });

    // Had the second caller probed on its own, it would have met the scripted 200.
    assert!(first.is_err() && second.is_err(), "{first:?} {second:?}");
    assert_eq!(fake.seen().len(), 1);
}

async fn requests_carry_the_providers_auth_headers<W: Wire>() {
    let fake = Fake::start().await;
    fake.script(Reply::json(200, W::answer("Hi.")))
        .script(Reply::json(200, json!({})));
    let agent = W::agent(&fake.base(), AgentSetup::default());

    agent.respond(question("Hello?")).await.unwrap();
    agent.health().await.unwrap();

    let seen = fake.seen();
    assert_eq!(seen.len(), 2);
    seen.iter().for_each(W::assert_authenticated);
    assert_eq!(seen[0].headers["content-type"], "application/json");
}

async fn must_answer_sends_tool_choice_none<W: Wire>() {
    let fake = Fake::start().await;
    fake.script(Reply::json(200, W::answer("Here is what I know.")));
    let agent = W::agent(&fake.base(), AgentSetup::default());

    let mut request = with_search(question("Hello?"));
    request.must_answer = true;
    let reply = agent.respond(request).await.unwrap();

    assert_eq!(
        reply.action,
        AgentAction::Answer("Here is what I know.".into())
    );
    let body = fake.last().body;
    assert_eq!(W::tool_choice(&body).as_deref(), Some("none"));
    assert_eq!(W::declared_tools(&body), ["search_docs"]);
}

/// What an agent call told of its answer as it streamed, in order.
#[derive(Default)]
struct Told(std::sync::Mutex<Vec<String>>);

impl Drafts for Told {
    fn written(&self, text: &str) {
        self.0.lock().unwrap().push(text.to_owned());
    }
}

async fn the_answer_is_told_as_it_streams_and_comes_back_whole<W: Wire>() {
    let fake = Fake::start().await;
    fake.pace(Duration::from_millis(10));
    let text = "Send the cancel request, then ask again when you are ready.";
    fake.script(Reply::json(200, W::answer(text)));
    let agent = W::agent(&fake.base(), AgentSetup::default());
    let told = Told::default();

    let reply = agent
        .respond_streaming(question("How do I cancel?"), &told)
        .await
        .unwrap();

    assert_eq!(reply.action, AgentAction::Answer(text.into()));
    assert_eq!((reply.usage, reply.cost_micros), (USAGE, COST));
    assert_eq!(fake.last().body["stream"], true);
    // Told piece by piece (the fake streams word by word): each time more of it, the last
    // time all of it.
    let told = told.0.into_inner().unwrap();
    assert!(told.len() >= text.split(' ').count(), "{told:?}");
    assert!(
        told.windows(2)
            .all(|w| w[1].starts_with(&w[0]) && w[1].len() > w[0].len())
    );
    assert_eq!(told.last().map(String::as_str), Some(text));
}

async fn a_streamed_tool_call_arrives_whole<W: Wire>() {
    let fake = Fake::start().await;
    fake.script(Reply::json(
        200,
        W::tool_call("id_1", "search_docs", json!({"query": "cancel"})),
    ));
    let agent = W::agent(&fake.base(), AgentSetup::default());
    let reply = agent
        .respond_streaming(with_search(question("How do I cancel?")), &Told::default())
        .await
        .unwrap();
    assert_eq!(
        reply.action,
        AgentAction::UseTools(vec![ToolCall {
            tool: "search_docs".into(),
            input: json!({"query": "cancel"}),
        }])
    );
}

async fn an_error_sent_mid_stream_and_an_endless_stream_fail_the_call<W: Wire>() {
    let fake = Fake::start().await;
    let agent = W::agent(&fake.base(), AgentSetup::default());
    let endless = format!("data: {}\n\n", "x".repeat(8 * 1024 * 1024));
    for (what, body) in [
        ("an error event", W::stream_error()),
        ("over 8 MiB", endless),
    ] {
        fake.script(Reply::raw(200, body).with_header("content-type", "text/event-stream"));
        let result = agent.respond(question("Hello?")).await;
        assert!(
            matches!(result, Err(AgentError::Failed(_))),
            "{what}: {result:?}"
        );
    }
}

async fn a_server_that_does_not_stream_is_read_whole<W: Wire>() {
    let fake = Fake::start().await;
    fake.script(Reply::Whole(Box::new(Reply::json(
        200,
        W::answer("All at once."),
    ))));
    let agent = W::agent(&fake.base(), AgentSetup::default());
    let told = Told::default();
    let reply = agent
        .respond_streaming(question("Hello?"), &told)
        .await
        .unwrap();
    assert_eq!(reply.action, AgentAction::Answer("All at once.".into()));
    assert_eq!(reply.usage, USAGE);
    assert!(told.0.into_inner().unwrap().is_empty());
}

knowledge_providers::for_each_provider!(
    the_answer_is_told_as_it_streams_and_comes_back_whole,
    a_streamed_tool_call_arrives_whole,
    an_error_sent_mid_stream_and_an_endless_stream_fail_the_call,
    a_server_that_does_not_stream_is_read_whole,
    a_plain_answer_comes_back_with_its_usage_priced,
    a_tool_call_round_trip_links_the_call_and_its_result_by_one_id,
    dropping_a_slow_answer_aborts_the_request_at_the_provider,
    a_provider_that_does_not_answer_in_time_is_unreachable,
    a_server_error_fails_the_call_and_the_next_call_succeeds,
    statuses_are_classified_as_the_workflow_expects,
    a_rate_limit_carries_the_providers_retry_after,
    an_unreachable_provider_is_unhealthy_and_unreachable,
    malformed_responses_fail_the_call,
    a_refused_key_is_rejected_and_unhealthy,
    health_counts_only_outages_and_refused_keys_as_unhealthy,
    a_healthy_check_is_reused_within_its_ttl,
    a_failed_check_is_retried_after_its_shorter_ttl,
    concurrent_health_checks_share_one_probe,
    requests_carry_the_providers_auth_headers,
    must_answer_sends_tool_choice_none,
);

// --- What only one provider does ---------------------------------------------------------

#[tokio::test]
async fn openai_without_a_key_sends_no_authorization_header() {
    let fake = Fake::start().await;
    fake.script(Reply::json(200, OpenAi::answer("Hi.")));
    let setup = AgentSetup {
        key: None,
        ..AgentSetup::default()
    };
    let agent = OpenAi::agent(&fake.base(), setup);

    agent.respond(question("Hello?")).await.unwrap();

    assert!(fake.last().headers.get("authorization").is_none());
}

#[tokio::test]
async fn anthropic_without_tools_sends_earlier_tool_calls_as_text() {
    let fake = Fake::start().await;
    fake.script(Reply::json(200, Anthropic::answer("From memory.")));
    let agent = Anthropic::agent(&fake.base(), AgentSetup::default());
    let mut request = question("How do I cancel?");
    request.steps = vec![
        event(
            2,
            EventKind::ToolUse,
            json!({"tool": "search_docs", "input": {"query": "cancel"}}),
        ),
        event(
            3,
            EventKind::ToolResult,
            json!({"tool": "search_docs", "output": "nothing"}),
        ),
    ];

    agent.respond(request).await.unwrap();

    let body = fake.last().body;
    assert!(body.get("tools").is_none() && body.get("tool_choice").is_none());
    assert!(Anthropic::blocks(&body, "assistant", "tool_use").is_empty());
    assert!(Anthropic::blocks(&body, "user", "tool_result").is_empty());
    let roles: Vec<&str> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "user"]);
    assert!(body.to_string().contains("search_docs"));
}
