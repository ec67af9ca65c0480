//! Crash recovery of the documents on the real binary: the `knowledge` process is stopped at a
//! named fault point of an indexing or of an upload (`knowledge_core::fault`), killed there with
//! SIGKILL, and started again on the same data directory. A document being indexed is indexed
//! at once after the restart (its dead worker's lease released) and found exactly once; an
//! upload cut short between storing its original and queueing it is queued by the sweep once
//! it is an hour old (the restarted process's clock moved past it), and one whose file never
//! came is deleted, its bytes released. And a file that needs more memory than its reader may
//! have ends `failed` alone: the process that reads it is a child, and the service goes on.

use std::path::Path;
use std::time::Duration;

use knowledge_core::fault::CLOCK_OFFSET_ENV;
use reqwest::Method;
use serde_json::{Value, json};

use crate::binary::{Process, admin, call};
use crate::crashes::{fresh_table, on_dynamodb};
use crate::support::WAIT;

/// A document of one passage.
const TRAVEL: &str = "# Travel\n\nThe per diem for Lisbon is forty euros a day.\n";

async fn cookie(dir: &Path) -> String {
    admin(
        dir,
        &["cookie", "--org", "org_default", "--user", "usr_default"],
    )
    .await
}

/// A collection open to everyone; its id.
async fn collection(p: &Process, cookie: &str) -> String {
    let body = json!({ "name": "Handbook", "description": "", "access": { "kind": "everyone" } });
    let path = "/api/admin/collections";
    let (status, made) = call(Method::POST, &p.base, path, cookie, Some(body)).await;
    assert_eq!(status, 201, "{made}");
    made["id"].as_str().unwrap().to_owned()
}

/// Announces `name` of `bytes` bytes in collection `c`; the answer (the document `uploading`
/// and where to send its file).
async fn announce(p: &Process, cookie: &str, c: &str, name: &str, bytes: usize) -> Value {
    let path = format!("/api/admin/collections/{c}/documents");
    let body = json!({ "name": name, "bytes": bytes });
    let (status, started) = call(Method::POST, &p.base, &path, cookie, Some(body)).await;
    assert_eq!(status, 201, "{started}");
    assert_eq!(started["document"]["status"], "uploading", "{started}");
    started
}

/// The request that sends `bytes` where the announcement `started` says, as the app does.
fn original(
    p: &Process, cookie: &str, started: &Value, bytes: impl Into<reqwest::Body>,
) -> reqwest::RequestBuilder {
    let target = &started["upload"];
    assert_eq!(target["method"], "PUT", "{started}");
    let url = format!("{}{}", p.base, target["url"].as_str().unwrap());
    reqwest::Client::new()
        .put(url)
        .header("cookie", cookie)
        .header("origin", &p.base)
        .header("content-type", "application/octet-stream")
        .body(bytes)
}

/// The admin's list of collection `c`'s documents.
async fn documents(p: &Process, cookie: &str, c: &str) -> Vec<Value> {
    let path = format!("/api/admin/collections/{c}/documents");
    let (status, list) = call(Method::GET, &p.base, &path, cookie, None).await;
    assert_eq!(status, 200, "{list}");
    list["documents"].as_array().unwrap().clone()
}

/// Polls the admin's list (bounded) until document `d` has left `uploading` and `queued`;
/// returns it as listed.
async fn settled(p: &Process, cookie: &str, c: &str, d: &str) -> Value {
    let done = tokio::time::timeout(WAIT, async {
        loop {
            let listed = documents(p, cookie, c).await;
            let doc = listed.into_iter().find(|x| x["id"] == d);
            if let Some(doc) = doc.filter(|x| x["status"] == "indexed" || x["status"] == "failed") {
                return doc;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    done.await
        .unwrap_or_else(|_| panic!("{d} was never indexed"))
}

/// The passages of document `d` a search for `q` finds, by their place in it.
async fn found(p: &Process, cookie: &str, q: &str, d: &str) -> Vec<u64> {
    let path = format!("/api/search?q={q}");
    let (status, results) = call(Method::GET, &p.base, &path, cookie, None).await;
    assert_eq!(status, 200, "{results}");
    let results = results["results"].as_array().unwrap();
    (results.iter())
        .filter(|r| r["documentId"] == d)
        .map(|r| r["passage"].as_u64().unwrap())
        .collect()
}

/// Where an indexing can be cut short: its passages parsed but not committed to the index, and
/// committed but the document not yet marked `indexed`.
const INDEX_POINTS: [&str; 2] = ["index.parsed", "index.committed"];

#[tokio::test]
async fn a_kill_while_indexing_is_recovered_at_restart_and_the_document_found_once() {
    for point in INDEX_POINTS {
        let dir = tempfile::tempdir().unwrap();
        let mut p = Process::start(dir.path(), &[], &[point]).await;
        let cookie = cookie(dir.path()).await;
        let c = collection(&p, &cookie).await;
        let started = announce(&p, &cookie, &c, "travel.md", TRAVEL.len()).await;
        let sent = original(&p, &cookie, &started, TRAVEL)
            .send()
            .await
            .unwrap();
        assert_eq!(sent.status(), 200, "{point}");
        let d = started["document"]["id"].as_str().unwrap().to_owned();
        p.stopped_at(point).await;
        p.kill().await;

        let p = Process::start(dir.path(), &[], &[]).await;
        assert!(
            p.printed.contains("released 1 document(s)"),
            "{point}: {}",
            p.printed
        );
        let doc = settled(&p, &cookie, &c, &d).await;
        assert_eq!(doc["status"], "indexed", "{point}: {doc}");
        assert_eq!(doc["passages"], 1, "{point}: {doc}");
        assert_eq!(doc["generation"], 1, "{point}: {doc}");
        assert_eq!(
            found(&p, &cookie, "lisbon", &d).await,
            [0],
            "{point}: found once"
        );
        p.kill().await;
    }
}

#[tokio::test]
async fn an_upload_cut_short_before_its_queueing_is_indexed_by_the_sweep_an_hour_on() {
    upload_cut_short(&[]).await;
}

#[tokio::test]
async fn on_dynamodb_an_upload_cut_short_before_its_queueing_is_indexed_by_the_sweep() {
    knowledge_test_support::skip_without_dynamodb!();
    let store = on_dynamodb(&fresh_table());
    upload_cut_short(&store.iter().map(String::as_str).collect::<Vec<_>>()).await;
}

/// Kills `serve` (with `options`) with one upload's original stored but not queued and
/// another's never sent; restarts it within the hour, then an hour on.
async fn upload_cut_short(options: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let mut p = Process::start(dir.path(), options, &["receive.stored"]).await;
    let cookie = cookie(dir.path()).await;
    let c = collection(&p, &cookie).await;
    // The browser announces a file and never sends it.
    let unsent = announce(&p, &cookie, &c, "unsent.md", 40).await;
    let unsent = unsent["document"]["id"].as_str().unwrap().to_owned();
    // The process dies with this one's original stored, before queueing it.
    let started = announce(&p, &cookie, &c, "travel.md", TRAVEL.len()).await;
    let d = started["document"]["id"].as_str().unwrap().to_owned();
    let request = original(&p, &cookie, &started, TRAVEL);
    tokio::spawn(async move {
        let _ = request.send().await;
    });
    p.stopped_at("receive.stored").await;
    p.kill().await;

    // Within the hour, the sweep leaves both: their files may be on their way.
    let p = Process::start(dir.path(), options, &[]).await;
    assert!(!p.printed.contains("settled uploads"), "{}", p.printed);
    let listed = documents(&p, &cookie, &c).await;
    assert_eq!(listed.len(), 2, "{listed:?}");
    assert!(
        listed.iter().all(|x| x["status"] == "uploading"),
        "{listed:?}"
    );
    p.kill().await;

    // An hour on, the sweep at the start settles them.
    let offset = (knowledge_core::documents::UPLOAD_STALE_MS + 60_000).to_string();
    let env = [(CLOCK_OFFSET_ENV, offset.as_str())];
    let p = Process::start_with(dir.path(), options, &[], &env).await;
    assert!(
        p.printed
            .contains("settled uploads cut short: 1 queued, 0 failed, 1 deleted"),
        "{}",
        p.printed
    );
    let doc = settled(&p, &cookie, &c, &d).await;
    assert_eq!(doc["status"], "indexed", "{doc}");
    assert_eq!(doc["passages"], 1, "{doc}");
    let sha = doc["sha256"].as_str().unwrap_or_default();
    assert_eq!(sha.len(), 64, "the original's digest is recorded: {doc}");
    assert_eq!(found(&p, &cookie, "lisbon", &d).await, [0]);
    let listed = documents(&p, &cookie, &c).await;
    assert!(listed.iter().all(|x| x["id"] != unsent), "{listed:?}");
    let (_, collections) = call(
        Method::GET,
        &p.base,
        "/api/admin/collections",
        &cookie,
        None,
    )
    .await;
    assert_eq!(
        collections["storage"]["usedBytes"],
        TRAVEL.len(),
        "the unsent file's bytes are released: {collections}"
    );
    let audit = [&["audit", "--org", "org_default"], options].concat();
    let audit = admin(dir.path(), &audit).await;
    let entries: Vec<Value> = (audit.lines())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let deleted = (entries.iter())
        .find(|e| e["action"] == "document.deleted")
        .expect("the sweep's deletion is audited");
    assert_eq!(deleted["target"], unsent.as_str(), "{deleted}");
    // As the service's own changes (a synced folder's) are audited: by the operator.
    assert_eq!(deleted["actor"], "command-line", "{deleted}");
    assert!(deleted["actorId"].is_null(), "by no member: {deleted}");
    p.kill().await;
}

#[tokio::test]
async fn a_pdf_that_expands_past_the_readers_memory_fails_alone_and_indexing_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let p = Process::start(dir.path(), &["--parse-memory-mib", "128"], &[]).await;
    let cookie = cookie(dir.path()).await;
    let c = collection(&p, &cookie).await;
    // 3.3 MB that expand to half a gibibyte.
    let bomb = knowledge_ingest::samples::flate_bomb_pdf(512 << 20);
    let started = announce(&p, &cookie, &c, "bomb.pdf", bomb.len()).await;
    let sent = original(&p, &cookie, &started, bomb).send().await.unwrap();
    assert_eq!(sent.status(), 200);
    let bomb = started["document"]["id"].as_str().unwrap().to_owned();
    let started = announce(&p, &cookie, &c, "travel.md", TRAVEL.len()).await;
    let sent = original(&p, &cookie, &started, TRAVEL)
        .send()
        .await
        .unwrap();
    assert_eq!(sent.status(), 200);
    let travel = started["document"]["id"].as_str().unwrap().to_owned();

    let failed = settled(&p, &cookie, &c, &bomb).await;
    assert_eq!(failed["status"], "failed", "{failed}");
    assert_eq!(
        failed["reason"],
        "reading the file needed more than 128 MiB of memory"
    );
    let indexed = settled(&p, &cookie, &c, &travel).await;
    assert_eq!(indexed["status"], "indexed", "{indexed}");
    assert_eq!(found(&p, &cookie, "lisbon", &travel).await, [0]);
    p.kill().await;
}
