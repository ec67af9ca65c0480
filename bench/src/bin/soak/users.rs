//! The simulated users: each creates sessions, polls them with cursors, follows up, cancels
//! and deletes at random, and notes what the service acknowledged in the shared ledger.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::Options;

/// Latencies and outcomes per endpoint.
#[derive(Default)]
pub(crate) struct Stats {
    pub(crate) samples: HashMap<&'static str, Vec<Duration>>,
    pub(crate) limited: HashMap<&'static str, usize>,
    pub(crate) failed: HashMap<&'static str, usize>,
    pub(crate) cancel_latency: Vec<Duration>,
}

/// What a user knows of one of its sessions.
pub(crate) struct Known {
    pub(crate) id: String,
    /// User messages the service acknowledged.
    pub(crate) acknowledged: usize,
    pub(crate) cursor: Option<String>,
}

/// Everything the users learnt, for the final check.
#[derive(Default)]
pub(crate) struct Ledger {
    /// (cookie, session, acknowledged messages) of sessions not known to be deleted.
    pub(crate) live: Vec<(String, String, usize)>,
    /// (cookie, session) of acknowledged deletes.
    pub(crate) deleted: Vec<(String, String)>,
    /// (cookie, session) of deletes whose answer was lost (the service was killed).
    pub(crate) maybe_deleted: Vec<(String, String)>,
}

pub(crate) struct Client {
    pub(crate) http: reqwest::Client,
    pub(crate) base: String,
    pub(crate) cookie: String,
    pub(crate) stats: Arc<Mutex<Stats>>,
}

pub(crate) enum Outcome {
    Ok(Value),
    Limited,
    Status(u16),
    Unavailable,
}

impl Client {
    pub(crate) async fn call(
        &self, endpoint: &'static str, req: reqwest::RequestBuilder,
    ) -> Outcome {
        let started = Instant::now();
        let sent = req
            .header("cookie", &self.cookie)
            .header("origin", &self.base)
            .send()
            .await;
        let outcome = match sent {
            Err(_) => Outcome::Unavailable,
            Ok(r) if r.status().as_u16() == 429 => Outcome::Limited,
            Ok(r) if r.status().is_success() => {
                let body = r.json().await.unwrap_or(Value::Null);
                let elapsed = started.elapsed();
                let mut stats = self.stats.lock().unwrap();
                stats.samples.entry(endpoint).or_default().push(elapsed);
                return Outcome::Ok(body);
            }
            Ok(r) => Outcome::Status(r.status().as_u16()),
        };
        {
            let mut stats = self.stats.lock().unwrap();
            match outcome {
                Outcome::Limited => *stats.limited.entry(endpoint).or_default() += 1,
                _ => *stats.failed.entry(endpoint).or_default() += 1,
            }
        }
        // A user told to slow down (or finding the service down) waits a moment, as the app
        // would, rather than retrying in a tight loop.
        tokio::time::sleep(Duration::from_millis(500)).await;
        outcome
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}/api/managed-agents{path}", self.base)
    }

    pub(crate) async fn create(&self, text: &str) -> Outcome {
        let req = self
            .http
            .post(self.url("/session"))
            .json(&json!({ "text": text }));
        self.call("create", req).await
    }

    pub(crate) async fn message(&self, session: &str, text: &str) -> Outcome {
        let req = self
            .http
            .post(self.url("/message"))
            .json(&json!({ "sessionId": session, "text": text }));
        self.call("message", req).await
    }

    pub(crate) async fn cancel(&self, session: &str) -> Outcome {
        let req = self
            .http
            .post(self.url("/cancel"))
            .json(&json!({ "sessionId": session }));
        self.call("cancel", req).await
    }

    pub(crate) async fn delete(&self, session: &str) -> Outcome {
        let req = self
            .http
            .delete(self.url(&format!("/session?sessionId={session}")));
        self.call("delete", req).await
    }

    pub(crate) async fn list(&self) -> Outcome {
        self.call("list", self.http.get(self.url("/sessions")))
            .await
    }

    pub(crate) async fn transcript(&self, session: &str, cursor: Option<&str>) -> Outcome {
        let mut path = format!("/transcript?sessionId={session}");
        if let Some(c) = cursor {
            path.push_str(&format!("&sinceEventId={c}"));
        }
        self.call("transcript", self.http.get(self.url(&path)))
            .await
    }

    /// Polls with the cursor until the session has no run; returns the events read, or `None`
    /// when `deadline` passed first.
    pub(crate) async fn follow(
        &self, s: &mut Known, poll: Duration, deadline: Instant,
    ) -> Option<Vec<Value>> {
        let mut seen = Vec::new();
        while Instant::now() < deadline {
            match self.transcript(&s.id, s.cursor.as_deref()).await {
                Outcome::Ok(t) => {
                    let events = t["events"].as_array().cloned().unwrap_or_default();
                    if let Some(last) = events.last() {
                        s.cursor = last["id"].as_str().map(str::to_owned);
                    }
                    seen.extend(events);
                    if t["hasMore"] == true {
                        continue;
                    }
                    if t["workflowRunId"].is_null() {
                        return Some(seen);
                    }
                }
                Outcome::Status(404) => return Some(seen),
                _ => {}
            }
            tokio::time::sleep(poll).await;
        }
        None
    }
}

/// A small xorshift generator per user: the load is random but needs no shared state.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

pub(crate) async fn user(
    client: Client, seed: u64, o: Arc<Options>, stop: Instant, ledger: Arc<Mutex<Ledger>>,
) {
    let mut rng = Rng(seed | 1);
    let mut sessions: Vec<Known> = Vec::new();
    let poll = Duration::from_millis(o.poll_ms);
    // Creation is rate limited (10 a minute, 20 an hour): after a 429, the user works on the
    // sessions it has for a while, as a person would.
    let mut create_after = Instant::now();
    while Instant::now() < stop {
        let roll = rng.below(100);
        let may_create = Instant::now() >= create_after;
        if sessions.is_empty() && !may_create {
            tokio::time::sleep(poll).await;
            continue;
        }
        if may_create && (sessions.len() < 3 || (roll < 10 && sessions.len() < 8)) {
            match client
                .create(&format!("question {}", rng.below(1000)))
                .await
            {
                Outcome::Ok(body) => {
                    let mut s = Known {
                        id: body["id"].as_str().unwrap().to_owned(),
                        acknowledged: 1,
                        cursor: None,
                    };
                    client.follow(&mut s, poll, stop).await;
                    sessions.push(s);
                }
                Outcome::Limited => create_after = Instant::now() + Duration::from_secs(5),
                _ => tokio::time::sleep(poll).await,
            }
            continue;
        }
        let i = rng.below(sessions.len() as u64) as usize;
        match roll {
            0..60 => {
                if let Outcome::Ok(_) = client.message(&sessions[i].id, "and then?").await {
                    sessions[i].acknowledged += 1;
                }
                client.follow(&mut sessions[i], poll, stop).await;
            }
            60..80 => {
                if let Outcome::Ok(_) = client.message(&sessions[i].id, "stop me").await {
                    sessions[i].acknowledged += 1;
                }
                tokio::time::sleep(Duration::from_millis(rng.below(o.agent_ms / 2 + 1))).await;
                let sent = Instant::now();
                if let Outcome::Ok(_) = client.cancel(&sessions[i].id).await {
                    // Polled every 5 ms until the run's end shows, so the figure is the cancel's
                    // latency plus at most one short poll.
                    let fast = Duration::from_millis(5);
                    if let Some(events) = client.follow(&mut sessions[i], fast, stop).await
                        && events.iter().any(|e| e["type"] == "status_terminated")
                    {
                        let mut stats = client.stats.lock().unwrap();
                        stats.cancel_latency.push(sent.elapsed());
                    }
                }
            }
            80..90 if sessions.len() > 1 => {
                let s = sessions.swap_remove(i);
                let outcome = client.delete(&s.id).await;
                let mut ledger = ledger.lock().unwrap();
                match outcome {
                    Outcome::Ok(_) => ledger.deleted.push((client.cookie.clone(), s.id)),
                    Outcome::Unavailable => {
                        ledger.maybe_deleted.push((client.cookie.clone(), s.id))
                    }
                    _ => ledger
                        .live
                        .push((client.cookie.clone(), s.id, s.acknowledged)),
                }
            }
            _ => {
                client.list().await;
            }
        }
    }
    let mut ledger = ledger.lock().unwrap();
    for s in sessions {
        ledger
            .live
            .push((client.cookie.clone(), s.id, s.acknowledged));
    }
}
