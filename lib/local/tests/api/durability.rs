//! The `knowledge` binary as a user runs it: first start, admin commands, restarts, and a
//! `kill -9` that must lose nothing the service acknowledged.

use std::sync::Arc;

use knowledge_core::adapters::agent::BuiltinAgent;
use serde_json::{Value, json};
use tokio::process::Command;

use crate::binary::{BIN, Process, admin, admin_json, call, listed, wait_answered};
use crate::support::Api;

#[tokio::test]
async fn serve_on_an_empty_data_dir_creates_a_default_org_and_prints_how_to_get_a_cookie() {
    let dir = tempfile::tempdir().unwrap();
    let p = Process::start(dir.path(), &[], &[]).await;
    let (base, printed) = (&p.base, &p.printed);
    assert!(
        printed.contains("cookie --org org_default --user usr_default"),
        "{printed}"
    );
    let cookie = admin(
        dir.path(),
        &["cookie", "--org", "org_default", "--user", "usr_default"],
    )
    .await;
    assert!(cookie.starts_with("ks_session="));
    let (status, body) = call(
        reqwest::Method::POST,
        base,
        "/api/managed-agents/session",
        &cookie,
        Some(json!({ "text": "hi" })),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    p.kill().await;
}

#[tokio::test]
async fn admin_commands_print_ids_or_json_that_scripts_can_use() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let org = admin(
        d,
        &["org", "create", "--name", "Acme", "--plan", "business"],
    )
    .await;
    assert!(org.starts_with("org_"), "{org}");
    let user = admin(d, &["member", "add", "--org", &org, "--role", "admin"]).await;
    assert!(user.starts_with("usr_"), "{user}");
    let set: Value = admin_json(
        d,
        &[
            "org",
            "set",
            "--org",
            &org,
            "--query-quota",
            "100",
            "--cost-cap-usd",
            "12.5",
        ],
    )
    .await;
    assert_eq!(set["monthlyQueryQuota"], json!(100));
    assert_eq!(set["costCapUsd"], json!(12.5));
    let shown: Value = admin_json(d, &["org", "show", "--org", &org]).await;
    assert_eq!(shown["plan"], "business");
    assert_eq!(shown["usage"]["queries"], json!(0));
    let unlimited: Value = admin_json(
        d,
        &["org", "set", "--org", &org, "--query-quota", "unlimited"],
    )
    .await;
    assert_eq!(unlimited["monthlyQueryQuota"], json!(null));
    // A quota beyond any store's integers is refused before anything is written.
    let huge = Command::new(BIN)
        .arg("--data-dir")
        .arg(d)
        .args([
            "org",
            "set",
            "--org",
            &org,
            "--query-quota",
            "9223372036854775808",
        ])
        .output()
        .await
        .unwrap();
    assert!(!huge.status.success());
    assert!(String::from_utf8_lossy(&huge.stderr).contains("a whole number up to"));
    // The only admin stays: the command refuses, naming why.
    let last = Command::new(BIN)
        .arg("--data-dir")
        .arg(d)
        .args(["member", "remove", "--org", &org, "--user", &user])
        .output()
        .await
        .unwrap();
    assert!(!last.status.success());
    assert!(String::from_utf8_lossy(&last.stderr).contains("last admin"));
    admin(d, &["member", "add", "--org", &org, "--role", "admin"]).await;
    let removed: Value = admin_json(d, &["member", "remove", "--org", &org, "--user", &user]).await;
    assert_eq!(removed["removed"], json!(true));
    let failed = Command::new(BIN)
        .arg("--data-dir")
        .arg(d)
        .args(["member", "remove", "--org", &org, "--user", &user])
        .output()
        .await
        .unwrap();
    assert!(!failed.status.success());
    assert!(String::from_utf8_lossy(&failed.stderr).contains("not a member"));
}

#[tokio::test]
async fn a_minted_cookie_expires_after_its_lifetime() {
    let dir = tempfile::tempdir().unwrap();
    let p = Process::start(dir.path(), &[], &[]).await;
    let base = &p.base;
    let cookie = admin(
        dir.path(),
        &[
            "cookie",
            "--org",
            "org_default",
            "--user",
            "usr_default",
            "--ttl",
            // Long enough for the first call to land inside it on a loaded machine (expiry is
            // in whole seconds, so a 1 s cookie may have only a few milliseconds left).
            "3",
        ],
    )
    .await;
    let (first, _) = call(
        reqwest::Method::GET,
        base,
        "/api/managed-agents/sessions",
        &cookie,
        None,
    )
    .await;
    assert_eq!(first, 200);
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(8);
    loop {
        let (status, body) = call(
            reqwest::Method::GET,
            base,
            "/api/managed-agents/sessions",
            &cookie,
            None,
        )
        .await;
        if status == 401 {
            assert_eq!(body["error"]["code"], "unauthenticated");
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the cookie outlived its lifetime"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    p.kill().await;
}

#[tokio::test]
async fn sessions_survive_a_restart_of_the_service() {
    let first = Api::start().await;
    let id = first.create("remember me").await;
    first.settle().await;
    let before = first.all_events(&id).await;
    let dir = first.dir.clone();
    drop(first);
    let second = Api::start_on(dir, Arc::new(BuiltinAgent)).await;
    assert_eq!(second.all_events(&id).await, before);
    assert_eq!(second.message(&id, "still there?").await.status, 200);
}

#[tokio::test]
async fn kill_9_loses_nothing_acknowledged() {
    let dir = tempfile::tempdir().unwrap();
    let p = Process::start(dir.path(), &[], &[]).await;
    let base = &p.base;
    let cookie = admin(
        dir.path(),
        &["cookie", "--org", "org_default", "--user", "usr_default"],
    )
    .await;
    let mut acknowledged = vec![];
    for i in 0..10 {
        let (status, body) = call(
            reqwest::Method::POST,
            base,
            "/api/managed-agents/session",
            &cookie,
            Some(json!({ "text": format!("q{i}") })),
        )
        .await;
        assert_eq!(status, 200);
        acknowledged.push(body["id"].as_str().unwrap().to_owned());
    }
    p.kill().await; // SIGKILL

    let p = Process::start(dir.path(), &[], &[]).await;
    let base = &p.base;
    let listed = listed(base, &cookie).await;
    for id in &acknowledged {
        assert!(listed.contains(id), "{id} lost");
    }
    // Every session is answered, whether its run finished before the kill or was resumed.
    for id in &acknowledged {
        let k = wait_answered(base, &cookie, id).await;
        assert_eq!(k, ["user_message", "agent_message", "status_idle"], "{id}");
    }
    p.kill().await;
}

#[tokio::test]
async fn a_run_left_in_flight_by_a_dead_process_is_resumed_and_answered_at_start() {
    use knowledge_core::clock::{Clock, SystemClock};
    use knowledge_core::domain::{NewEvent, Session};
    use knowledge_core::ids::{OrgId, RunId, SessionId, SessionKey, UserId};
    use knowledge_core::ports::{SessionStore, Store};

    let dir = tempfile::tempdir().unwrap();
    // What a process killed mid-turn leaves behind: a claimed run and an unanswered message.
    let key = {
        let store = knowledge_local::SqliteStore::open(dir.path()).unwrap();
        knowledge_assembly::operator::Operator {
            store: Arc::new(store.clone()) as Arc<dyn Store>,
        }
        .bootstrap()
        .await
        .unwrap();
        let key = SessionKey {
            user: UserId::parse("usr_default").unwrap(),
            org: OrgId::parse("org_default").unwrap(),
            session: SessionId::generate(),
        };
        let now = SystemClock.now();
        let mut session = Session::new(key.clone(), "interrupted".into(), now);
        session.run_id = Some(RunId::generate());
        let events = session.place(now, vec![NewEvent::user_message("interrupted")]);
        session.pending.push(events[0].seq);
        store.create_session(&session, &events, None).await.unwrap();
        key
    };
    let p = Process::start(dir.path(), &[], &[]).await;
    let (base, printed) = (&p.base, &p.printed);
    assert!(printed.contains("resumed 1 run"), "{printed}");
    let cookie = admin(
        dir.path(),
        &["cookie", "--org", "org_default", "--user", "usr_default"],
    )
    .await;
    let k = wait_answered(base, &cookie, key.session.as_str()).await;
    assert_eq!(k, ["user_message", "agent_message", "status_idle"]);
    p.kill().await;
}

#[tokio::test]
async fn serve_on_dynamodb_answers_and_keeps_its_sessions_across_a_restart() {
    knowledge_test_support::skip_without_dynamodb!();
    let dir = tempfile::tempdir().unwrap();
    let endpoint = crate::support::dynamodb_endpoint();
    let table = format!("knowledge-bin-{}", uuid::Uuid::new_v4().simple());
    let store = [
        "--store",
        "dynamodb",
        "--dynamodb-endpoint",
        &endpoint,
        "--dynamodb-table",
        &table,
    ];
    let p = Process::start(dir.path(), &store, &[]).await;
    let (base, printed) = (&p.base, &p.printed);
    assert!(printed.contains("store dynamodb"), "{printed}");
    assert!(
        printed.contains("created organisation org_default"),
        "{printed}"
    );
    let cookie = admin(
        dir.path(),
        &["cookie", "--org", "org_default", "--user", "usr_default"],
    )
    .await;
    let (status, created) = call(
        reqwest::Method::POST,
        base,
        "/api/managed-agents/session",
        &cookie,
        Some(json!({ "text": "stored in DynamoDB?" })),
    )
    .await;
    assert_eq!(status, 200, "{created}");
    let id = created["id"].as_str().unwrap().to_owned();
    let answered = wait_answered(base, &cookie, &id).await;
    assert_eq!(answered, ["user_message", "agent_message", "status_idle"]);
    p.kill().await;

    // Nothing is kept in the data directory but the signing key: a new process finds the
    // session in the table, and does not create the default organisation again.
    let p = Process::start(dir.path(), &store, &[]).await;
    let (base, printed) = (&p.base, &p.printed);
    assert!(!printed.contains("created organisation"), "{printed}");
    assert_eq!(wait_answered(base, &cookie, &id).await, answered);
    let mut args = store.to_vec();
    args.extend(["org", "show", "--org", "org_default"]);
    let shown: Value = serde_json::from_str(&admin(dir.path(), &args).await).unwrap();
    assert_eq!(shown["usage"]["queries"], 1, "{shown}");
    assert!(!dir.path().join("store.db").exists());
}
