//! Crash recovery on the real binary: the `knowledge` process is stopped at a named fault point
//! (`knowledge_core::fault`) inside a turn's steps, a delete or a cancel, killed there with
//! SIGKILL, and started again on the same data directory. What it acknowledged must be there,
//! nothing may stay half-deleted or claimed, and every log must stay gap-free. The points make
//! each kill land exactly where it is meant to, every run.

use std::path::Path;
use std::time::Duration;

use knowledge_core::ids::{OrgId, SessionId, SessionKey, UserId};
use knowledge_providers::fake::{Fake, OpenAi, Reply, Wire};
use serde_json::{Value, json};

use crate::binary::{Process, admin, call, listed, wait_answered};

/// The sample guide, connected so that a turn searches it: every step of a turn runs.
pub(crate) const DOCS: [&str; 2] = [
    "--docs",
    concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/guide"),
];
/// The builtin agent searches the guide for this, then answers.
const QUESTION: &str = "How do I cancel a running answer?";
pub(crate) const ANSWERED: [&str; 5] = [
    "user_message",
    "tool_use",
    "tool_result",
    "agent_message",
    "status_idle",
];

pub(crate) async fn cookie(dir: &Path) -> String {
    admin(
        dir,
        &["cookie", "--org", "org_default", "--user", "usr_default"],
    )
    .await
}

pub(crate) async fn create(p: &Process, cookie: &str, text: &str) -> String {
    let (status, body) = call(
        reqwest::Method::POST,
        &p.base,
        "/api/managed-agents/session",
        cookie,
        Some(json!({ "text": text })),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    body["id"].as_str().unwrap().to_owned()
}

/// The fault points of every step of a turn, where a kill can cut it short.
const TURN_POINTS: [&str; 8] = [
    "LoadTurn.begin",
    "LoadTurn.end",
    "CallAgent.begin",
    "CallAgent.end",
    "RunTool.begin",
    "RunTool.end",
    "FinishTurn.begin",
    "FinishTurn.end",
];

/// Starts `knowledge serve` on `dir` with `options`, opens a session whose turn stops at
/// `point`, and kills the process there; returns the cookie and the session.
async fn killed_mid_turn(dir: &Path, options: &[&str], point: &str) -> (String, String) {
    let mut p = Process::start(dir, options, &[point]).await;
    let cookie = cookie(dir).await;
    let session = create(&p, &cookie, QUESTION).await;
    p.stopped_at(point).await;
    p.kill().await;
    (cookie, session)
}

/// Sends a request whose answer will never come (the process stops, then dies, on its way).
fn send_unanswered(p: &Process, cookie: &str, method: reqwest::Method, path: &str, body: Value) {
    let request = reqwest::Client::new()
        .request(method, format!("{}{path}", p.base))
        .header("cookie", cookie)
        .header("origin", &p.base)
        .json(&body);
    tokio::spawn(async move {
        let _ = request.send().await;
    });
}

/// Waits until the session's run has ended; returns its event types, after checking that the
/// log is gap-free: ids numbered 1, 2, 3, ... in order.
async fn settled_log(p: &Process, cookie: &str, session: &str) -> Vec<String> {
    let kinds = wait_answered(&p.base, cookie, session).await;
    let path = format!("/api/managed-agents/transcript?sessionId={session}");
    let (_, t) = call(reqwest::Method::GET, &p.base, &path, cookie, None).await;
    let ids: Vec<&str> = t["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap())
        .collect();
    let expected: Vec<String> = (1..=ids.len()).map(|n| format!("evt_{n:012}")).collect();
    assert_eq!(ids, expected, "{session}: the log has a gap or a repeat");
    kinds
}

#[tokio::test]
async fn a_kill_at_any_step_of_a_turn_is_recovered_at_restart_with_the_log_whole() {
    for point in TURN_POINTS {
        let dir = tempfile::tempdir().unwrap();
        let (cookie, session) = killed_mid_turn(dir.path(), &DOCS, point).await;

        let p = Process::start(dir.path(), &DOCS, &[]).await;
        assert!(
            p.printed.contains("resumed 1 run"),
            "{point}: {}",
            p.printed
        );
        assert_eq!(
            settled_log(&p, &cookie, &session).await,
            ANSWERED,
            "{point}: the turn is answered once"
        );
        p.kill().await;
    }
}

/// A fake OpenAI-compatible provider whose health probe (`GET /v1/models`, which the service
/// sends apart from the turns) always answers; the test scripts its replies.
pub(crate) async fn provider() -> Fake {
    let fake = Fake::start().await;
    fake.always(
        reqwest::Method::GET,
        OpenAi::models_path(),
        200,
        json!({"data": []}),
    );
    fake
}

/// The environment that makes `knowledge serve` ask the fake at `base` as an OpenAI-compatible
/// provider.
pub(crate) fn openai_at(base: &str) -> Vec<(&'static str, String)> {
    vec![
        ("KNOWLEDGE_AGENT", "openai".into()),
        ("KNOWLEDGE_MODEL", "test-model".into()),
        (
            "KNOWLEDGE_PRICES",
            r#"{"*": {"inputUsdPerMTok": 0, "outputUsdPerMTok": 0}}"#.into(),
        ),
        ("OPENAI_BASE_URL", format!("{base}/v1")),
    ]
}

/// Polls the transcript (bounded) until it shows a draft; returns its text.
async fn a_draft(p: &Process, cookie: &str, session: &str) -> String {
    let path = format!("/api/managed-agents/transcript?sessionId={session}");
    let shown = tokio::time::timeout(crate::support::WAIT, async {
        loop {
            let (_, t) = call(reqwest::Method::GET, &p.base, &path, cookie, None).await;
            if let Some(text) = t["draft"]["text"].as_str().filter(|t| !t.is_empty()) {
                return text.to_owned();
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    shown.await.expect("a draft shows in time")
}

#[tokio::test]
async fn a_kill_while_an_answer_streams_loses_only_its_draft_and_the_turn_is_answered_at_restart() {
    let fake = provider().await;
    let long: Vec<String> = (1..=200).map(|i| format!("word{i}")).collect();
    fake.pace(Duration::from_millis(50))
        .script(Reply::json(200, OpenAi::answer(&long.join(" "))));
    let env = openai_at(&fake.base());
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let dir = tempfile::tempdir().unwrap();
    let p = Process::start_with(dir.path(), &[], &[], &env).await;
    let cookie = cookie(dir.path()).await;
    let session = create(&p, &cookie, "Tell me everything.").await;
    let draft = a_draft(&p, &cookie, &session).await;
    assert!(draft.starts_with("word1 "), "{draft}");
    p.kill().await;
    fake.abort().await;

    // The retried call is answered at once.
    fake.pace(Duration::ZERO)
        .script(Reply::json(200, OpenAi::answer("The whole answer.")));
    let p = Process::start_with(dir.path(), &[], &[], &env).await;
    assert!(p.printed.contains("resumed 1 run"), "{}", p.printed);
    let kinds = settled_log(&p, &cookie, &session).await;
    assert_eq!(kinds, ["user_message", "agent_message", "status_idle"]);
    let path = format!("/api/managed-agents/transcript?sessionId={session}");
    let (_, t) = call(reqwest::Method::GET, &p.base, &path, &cookie, None).await;
    assert_eq!(
        t["events"][0]["payload"]["text"], "Tell me everything.",
        "{t}"
    );
    assert_eq!(
        t["events"][1]["payload"]["text"], "The whole answer.",
        "{t}"
    );
    assert!(
        t["draft"].is_null(),
        "the lost draft is not shown again: {t}"
    );
    let asked = fake.seen_at(&reqwest::Method::POST, OpenAi::chat_path());
    assert_eq!(asked.len(), 2, "the killed call, then the retried one");
    p.kill().await;
}

#[tokio::test]
async fn a_delete_cut_short_by_a_kill_is_finished_at_restart() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = Process::start(dir.path(), &DOCS, &["delete.marked"]).await;
    let cookie = cookie(dir.path()).await;
    let kept = create(&p, &cookie, QUESTION).await;
    let doomed = create(&p, &cookie, "delete me").await;
    settled_log(&p, &cookie, &doomed).await;
    let path = format!("/api/managed-agents/session?sessionId={doomed}");
    send_unanswered(&p, &cookie, reqwest::Method::DELETE, &path, Value::Null);
    p.stopped_at("delete.marked").await;
    p.kill().await;

    let key = SessionKey {
        user: UserId::parse("usr_default").unwrap(),
        org: OrgId::parse("org_default").unwrap(),
        session: SessionId::parse(&doomed).unwrap(),
    };
    let store = knowledge_local::SqliteStore::open(dir.path()).unwrap();
    use knowledge_core::ports::StoredRows;
    let (records, events) = store.rows_for(&key).await.unwrap();
    assert_eq!(records, 1, "the kill left the session half-deleted");
    assert!(events > 0);

    let p = Process::start(dir.path(), &DOCS, &[]).await;
    assert!(p.printed.contains("finished 1 delete"), "{}", p.printed);
    assert_eq!(store.rows_for(&key).await.unwrap(), (0, 0));
    assert_eq!(listed(&p.base, &cookie).await, std::slice::from_ref(&kept));
    assert_eq!(settled_log(&p, &cookie, &kept).await, ANSWERED);
    let (status, _) = call(reqwest::Method::DELETE, &p.base, &path, &cookie, None).await;
    assert_eq!(status, 404, "nothing is left to delete");
    p.kill().await;
}

#[tokio::test]
async fn a_cancel_cut_short_by_a_kill_ends_the_run_at_restart() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = Process::start(dir.path(), &DOCS, &["CallAgent.begin", "cancel.stamped"]).await;
    let cookie = cookie(dir.path()).await;
    let session = create(&p, &cookie, QUESTION).await;
    p.stopped_at("CallAgent.begin").await;
    let body = json!({ "sessionId": session });
    send_unanswered(
        &p,
        &cookie,
        reqwest::Method::POST,
        "/api/managed-agents/cancel",
        body,
    );
    p.stopped_at("cancel.stamped").await;
    p.kill().await;

    let p = Process::start(dir.path(), &DOCS, &[]).await;
    assert!(p.printed.contains("resumed 1 run"), "{}", p.printed);
    assert_eq!(
        settled_log(&p, &cookie, &session).await,
        ["user_message", "status_terminated"]
    );
    // The session goes on: a follow-up starts a fresh run and is answered.
    let (status, body) = call(
        reqwest::Method::POST,
        &p.base,
        "/api/managed-agents/message",
        &cookie,
        Some(json!({ "sessionId": session, "text": QUESTION })),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let kinds = settled_log(&p, &cookie, &session).await;
    assert_eq!(kinds[..2], ["user_message", "status_terminated"]);
    assert_eq!(kinds[2..], ANSWERED);
    p.kill().await;
}

/// `--store dynamodb` on a fresh table of the test's DynamoDB stand-in.
pub(crate) fn on_dynamodb(table: &str) -> Vec<String> {
    let endpoint = crate::support::dynamodb_endpoint();
    [
        "--store",
        "dynamodb",
        "--dynamodb-endpoint",
        &endpoint,
        "--dynamodb-table",
        table,
    ]
    .map(str::to_owned)
    .to_vec()
}

pub(crate) fn fresh_table() -> String {
    format!("knowledge-crash-{}", uuid::Uuid::new_v4().simple())
}

#[tokio::test]
async fn on_dynamodb_a_kill_at_any_step_is_recovered_by_the_restarted_instance_at_once() {
    knowledge_test_support::skip_without_dynamodb!();
    for point in TURN_POINTS {
        let dir = tempfile::tempdir().unwrap();
        let store = on_dynamodb(&fresh_table());
        let mut options: Vec<&str> = store.iter().map(String::as_str).collect();
        options.extend(DOCS);
        let (cookie, session) = killed_mid_turn(dir.path(), &options, point).await;

        // The same instance (its data directory) knows the run was its own: no waiting for
        // the lease to run out.
        let p = Process::start(dir.path(), &options, &[]).await;
        assert!(
            p.printed.contains("resumed 1 run"),
            "{point}: {}",
            p.printed
        );
        assert_eq!(
            settled_log(&p, &cookie, &session).await,
            ANSWERED,
            "{point}: the turn is answered once"
        );
        p.kill().await;
    }
}

#[tokio::test]
async fn on_dynamodb_a_run_a_killed_process_left_is_swept_up_by_another_serving_process() {
    knowledge_test_support::skip_without_dynamodb!();
    for point in TURN_POINTS {
        let (first, second) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let store = on_dynamodb(&fresh_table());
        let mut options: Vec<&str> = store.iter().map(String::as_str).collect();
        options.extend(DOCS);
        let (cookie, session) = killed_mid_turn(first.path(), &options, point).await;

        // Another instance serves the table (with the same keys), its clock past the dead
        // run's lease, as a sweep a few minutes later would be; it sweeps every second.
        for key in ["signing.key", "sealing.key"] {
            std::fs::copy(first.path().join(key), second.path().join(key)).unwrap();
        }
        options.extend(["--sweep-every-secs", "1"]);
        let offset = (knowledge_core::domain::LEASE_MS + 5_000).to_string();
        let env = [(knowledge_core::fault::CLOCK_OFFSET_ENV, offset.as_str())];
        let other = Process::start_with(second.path(), &options, &[], &env).await;
        // A claim bound to the dead instance is the sweep's; one never bound (killed before its
        // first LoadTurn) the other instance takes at its start already.
        let at_start = other.printed.contains("resumed 1 run");
        assert_eq!(
            at_start,
            point == "LoadTurn.begin",
            "{point}: {}",
            other.printed
        );
        assert_eq!(
            settled_log(&other, &cookie, &session).await,
            ANSWERED,
            "{point}: the turn is answered once"
        );
        other.kill().await;
    }
}
