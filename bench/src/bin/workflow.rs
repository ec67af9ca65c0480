//! Workflow benchmarks of the local service: how long a cancel takes to reach the log, and what
//! the ASL engine adds to a turn. Prints Markdown tables for `docs/performance.md`.
//!
//! Run from the repository root (the cancel benchmark searches `docs/guide`):
//! `cargo build --release -p knowledge-bench && target/release/workflow [cancels] [turns]`.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use knowledge_assembly::operator::Operator;
use knowledge_bench::{KEY, fresh_store, serve, settings};
use knowledge_core::adapters::agent::BuiltinAgent;
use knowledge_core::adapters::integrations::FixedIntegrations;
use knowledge_core::clock::{Clock, SystemClock};
use knowledge_core::domain::{EventKind, Role};
use knowledge_core::ids::{OrgId, RunId, SessionId, SessionKey, UserId};
use knowledge_core::ports::{
    Agent, AgentError, AgentReply, AgentRequest, Integrations, SessionStore, Store, Workflow,
    WorkflowError,
};
use knowledge_core::service::{Deps, Opening, Service, SignedIn};
use knowledge_core::steps::{ExecRef, Handler, StepInput, StepOutput, StepStores, Steps};
use knowledge_core::trace::TraceParent;
use knowledge_docs::TantivyDocs;
use knowledge_http::cookie::{COOKIE_NAME, CookieSigner};
use knowledge_local::{LocalService, SqliteStore};

/// How long the deliberately slow agent takes per step.
const SLOW_STEP: Duration = Duration::from_millis(400);
/// Sessions a benchmark user opens before the next user takes over (rate limits are per user).
const SESSIONS_PER_USER: usize = 8;

/// The built-in agent, slowed down to a provider's pace.
struct SlowAgent;

#[async_trait]
impl Agent for SlowAgent {
    async fn health(&self) -> Result<(), AgentError> {
        Ok(())
    }
    async fn respond(&self, request: AgentRequest) -> Result<AgentReply, AgentError> {
        tokio::time::sleep(SLOW_STEP).await;
        BuiltinAgent.respond(request).await
    }
}

fn random_below(bound: u64) -> u64 {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).unwrap();
    u64::from_le_bytes(bytes) % bound
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 * p) as usize).min(sorted.len() - 1)]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

/// A user who may open a few more sessions: a new member every [`SESSIONS_PER_USER`] calls.
struct Users {
    org: OrgId,
    current: Option<UserId>,
    opened: usize,
}

impl Users {
    async fn next(&mut self, store: &SqliteStore) -> UserId {
        if self.opened.is_multiple_of(SESSIONS_PER_USER) || self.current.is_none() {
            let member = Operator {
                store: std::sync::Arc::new(store.clone()),
            }
            .add_member(&self.org, None, Role::Viewer)
            .await
            .unwrap();
            self.current = Some(member.user);
        }
        self.opened += 1;
        self.current.clone().unwrap()
    }
}

/// Cancel request to `status_terminated` in the log, at random points of slow turns that search
/// the docs; four clients at once.
async fn cancel_latency(cancels: usize) {
    let (_dir, store, org, _) = fresh_store().await;
    let docs = TantivyDocs::open(Path::new("docs/guide")).expect("run from the repository root");
    let integrations = FixedIntegrations::new().connect(org.clone(), Arc::new(docs));
    let (_service, base) = serve(&store, Arc::new(SlowAgent), Arc::new(integrations)).await;

    let workers = 4;
    let tasks: Vec<_> = (0..workers)
        .map(|_| {
            let (store, base, org) = (store.clone(), base.clone(), org.clone());
            tokio::spawn(async move {
                let http = reqwest::Client::new();
                let signer = CookieSigner::new(&KEY).unwrap();
                let mut users = Users {
                    org: org.clone(),
                    current: None,
                    opened: 0,
                };
                let mut samples = vec![];
                for _ in 0..cancels / workers {
                    let user = users.next(&store).await;
                    let cookie =
                        format!("{COOKIE_NAME}={}", signer.mint(&user, &org, 3600).unwrap());
                    let created: serde_json::Value = http
                        .post(format!("{base}/api/managed-agents/session"))
                        .header("cookie", &cookie)
                        .header("origin", &base)
                        .json(&serde_json::json!({"text": "How do I cancel a running answer?"}))
                        .send()
                        .await
                        .unwrap()
                        .json()
                        .await
                        .unwrap();
                    let id = created["id"].as_str().expect("session created").to_owned();
                    let key = SessionKey {
                        user: user.clone(),
                        org: org.clone(),
                        session: SessionId::parse(&id).unwrap(),
                    };
                    // A random point of the turn, which takes two slow agent steps and a search.
                    tokio::time::sleep(Duration::from_millis(random_below(750))).await;
                    let sent = Instant::now();
                    let r = http
                        .post(format!("{base}/api/managed-agents/cancel"))
                        .header("cookie", &cookie)
                        .header("origin", &base)
                        .json(&serde_json::json!({"sessionId": id}))
                        .send()
                        .await
                        .unwrap();
                    assert_eq!(r.status(), 200);
                    loop {
                        let events = store.list_events(&key, 0, 100).await.unwrap();
                        if events
                            .iter()
                            .any(|e| e.kind() == EventKind::StatusTerminated)
                        {
                            samples.push(sent.elapsed());
                            break;
                        }
                        assert!(
                            events.iter().all(|e| e.kind() != EventKind::StatusIdle),
                            "the turn ended before the cancel"
                        );
                        tokio::time::sleep(Duration::from_millis(1)).await;
                    }
                }
                samples
            })
        })
        .collect();
    let mut all = vec![];
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    all.sort();
    println!(
        "Cancel latency, {} cancels at random points of a search turn ({} ms per agent step):\n",
        all.len(),
        SLOW_STEP.as_millis()
    );
    println!("| p50 | p90 | p99 | max |");
    println!("|---:|---:|---:|---:|");
    println!(
        "| {} | {} | {} | {} |\n",
        ms(percentile(&all, 0.5)),
        ms(percentile(&all, 0.9)),
        ms(percentile(&all, 0.99)),
        ms(*all.last().unwrap())
    );
}

/// Runs a run's steps by plain function calls, following each step's `next`: the baseline the
/// engine is compared with.
struct DirectWorkflow(Steps);

#[async_trait]
impl Workflow for DirectWorkflow {
    async fn start(
        &self, key: &SessionKey, run: &RunId, execution: &str, trace: Option<&TraceParent>,
    ) -> Result<(), WorkflowError> {
        let mut input = StepInput {
            execution: Some(ExecRef {
                id: format!("direct:{execution}"),
                name: execution.to_owned(),
                started_at: self.0.clock().now(),
            }),
            ..StepInput::start(key, run, trace)
        };
        let mut handler = Handler::LoadTurn;
        loop {
            let out = self
                .0
                .invoke(
                    handler,
                    serde_json::to_value(&input).unwrap(),
                    std::future::pending(),
                )
                .await
                .map_err(WorkflowError::new)?;
            let out: StepOutput = serde_json::from_value(out).unwrap();
            let Some(next) = out.next.handler() else {
                return Ok(());
            };
            handler = next;
            input.turn = out.turn;
        }
    }
    async fn cancelled(&self, _: &SessionKey, _: &RunId) {}
}

/// Time from the opening message to the end of its run with an instant agent, through the
/// engine and through direct calls of the same steps.
async fn turn_overhead(turns: usize) {
    println!(
        "Turn time with an instant agent, {turns} turns each (create session called to run ended):\n"
    );
    println!("| runner | p50 | p90 | p99 |");
    println!("|---|---:|---:|---:|");
    for engine in [false, true] {
        let (_dir, store, org, _) = fresh_store().await;
        let shared: Arc<dyn Store> = Arc::new(store.clone());
        let integrations: Arc<dyn Integrations> = Arc::new(FixedIntegrations::new());
        let agent: Arc<dyn Agent> = Arc::new(BuiltinAgent);
        let (service, local) = if engine {
            let local = LocalService::new(
                settings("http://bench", agent, integrations),
                knowledge_local::LocalStore::Sqlite(store.clone()),
                "bench",
            )
            .unwrap();
            (local.service.clone(), Some(local))
        } else {
            let steps = Steps::new(StepStores::of(&shared), Arc::new(SystemClock))
                .with_agent(agent.clone())
                .with_integrations(integrations.clone());
            let service = Service::new(Deps {
                store: shared,
                workflow: Arc::new(DirectWorkflow(steps)),
                clock: Arc::new(SystemClock),
                opening: Some(Opening {
                    agent,
                    integrations,
                }),
            });
            (service, None)
        };
        let mut users = Users {
            org: org.clone(),
            current: None,
            opened: 0,
        };
        let warm_up = 50;
        let mut samples = vec![];
        for i in 0..turns + warm_up {
            let user = users.next(&store).await;
            let who = SignedIn {
                user,
                org: org.clone(),
                signed_in_at: SystemClock.now(),
            };
            let started = Instant::now();
            service.create_session(&who, "hello").await.unwrap();
            if let Some(local) = &local {
                local.workflow.idle().await;
            }
            if i >= warm_up {
                samples.push(started.elapsed());
            }
        }
        samples.sort();
        println!(
            "| {} | {} | {} | {} |",
            if engine {
                "ASL engine (`LocalWorkflow`)"
            } else {
                "direct calls of the same steps"
            },
            ms(percentile(&samples, 0.5)),
            ms(percentile(&samples, 0.9)),
            ms(percentile(&samples, 0.99)),
        );
    }
    println!();
}

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let cancels: usize = args.next().map_or(200, |a| a.parse().expect("cancels"));
    let turns: usize = args.next().map_or(1000, |a| a.parse().expect("turns"));
    cancel_latency(cancels).await;
    turn_overhead(turns).await;
}
