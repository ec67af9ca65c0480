//! Consent across crashes, on the real binary: a kill between the member's approval and the
//! call, or after `RunTool` marked the call and before it reached the server. The reference
//! MCP server (its own process, which outlives the kills) counts the notes it was asked to
//! write, so "at most once" is measured where the call lands.

use knowledge_mcp::test_server::start;
use knowledge_providers::fake::{Fake, OpenAi, Reply, Wire};
use serde_json::{Value, json};

use crate::binary::{Process, admin, call, wait_answered};
use crate::crashes::{cookie, create, openai_at, provider};

/// A fake provider that writes a note, then counts the notes, then answers; and the service's
/// environment to ask it.
fn scripted(fake: &Fake) {
    let note = OpenAi::tool_call("call_1", "kb_create_note", json!({ "text": "hello" }));
    let count = OpenAi::tool_call("call_2", "kb_notes", json!({}));
    fake.script(Reply::json(200, note))
        .script(Reply::json(200, count))
        .script(Reply::json(200, OpenAi::answer("Done.")));
}

async fn transcript(p: &Process, cookie: &str, session: &str) -> Value {
    let path = format!("/api/managed-agents/transcript?sessionId={session}");
    call(reqwest::Method::GET, &p.base, &path, cookie, None)
        .await
        .1
}

/// Starts the service stopping at `point`, opens a session whose call asks, and returns the
/// process, the cookie, the session and the call's event id once the turn is paused.
async fn paused(
    dir: &std::path::Path, env: &[(&str, &str)], point: &str, server: &str,
) -> (Process, String, String, Value) {
    let p = Process::start_with(dir, &[], &[point], env).await;
    // The organisation exists once the service has started on the directory.
    let args = [
        "integration",
        "add",
        "--org",
        "org_default",
        "--name",
        "kb",
        "--url",
    ];
    admin(dir, &[&args[..], &[server]].concat()).await;
    let cookie = cookie(dir).await;
    let session = create(&p, &cookie, "Write a note").await;
    let kinds = wait_answered(&p.base, &cookie, &session).await;
    assert_eq!(kinds, ["user_message", "tool_use"], "paused for the member");
    let t = transcript(&p, &cookie, &session).await;
    let call_id = t["events"][1]["id"].clone();
    assert_eq!(t["events"][1]["payload"]["approval"]["state"], "pending");
    (p, cookie, session, call_id)
}

fn approve(p: &Process, cookie: &str, session: &str, call_id: &Value) {
    let body = json!({ "sessionId": session, "toolUseId": call_id, "decision": "approve" });
    let request = reqwest::Client::new()
        .post(format!("{}/api/managed-agents/approve", p.base))
        .header("cookie", cookie)
        .header("origin", &p.base)
        .json(&body);
    tokio::spawn(async move {
        let _ = request.send().await;
    });
}

/// The notes the server counted, from the log's `kb_notes` result.
fn notes_written(t: &Value) -> u64 {
    let events = t["events"].as_array().unwrap();
    let counted = events
        .iter()
        .find(|e| e["type"] == "tool_result" && e["payload"]["tool"] == "kb_notes")
        .unwrap_or_else(|| panic!("the agent counted the notes: {t}"));
    counted["payload"]["output"]["created"].as_u64().unwrap()
}

/// Runs a turn whose call asks, approves it, kills the service at `point` and starts it
/// again on the same directory; returns the transcript once the resumed turn has ended.
async fn killed_after_approval_at(point: &str) -> Value {
    let server = start(&[]).await;
    let fake = provider().await;
    scripted(&fake);
    let env = openai_at(&fake.base());
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let dir = tempfile::tempdir().unwrap();

    let (mut p, cookie, session, call_id) = paused(dir.path(), &env, point, &server.url).await;
    approve(&p, &cookie, &session, &call_id);
    p.stopped_at(point).await;
    p.kill().await;

    let p = Process::start_with(dir.path(), &[], &[], &env).await;
    assert!(p.printed.contains("resumed 1 run"), "{}", p.printed);
    wait_answered(&p.base, &cookie, &session).await;
    let t = transcript(&p, &cookie, &session).await;
    p.kill().await;
    t
}

#[tokio::test]
async fn a_kill_between_the_approval_and_the_call_runs_the_call_once_at_restart() {
    // The answer is committed; the run it claimed was never started.
    let t = killed_after_approval_at("approve.answered").await;
    assert_eq!(
        t["events"][1]["payload"]["approval"]["state"], "approved",
        "{t}"
    );
    assert_eq!(t["events"][2]["payload"]["output"]["id"], "note-1", "{t}");
    assert_eq!(notes_written(&t), 1, "the server was called once");
}

#[tokio::test]
async fn a_kill_after_the_call_was_marked_never_calls_it_again_and_says_so() {
    // The call is marked as being made; whether it reached the server, a restart cannot know.
    let t = killed_after_approval_at("RunTool.marked").await;
    let result = &t["events"][2]["payload"];
    let said = result["output"]["error"].as_str().unwrap_or_default();
    assert!(said.contains("unknown"), "{t}");
    assert_eq!(result["approval"], "approved");
    assert_eq!(notes_written(&t), 0, "it was not called again");
}
