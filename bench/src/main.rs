//! Transcript-poll benchmark: the real local service on a loopback port, polled over HTTP by a
//! keep-alive client. Prints a Markdown table for `docs/performance.md`.
//!
//! Run: `cargo run --release -p knowledge-bench -- [requests per scenario] [concurrency]
//! [only the scenarios whose name holds this]`. The first rows are the baselines, measured in
//! the same run: a bare axum server (`axum::serve`, nothing of the service) answering a tail
//! poll's bytes, then the service's server and edge (limits, compression, request log) doing
//! the same.
//!
//! `transcript-poll wrk [options]` measures a tail poll and bare axum with `wrk` instead, in
//! alternating rounds: see [`wrk::Plan`].

mod wrk;

use std::sync::Arc;
use std::time::{Duration, Instant};

use knowledge_bench::{KEY, fresh_store, serve};
use knowledge_core::adapters::agent::BuiltinAgent;
use knowledge_core::adapters::integrations::FixedIntegrations;
use knowledge_core::clock::{Clock, SystemClock};
use knowledge_core::domain::{NewEvent, Session};
use knowledge_core::ids::{EventId, OrgId, SessionId, SessionKey, UserId};
use knowledge_core::ports::SessionStore;
use knowledge_http::cookie::{COOKIE_NAME, CookieSigner};
use knowledge_local::SqliteStore;

struct Scenario {
    name: String,
    path: String,
}

struct Figures {
    rps: f64,
    p50: Duration,
    p99: Duration,
}

/// Creates a session holding `events` user messages; returns its id.
async fn seed(store: &SqliteStore, user: &UserId, org: &OrgId, events: usize) -> SessionId {
    let key = SessionKey {
        user: user.clone(),
        org: org.clone(),
        session: SessionId::generate(),
    };
    let now = SystemClock.now();
    let mut session = Session::new(key.clone(), format!("{events} events"), now);
    let text = "A question of ordinary length, about eighty characters, as users tend to ask.";
    let placed = session.place(
        now,
        (0..events).map(|_| NewEvent::user_message(text)).collect(),
    );
    store
        .create_session(&session, &placed, None)
        .await
        .expect("seed");
    key.session
}

async fn measure(
    client: &reqwest::Client, url: &str, cookie: &str, requests: usize, concurrency: usize,
) -> Figures {
    for _ in 0..200 {
        let r = client
            .get(url)
            .header("cookie", cookie)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        r.bytes().await.unwrap();
    }
    let started = Instant::now();
    let per_task = requests / concurrency;
    let tasks: Vec<_> = (0..concurrency)
        .map(|_| {
            let (client, url, cookie) = (client.clone(), url.to_owned(), cookie.to_owned());
            tokio::spawn(async move {
                let mut latencies = Vec::with_capacity(per_task);
                for _ in 0..per_task {
                    let t = Instant::now();
                    let r = client
                        .get(&url)
                        .header("cookie", &cookie)
                        .send()
                        .await
                        .unwrap();
                    assert_eq!(r.status(), 200);
                    r.bytes().await.unwrap();
                    latencies.push(t.elapsed());
                }
                latencies
            })
        })
        .collect();
    let mut all = vec![];
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    let elapsed = started.elapsed();
    all.sort();
    let pct = |p: f64| all[((all.len() as f64 * p) as usize).min(all.len() - 1)];
    Figures {
        rps: all.len() as f64 / elapsed.as_secs_f64(),
        p50: pct(0.50),
        p99: pct(0.99),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let plan =
        (args.first().map(String::as_str) == Some("wrk")).then(|| wrk::Plan::parse(&args[1..]));
    // Before the runtime's threads start: they inherit this thread's CPUs.
    if let Some(plan) = &plan {
        plan.pin_this_process();
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    match plan {
        Some(plan) => runtime.block_on(with_wrk(plan)),
        None => runtime.block_on(with_client(args)),
    }
}

/// The real service over a fresh store with seeded sessions, and a member's cookie.
struct Bench {
    _dir: tempfile::TempDir,
    _service: knowledge_local::LocalService,
    cookie: String,
    scenarios: Vec<Scenario>,
}

impl Bench {
    /// Starts the service and seeds sessions of 10, 1,000 and 10,000 events; the first
    /// scenario is the tail poll of the 10-event one.
    async fn start() -> Self {
        let (dir, store, org, user) = fresh_store().await;
        let (service, base) = serve(
            &store,
            Arc::new(BuiltinAgent),
            Arc::new(FixedIntegrations::new()),
        )
        .await;
        let signer = CookieSigner::new(&KEY).unwrap();
        let cookie = format!("{COOKIE_NAME}={}", signer.mint(&user, &org, 3600).unwrap());

        let transcript = |s: &SessionId, since: Option<u64>| match since {
            None => format!("{base}/api/managed-agents/transcript?sessionId={s}"),
            Some(seq) => format!(
                "{base}/api/managed-agents/transcript?sessionId={s}&sinceEventId={}",
                EventId::from_seq(seq)
            ),
        };
        let mut scenarios = vec![];
        for n in [10usize, 1_000, 10_000] {
            let s = seed(&store, &user, &org, n).await;
            scenarios.push(Scenario {
                name: format!("{n} events, poll at the tail (nothing new)"),
                path: transcript(&s, Some(n as u64)),
            });
            scenarios.push(Scenario {
                name: format!("{n} events, 10 new since the cursor"),
                path: transcript(&s, Some(n as u64 - 10)),
            });
            if n >= 1_000 {
                scenarios.push(Scenario {
                    name: format!("{n} events, first page (100 events)"),
                    path: transcript(&s, None),
                });
            }
        }
        Self {
            _dir: dir,
            _service: service,
            cookie,
            scenarios,
        }
    }

    /// The bytes of the tail poll (the first scenario), as the service answers them.
    async fn tail_body(&self, client: &reqwest::Client) -> axum::body::Bytes {
        let r = client
            .get(&self.scenarios[0].path)
            .header("cookie", &self.cookie)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        r.bytes().await.unwrap()
    }
}

/// wrk against bare axum and the tail poll, in alternating rounds.
async fn with_wrk(plan: wrk::Plan) {
    let bench = Bench::start().await;
    let body = bench.tail_body(&reqwest::Client::new()).await;
    let bare = bare_axum(body).await;
    let tail = bench.scenarios[0].path.clone();
    let cookie = bench.cookie.clone();
    // wrk blocks while it runs: off the runtime's workers, which serve.
    tokio::task::spawn_blocking(move || plan.run(&bare, &tail, &cookie))
        .await
        .unwrap();
}

/// The keep-alive client (reqwest) against every scenario and the baselines.
async fn with_client(args: Vec<String>) {
    let mut args = args.into_iter();
    let requests: usize = args.next().map_or(5_000, |a| a.parse().expect("requests"));
    let concurrency: usize = args.next().map_or(8, |a| a.parse().expect("concurrency"));
    // Only the scenarios whose name holds this (a profile of one of them, say).
    let only = args.next().unwrap_or_default();
    let bench = Bench::start().await;
    let (cookie, scenarios) = (&bench.cookie, &bench.scenarios);

    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(concurrency)
        .build()
        .unwrap();
    // The baseline: the same server and router stack answering the bytes of a tail poll.
    let body = bench.tail_body(&client).await;
    let bare = bare_axum(body.clone()).await;
    let server = service_server(answering(body.clone())).await;
    let edge = service_server(knowledge_http::edge(answering(body), Vec::new)).await;

    println!("{requests} requests per scenario, {concurrency} concurrent keep-alive connections\n");
    println!("| scenario | requests/s | p50 | p99 |");
    println!("|---|---:|---:|---:|");
    let baseline = measure(&client, &bare, cookie, requests, concurrency).await;
    print_row("bare axum: axum::serve answering those bytes", &baseline);
    let served = measure(&client, &server, cookie, requests, concurrency).await;
    print_row(
        "the service's server (its timeouts and limits), the same",
        &served,
    );
    let edged = measure(&client, &edge, cookie, requests, concurrency).await;
    print_row(
        "the service's server and edge (head limits, compression, request log), the same",
        &edged,
    );
    let mut tail_rps = None;
    for s in scenarios.iter().filter(|s| s.name.contains(&only)) {
        let f = measure(&client, &s.path, cookie, requests, concurrency).await;
        print_row(&s.name, &f);
        if std::ptr::eq(s, &scenarios[0]) {
            tail_rps = Some(f.rps);
        }
    }
    // The bare baseline again, last: the machine's speed drifts during a run, and the ratio
    // takes the faster of the two (the less flattering).
    let again = measure(&client, &bare, cookie, requests, concurrency).await;
    print_row("bare axum, again (last)", &again);
    let baseline = if again.rps > baseline.rps {
        again
    } else {
        baseline
    };
    // The ratio of the scenario whose bytes the baseline answers, when it was measured.
    if let Some(tail_rps) = tail_rps {
        println!(
            "\nA tail poll (10 events) runs at {:.2} of bare axum's rate ({:.2} of the \
             service's server and edge).",
            tail_rps / baseline.rps,
            tail_rps / edged.rps
        );
    }
}

fn print_row(name: &str, f: &Figures) {
    println!(
        "| {} | {:.0} | {:.2} ms | {:.2} ms |",
        name,
        f.rps,
        f.p50.as_secs_f64() * 1e3,
        f.p99.as_secs_f64() * 1e3
    );
}

/// A router answering `body` as JSON at `/bare`.
fn answering(body: axum::body::Bytes) -> axum::Router {
    axum::Router::new().route(
        "/bare",
        axum::routing::get(move || {
            let body = body.clone();
            async move {
                (
                    [(axum::http::header::CONTENT_TYPE, "application/json")],
                    body,
                )
            }
        }),
    )
}

/// Serves `body` at `/bare` with `axum::serve` alone, on an ephemeral 127.0.0.1 port;
/// returns the URL.
async fn bare_axum(body: axum::body::Bytes) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/bare", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, answering(body)).await.unwrap() });
    url
}

/// Serves `router` through the local server (its connection handling and limits), on an
/// ephemeral 127.0.0.1 port; returns the URL of `/bare`.
async fn service_server(router: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/bare", listener.local_addr().unwrap());
    tokio::spawn(knowledge_local::server::serve(
        listener,
        router,
        Default::default(),
        std::future::pending(),
    ));
    url
}
