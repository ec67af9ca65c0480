//! Traces on the real binary, received by a real OTLP receiver (`scripts/otlp_receiver.py`,
//! the official protobuf bindings on loopback): a turn is one trace from the request that
//! starts it through every step, across a kill and the revival that follows; model and tool
//! calls carry the GenAI attributes and never a prompt, an answer, a tool's input or output
//! or a cookie; log lines name their trace; and a collector that is down breaks nothing.

use std::process::Stdio;

use knowledge_providers::fake::{OpenAi, Reply, USAGE, Wire};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::binary::{Process, call, wait_answered};
use crate::crashes::{ANSWERED, DOCS, cookie, create, openai_at, provider};
use crate::support::WAIT;

const QUESTION: &str = "Which plum-coloured umbrella did Ottoline forget?";
const QUERY: &str = "how to cancel a running answer";
const ANSWER: &str = "The one with the walnut handle, said the archivist.";

/// The receiver, running until dropped.
struct Collector {
    base: String,
    _child: Child,
}

impl Collector {
    async fn start() -> Self {
        let python = concat!(env!("CARGO_MANIFEST_DIR"), "/../../.venv/bin/python");
        let script = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../scripts/otlp_receiver.py"
        );
        let mut child = Command::new(python)
            .arg(script)
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("scripts/test makes .venv with scripts/requirements.txt");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let ready = tokio::time::timeout(WAIT, lines.next_line()).await;
        let line = ready
            .expect("the receiver starts in time")
            .unwrap()
            .unwrap();
        let base = (line.strip_prefix("listening on ")).expect("listening on <base>");
        let base = base.to_owned();
        Self {
            base,
            _child: child,
        }
    }

    /// Every span received so far.
    async fn spans(&self) -> Vec<Value> {
        let answer = reqwest::get(format!("{}/spans", self.base)).await.unwrap();
        answer.json().await.unwrap()
    }

    /// Polls (bounded) until the spans received include one named each of `names`.
    async fn received(&self, names: &[&str]) -> Vec<Value> {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let spans = self.spans().await;
            if names.iter().all(|n| spans.iter().any(|s| s["name"] == *n)) {
                return spans;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "never received {names:?}: {spans:#?}"
            );
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }
}

/// The environment of a service that exports its traces to `endpoint` every 50 ms and asks
/// the fake provider at `provider`.
fn env(provider: &str, endpoint: &str) -> Vec<(&'static str, String)> {
    let mut env = openai_at(provider);
    env.push(("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.to_owned()));
    env.push(("OTEL_BSP_SCHEDULE_DELAY", "50".to_owned()));
    env
}

fn named<'a>(spans: &'a [Value], name: &str) -> Vec<&'a Value> {
    spans.iter().filter(|s| s["name"] == name).collect()
}

/// Every string at least 12 characters long in `value`, however deep.
fn texts(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(s) if s.chars().count() >= 12 => out.push(s.clone()),
        Value::Array(items) => items.iter().for_each(|v| texts(v, out)),
        Value::Object(fields) => fields.values().for_each(|v| texts(v, out)),
        _ => {}
    }
}

#[tokio::test]
async fn a_turn_is_one_trace_through_its_steps_and_a_revival_with_no_content_in_it() {
    let collector = Collector::start().await;
    let fake = provider().await;
    let search = OpenAi::tool_call("call_1", "search_documents", json!({ "query": QUERY }));
    fake.script(Reply::json(200, search))
        .script(Reply::json(200, OpenAi::answer(ANSWER)));
    let env = env(&fake.base(), &collector.base);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let dir = tempfile::tempdir().unwrap();

    // The turn runs to its tool call; the process dies there, once what it finished is sent.
    let mut p = Process::start_with(dir.path(), &DOCS, &["RunTool.begin"], &env).await;
    let cookie = cookie(dir.path()).await;
    let session = create(&p, &cookie, QUESTION).await;
    p.stopped_at("RunTool.begin").await;
    let before = ["POST /api/managed-agents/session", "LoadTurn", "CallAgent"];
    collector.received(&before).await;
    p.kill().await;

    // Started again, it revives the run, which answers.
    let p = Process::start_with(dir.path(), &DOCS, &[], &env).await;
    assert!(p.printed.contains("resumed 1 run"), "{}", p.printed);
    assert_eq!(wait_answered(&p.base, &cookie, &session).await, ANSWERED);
    let spans = collector.received(&["FinishTurn"]).await;

    let [request] = named(&spans, "POST /api/managed-agents/session")[..] else {
        panic!("one request started the turn: {spans:#?}");
    };
    assert_eq!(request["kind"], 2, "a server span");
    assert_eq!(
        request["parentSpanId"], "",
        "the request is the trace's root"
    );
    assert_eq!(
        request["attributes"]["http.route"],
        "/api/managed-agents/session"
    );
    assert_eq!(request["attributes"]["http.response.status_code"], 200);
    let trace = request["traceId"].as_str().unwrap();

    // Every step, in both processes, and every call within them, is in the request's trace.
    let steps = ["LoadTurn", "CallAgent", "RunTool", "FinishTurn"];
    let counts: Vec<usize> = steps.iter().map(|s| named(&spans, s).len()).collect();
    // A LoadTurn begins each execution, and ends the run after the turn.
    assert_eq!(counts, [3, 2, 1, 1], "{steps:?}");
    let turn: Vec<&Value> = (spans.iter())
        .filter(|s| steps.contains(&s["name"].as_str().unwrap()))
        .chain(
            spans
                .iter()
                .filter(|s| s["attributes"]["gen_ai.operation.name"].is_string()),
        )
        .collect();
    assert_eq!(
        turn.len(),
        7 + 3,
        "seven steps, two model calls, a tool call"
    );
    for span in &turn {
        assert_eq!(span["traceId"], trace, "{span:#}");
    }
    for step in &turn[..7] {
        assert_eq!(step["parentSpanId"], request["spanId"], "{step:#}");
    }
    // Each step's store requests, SQLite's or DynamoDB's (the AWS SDK's), are in it too.
    let step_ids: Vec<&Value> = turn[..7].iter().map(|s| &s["spanId"]).collect();
    let stored = |s: &&Value| {
        let a = &s["attributes"];
        a["db.system.name"] == "sqlite" || a["rpc.service"] == "DynamoDB"
    };
    let store: Vec<&Value> = spans.iter().filter(stored).collect();
    for step in &step_ids {
        assert!(
            store
                .iter()
                .any(|s| s["parentSpanId"] == **step && s["traceId"] == trace),
            "no store request of step {step}: {store:#?}"
        );
    }

    // The model's calls and the tool's, as the GenAI conventions name them.
    let calls: Vec<&str> = named(&spans, "CallAgent")
        .iter()
        .map(|s| s["spanId"].as_str().unwrap())
        .collect();
    let chats = named(&spans, "chat test-model");
    assert_eq!(chats.len(), 2, "{spans:#?}");
    let mut tokens: Vec<(i64, i64)> = vec![];
    for chat in &chats {
        let a = &chat["attributes"];
        assert_eq!(a["gen_ai.operation.name"], "chat");
        assert_eq!(a["gen_ai.provider.name"], "openai");
        assert_eq!(a["gen_ai.request.model"], "test-model");
        assert_eq!(chat["kind"], 3, "a client span");
        assert!(calls.contains(&chat["parentSpanId"].as_str().unwrap()));
        tokens.push((
            a["gen_ai.usage.input_tokens"].as_i64().unwrap(),
            a["gen_ai.usage.output_tokens"].as_i64().unwrap(),
        ));
    }
    tokens.sort();
    assert_eq!(tokens, [(10, 5), (USAGE.input as i64, USAGE.output as i64)]);
    let [tool] = named(&spans, "execute_tool search_documents")[..] else {
        panic!("one tool call: {spans:#?}");
    };
    assert_eq!(tool["attributes"]["gen_ai.tool.name"], "search_documents");
    assert_eq!(tool["status"], 0, "it answered: {tool:#}");
    assert_eq!(tool["attributes"]["gen_ai.operation.name"], "execute_tool");
    assert_eq!(tool["parentSpanId"], named(&spans, "RunTool")[0]["spanId"]);

    // No content: not the question, the tool's input or output, the answer or the cookie.
    let path = format!("/api/managed-agents/transcript?sessionId={session}");
    let (_, transcript) = call(reqwest::Method::GET, &p.base, &path, &cookie, None).await;
    let mut content = vec![QUESTION.to_owned(), QUERY.to_owned(), ANSWER.to_owned()];
    texts(&transcript["events"][2]["payload"]["output"], &mut content);
    assert!(
        content.len() > 4,
        "the tool answered passages: {transcript:#}"
    );
    content.push(cookie.split_once('=').unwrap().1.to_owned());
    let exported = serde_json::to_string(&spans).unwrap();
    for text in &content {
        assert!(!exported.contains(text.as_str()), "{text:?} was exported");
    }

    // The revived process's log lines name the turn's trace.
    let logs = p.logs();
    assert!(logs.contains(&format!("trace_id={trace}")), "{logs}");
}

#[tokio::test]
async fn a_collector_that_is_down_breaks_nothing_and_is_reported_once() {
    let fake = provider().await;
    for answer in ["First answer.", "Second answer."] {
        fake.script(Reply::json(200, OpenAi::answer(answer)));
    }
    // A port nothing listens on.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let env = env(&fake.base(), &endpoint);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let dir = tempfile::tempdir().unwrap();
    let p = Process::start_with(dir.path(), &[], &[], &env).await;
    let cookie = cookie(dir.path()).await;
    for question in ["One?", "Two?"] {
        let session = create(&p, &cookie, question).await;
        let kinds = wait_answered(&p.base, &cookie, &session).await;
        assert_eq!(kinds, ["user_message", "agent_message", "status_idle"]);
    }
    let deadline = tokio::time::Instant::now() + WAIT;
    while !p.logs().contains("traces cannot be exported") {
        assert!(tokio::time::Instant::now() < deadline, "{}", p.logs());
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let logs = p.logs();
    assert_eq!(
        logs.matches("traces cannot be exported").count(),
        1,
        "{logs}"
    );
}
