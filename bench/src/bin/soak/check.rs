//! The end of a soak: latency figures, and the check of every session the users knew of
//! against what the service acknowledged.

use std::time::{Duration, Instant};

use crate::users::*;
use knowledge_core::clock::Timestamp;
use knowledge_core::ports::Store;
use serde_json::Value;

pub(crate) fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

pub(crate) fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

/// Checks every session the users knew of; returns the violations found.
pub(crate) async fn check(
    http: &reqwest::Client, base: &str, ledger: &Ledger, store: &dyn Store,
) -> Vec<String> {
    let mut violations = Vec::new();
    let transcript = |cookie: &str, session: &str, since: Option<&str>| {
        let cursor = since.map_or(String::new(), |c| format!("&sinceEventId={c}"));
        http.get(format!(
            "{base}/api/managed-agents/transcript?sessionId={session}{cursor}"
        ))
        .header("cookie", cookie)
        .send()
    };
    // Every run settles once the load stops.
    let deadline = Instant::now() + Duration::from_secs(60);
    for (cookie, session, acknowledged) in &ledger.live {
        loop {
            let r = transcript(cookie, session, None).await.unwrap();
            if r.status() != 200 {
                violations.push(format!(
                    "{session}: acknowledged session answers {}",
                    r.status()
                ));
                break;
            }
            let t: Value = r.json().await.unwrap();
            if t["workflowRunId"].is_null() {
                break;
            }
            if Instant::now() > deadline {
                violations.push(format!("{session}: its run never ended"));
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        // The whole log, page by page, as a client follows it.
        let mut events: Vec<Value> = Vec::new();
        loop {
            let since = events.last().and_then(|e| e["id"].as_str());
            let r = transcript(cookie, session, since).await.unwrap();
            let t: Value = r.json().await.unwrap_or(Value::Null);
            events.extend(t["events"].as_array().cloned().unwrap_or_default());
            if t["hasMore"] != true {
                break;
            }
        }
        for (n, e) in events.iter().enumerate() {
            if e["id"].as_str() != Some(&format!("evt_{:012}", n + 1)) {
                violations.push(format!("{session}: event {} is {}", n + 1, e["id"]));
                break;
            }
        }
        let messages = events
            .iter()
            .filter(|e| e["type"] == "user_message")
            .count();
        if messages < *acknowledged {
            violations.push(format!(
                "{session}: {messages} messages, {acknowledged} acknowledged"
            ));
        }
    }
    for (cookie, session) in &ledger.deleted {
        let status = transcript(cookie, session, None).await.unwrap().status();
        if status != 404 {
            violations.push(format!("{session}: deleted, but answers {status}"));
        }
    }
    let half_deleted = store.deleting_sessions(1000).await.unwrap();
    if !half_deleted.is_empty() {
        violations.push(format!("{} sessions left half-deleted", half_deleted.len()));
    }
    let stuck = stuck_runs(store).await;
    if stuck > 0 {
        violations.push(format!("{stuck} runs still claimed once every run settled"));
    }
    violations
}

/// The runs still live in the store's index of claims, whenever they would go stale.
pub(crate) async fn stuck_runs(store: &dyn Store) -> usize {
    let every = Timestamp(i64::MAX / 4);
    store.stale_runs(every, 100_000).await.unwrap().len()
}
