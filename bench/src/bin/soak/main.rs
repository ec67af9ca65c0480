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

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::http::StatusCode;
use axum::routing::{get, post};
use knowledge_assembly::operator::Operator;
use knowledge_core::domain::Role;
use knowledge_core::ids::UserId;
use knowledge_core::ports::Store;
use knowledge_http::cookie::{COOKIE_NAME, CookieSigner};
use knowledge_local::SqliteStore;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

mod check;
mod users;

use check::*;
use users::*;

const KEY_HEX: &str = "0707070707070707070707070707070707070707070707070707070707070707";

pub(crate) struct Options {
    pub(crate) users: usize,
    pub(crate) seconds: u64,
    pub(crate) agent_ms: u64,
    pub(crate) poll_ms: u64,
    pub(crate) kill_every: Option<u64>,
    pub(crate) fail_percent: u64,
    pub(crate) binary: PathBuf,
    /// A DynamoDB stand-in to serve from, on a fresh table; SQLite without.
    pub(crate) dynamodb: Option<String>,
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
    let admin = Operator {
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
