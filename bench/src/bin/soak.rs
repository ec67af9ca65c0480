//! Soak benchmark: many simulated users against the release `knowledge` binary for a fixed
//! time, creating sessions, polling with cursors, following up, cancelling and deleting, while
//! the service may be killed with SIGKILL and restarted on the same data directory. The agent
//! is an OpenAI-compatible stand-in on loopback that answers after a delay, so cancels land on
//! turns in flight. At the end it checks the invariants: every acknowledged write is there,
//! every acknowledged delete is gone, no session is half-deleted or left with a run, and every
//! log is gap-free. With `--dynamodb-endpoint` the service runs on a fresh table of that
//! DynamoDB stand-in (moto) instead of SQLite, and the end also counts the runs still live in
//! the table's index of claims: a run a kill left behind must be revived, never stuck.
//! Prints Markdown for `docs/performance.md`; exits non-zero on a violation.
//!
//! Usage: soak [--users N] [--seconds T] [--agent-ms MS] [--poll-ms MS] [--kill-every SECS]
//!             [--fail-percent P] [--binary PATH] [--dynamodb-endpoint URL]
//! Build first: `cargo build --release -p knowledge-local -p knowledge-bench`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::http::StatusCode;
use axum::routing::{get, post};
use knowledge_core::clock::Timestamp;
use knowledge_core::domain::Role;
use knowledge_core::ids::UserId;
use knowledge_core::ports::Store;
use knowledge_http::cookie::{COOKIE_NAME, CookieSigner};
use knowledge_local::SqliteStore;
use knowledge_local::admin::Admin;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

const KEY_HEX: &str = "0707070707070707070707070707070707070707070707070707070707070707";

struct Options {
    users: usize,
    seconds: u64,
    agent_ms: u64,
    poll_ms: u64,
    kill_every: Option<u64>,
    fail_percent: u64,
    binary: PathBuf,
    /// A DynamoDB stand-in to serve from, on a fresh table; SQLite without.
    dynamodb: Option<String>,
}

fn options() -> Options {
    let mut o = Options {
        users: 40,
        seconds: 60,
        agent_ms: 300,
        poll_ms: 100,
        kill_every: None,
        fail_percent: 0,
        binary: PathBuf::from("target/release/knowledge"),
        dynamodb: None,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    for pair in args.chunks(2) {
        let value = pair.get(1).expect("every option takes a value");
        let number = || value.parse::<u64>().expect("a number");
        match pair[0].as_str() {
            "--users" => o.users = number() as usize,
            "--seconds" => o.seconds = number(),
            "--agent-ms" => o.agent_ms = number(),
            "--poll-ms" => o.poll_ms = number(),
            "--kill-every" => o.kill_every = Some(number()).filter(|s| *s > 0),
            "--fail-percent" => o.fail_percent = number().min(100),
            "--binary" => o.binary = PathBuf::from(value),
            "--dynamodb-endpoint" => o.dynamodb = Some(value.clone()),
            other => panic!("unknown option {other}"),
        }
    }
    o
}

/// An OpenAI-compatible provider on loopback that answers every completion after `delay`,
/// except `fail_percent` of them (spread evenly), which get a 500 at once: the workflow then
/// retries after its backoff, and some cancels land in a backoff.
async fn provider(delay: Duration, fail_percent: u64) -> String {
    let calls = Arc::new(AtomicU64::new(0));
    let app = Router::new()
        .route(
            "/v1/models",
            get(|| async { axum::Json(json!({"data": [{"id": "soak"}]})) }),
        )
        .route(
            "/v1/chat/completions",
            post(move || {
                let n = calls.fetch_add(1, Ordering::Relaxed);
                async move {
                    if n * fail_percent % 100 < fail_percent {
                        return (StatusCode::INTERNAL_SERVER_ERROR, axum::Json(json!({})));
                    }
                    tokio::time::sleep(delay).await;
                    let answer = json!({
                        "choices": [{"message": {"role": "assistant", "content": "An answer."}}],
                        "usage": {"prompt_tokens": 50, "completion_tokens": 5}
                    });
                    (StatusCode::OK, axum::Json(answer))
                }
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    base
}

/// Starts `knowledge serve` on `addr`; returns once it listens.
async fn start_service(
    o: &Options, dir: &Path, addr: &str, provider: &str, store: &[String],
) -> Child {
    let mut child = Command::new(&o.binary)
        .arg("--data-dir")
        .arg(dir)
        .args(store)
        .args(["serve", "--addr", addr])
        .env("KNOWLEDGE_SIGNING_KEY", KEY_HEX)
        .env("KNOWLEDGE_AGENT", "openai")
        .env("KNOWLEDGE_MODEL", "soak")
        .env("OPENAI_BASE_URL", provider)
        .env(
            "KNOWLEDGE_PRICES",
            r#"{"*":{"inputUsdPerMTok":0,"outputUsdPerMTok":0}}"#,
        )
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("the release binary runs; build it first");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    while let Some(line) = lines.next_line().await.unwrap() {
        if line.starts_with("knowledge service listening on") {
            tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
            return child;
        }
    }
    panic!("the service exited before listening");
}

/// Latencies and outcomes per endpoint.
#[derive(Default)]
struct Stats {
    samples: HashMap<&'static str, Vec<Duration>>,
    limited: HashMap<&'static str, usize>,
    failed: HashMap<&'static str, usize>,
    cancel_latency: Vec<Duration>,
}

/// What a user knows of one of its sessions.
struct Known {
    id: String,
    /// User messages the service acknowledged.
    acknowledged: usize,
    cursor: Option<String>,
}

/// Everything the users learnt, for the final check.
#[derive(Default)]
struct Ledger {
    /// (cookie, session, acknowledged messages) of sessions not known to be deleted.
    live: Vec<(String, String, usize)>,
    /// (cookie, session) of acknowledged deletes.
    deleted: Vec<(String, String)>,
    /// (cookie, session) of deletes whose answer was lost (the service was killed).
    maybe_deleted: Vec<(String, String)>,
}

struct Client {
    http: reqwest::Client,
    base: String,
    cookie: String,
    stats: Arc<Mutex<Stats>>,
}

enum Outcome {
    Ok(Value),
    Limited,
    Status(u16),
    Unavailable,
}

impl Client {
    async fn call(&self, endpoint: &'static str, req: reqwest::RequestBuilder) -> Outcome {
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

    fn url(&self, path: &str) -> String {
        format!("{}/api/managed-agents{path}", self.base)
    }

    async fn create(&self, text: &str) -> Outcome {
        let req = self
            .http
            .post(self.url("/session"))
            .json(&json!({ "text": text }));
        self.call("create", req).await
    }

    async fn message(&self, session: &str, text: &str) -> Outcome {
        let req = self
            .http
            .post(self.url("/message"))
            .json(&json!({ "sessionId": session, "text": text }));
        self.call("message", req).await
    }

    async fn cancel(&self, session: &str) -> Outcome {
        let req = self
            .http
            .post(self.url("/cancel"))
            .json(&json!({ "sessionId": session }));
        self.call("cancel", req).await
    }

    async fn delete(&self, session: &str) -> Outcome {
        let req = self
            .http
            .delete(self.url(&format!("/session?sessionId={session}")));
        self.call("delete", req).await
    }

    async fn list(&self) -> Outcome {
        self.call("list", self.http.get(self.url("/sessions")))
            .await
    }

    async fn transcript(&self, session: &str, cursor: Option<&str>) -> Outcome {
        let mut path = format!("/transcript?sessionId={session}");
        if let Some(c) = cursor {
            path.push_str(&format!("&sinceEventId={c}"));
        }
        self.call("transcript", self.http.get(self.url(&path)))
            .await
    }

    /// Polls with the cursor until the session has no run; returns the events read, or `None`
    /// when `deadline` passed first.
    async fn follow(&self, s: &mut Known, poll: Duration, deadline: Instant) -> Option<Vec<Value>> {
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
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

async fn user(
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

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

/// Checks every session the users knew of; returns the violations found.
async fn check(
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
async fn stuck_runs(store: &dyn Store) -> usize {
    let every = Timestamp(i64::MAX / 4);
    store.stale_runs(every, 100_000).await.unwrap().len()
}

/// The store the service runs on, as the benchmark reads it, and the options that point the
/// service at it.
async fn open_store(o: &Options, dir: &Path) -> (Arc<dyn Store>, Vec<String>) {
    match &o.dynamodb {
        None => (Arc::new(SqliteStore::open(dir).unwrap()), Vec::new()),
        Some(endpoint) => {
            let table = format!("knowledge-soak-{}", std::process::id());
            let client = knowledge_dynamo::connect(Some(endpoint), Default::default()).await;
            knowledge_dynamo::create_table_if_missing(&client, &table)
                .await
                .unwrap();
            let store = knowledge_dynamo::DynamoStore::new(client, &table);
            let args = [
                "--store",
                "dynamodb",
                "--dynamodb-endpoint",
                endpoint.as_str(),
            ];
            let mut args: Vec<String> = args.map(str::to_owned).to_vec();
            args.extend(["--dynamodb-table".to_owned(), table]);
            (Arc::new(store), args)
        }
    }
}

#[tokio::main]
async fn main() {
    let o = Arc::new(options());
    let dir = tempfile::tempdir().unwrap();
    let (store, store_args) = open_store(&o, dir.path()).await;
    let admin = Admin {
        store: store.clone(),
    };
    let (org, _) = admin.bootstrap().await.unwrap().unwrap();
    let signer = CookieSigner::new(&hex_key()).unwrap();
    let mut cookies = Vec::new();
    for i in 0..o.users {
        let user = UserId::parse(&format!("usr_soak{i}")).unwrap();
        admin
            .add_member(&org, Some(user.clone()), Role::Viewer)
            .await
            .unwrap();
        cookies.push(format!(
            "{COOKIE_NAME}={}",
            signer.mint(&user, &org, 86_400).unwrap()
        ));
    }

    let addr = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        probe.local_addr().unwrap().to_string()
    };
    let base = format!("http://{addr}");
    let provider = provider(Duration::from_millis(o.agent_ms), o.fail_percent).await;
    let mut child = start_service(&o, dir.path(), &addr, &provider, &store_args).await;

    let started = Instant::now();
    let stop = started + Duration::from_secs(o.seconds);
    let stats = Arc::new(Mutex::new(Stats::default()));
    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(4)
        .build()
        .unwrap();
    let mut users = tokio::task::JoinSet::new();
    for (i, cookie) in cookies.into_iter().enumerate() {
        let client = Client {
            http: http.clone(),
            base: base.clone(),
            cookie,
            stats: stats.clone(),
        };
        users.spawn(user(
            client,
            0x9e37_79b9 * (i as u64 + 1),
            o.clone(),
            stop,
            ledger.clone(),
        ));
    }
    let mut kills = 0;
    if let Some(every) = o.kill_every {
        while Instant::now() + Duration::from_secs(every) < stop {
            tokio::time::sleep(Duration::from_secs(every)).await;
            child.start_kill().unwrap();
            child.wait().await.unwrap();
            kills += 1;
            child = start_service(&o, dir.path(), &addr, &provider, &store_args).await;
        }
    }
    while users.join_next().await.is_some() {}
    let elapsed = started.elapsed();

    let ledger = std::mem::take(&mut *ledger.lock().unwrap());
    let violations = check(&http, &base, &ledger, &*store).await;
    child.start_kill().unwrap();

    let stats = stats.lock().unwrap();
    println!(
        "{} users, {:.0} s on {}, agent {} ms ({}% of calls answered 500), poll {} ms, {kills} \
         kill -9 and restart(s)\n",
        o.users,
        elapsed.as_secs_f64(),
        if o.dynamodb.is_some() {
            "DynamoDB (moto)"
        } else {
            "SQLite"
        },
        o.agent_ms,
        o.fail_percent,
        o.poll_ms
    );
    println!("| endpoint | 2xx | requests/s | p50 | p99 | 429 | other |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for endpoint in [
        "create",
        "message",
        "transcript",
        "list",
        "cancel",
        "delete",
    ] {
        let mut samples = stats.samples.get(endpoint).cloned().unwrap_or_default();
        samples.sort();
        println!(
            "| {endpoint} | {} | {:.0} | {} | {} | {} | {} |",
            samples.len(),
            samples.len() as f64 / elapsed.as_secs_f64(),
            ms(percentile(&samples, 0.5)),
            ms(percentile(&samples, 0.99)),
            stats.limited.get(endpoint).unwrap_or(&0),
            stats.failed.get(endpoint).unwrap_or(&0),
        );
    }
    let mut cancels = stats.cancel_latency.clone();
    cancels.sort();
    println!(
        "\ncancel sent to `status_terminated` seen (polled every 5 ms): {} cancels of a turn in \
         flight, p50 {}, p99 {}, max {}",
        cancels.len(),
        ms(percentile(&cancels, 0.5)),
        ms(percentile(&cancels, 0.99)),
        ms(cancels.last().copied().unwrap_or_default())
    );
    println!(
        "invariants: {} sessions kept, {} deleted (+{} deletes cut by a kill), {} violations",
        ledger.live.len(),
        ledger.deleted.len(),
        ledger.maybe_deleted.len(),
        violations.len()
    );
    for v in &violations {
        println!("  - {v}");
    }
    if !violations.is_empty() {
        std::process::exit(1);
    }
}

fn hex_key() -> Vec<u8> {
    (0..KEY_HEX.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&KEY_HEX[i..i + 2], 16).unwrap())
        .collect()
}
