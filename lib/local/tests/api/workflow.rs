//! The agent state machine (`infra/statemachine/agent.asl.json`) run by the local engine behind
//! the real HTTP server: normal turns, tool calls, queued follow-ups, a cancel or a delete at
//! every state transition in turn, retried and failing steps, and steps delivered twice.
//! Transitions are paused by an observer the engine awaits, so each interleaving is forced.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use knowledge_asl::{Observer, START_EXECUTION, StateMachine, TaskError, Tasks, handler_of};
use knowledge_assembly::workflow::AGENT_DEFINITION;
use knowledge_core::adapters::agent::BuiltinAgent;
use knowledge_core::ports::{Agent, AgentError, AgentReply, AgentRequest};
use knowledge_core::steps::Handler;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::support::{Api, GatedAgent, Setup, WAIT, WrapTasks, docs, kinds};

/// The states an execution enters to answer one message without tools and end its run.
pub(crate) const A_TURN_WITHOUT_TOOLS: [&str; 9] = [
    "LoadTurn",
    "Route",
    "CallAgent",
    "Route",
    "FinishTurn",
    "Route",
    "LoadTurn",
    "Route",
    "Done",
];

/// Records the states entered, in order.
#[derive(Default)]
struct Recorder(Mutex<Vec<String>>);

#[async_trait]
impl Observer for Recorder {
    async fn entering(&self, state: &str, _: &Value) {
        self.0.lock().unwrap().push(state.to_owned());
    }
}

impl Recorder {
    fn states(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

/// Pauses the execution when it enters its `at`-th state (from 0) and hands the test the state's
/// name and a sender that resumes it.
struct Pause {
    at: usize,
    seen: AtomicUsize,
    paused: mpsc::UnboundedSender<(String, oneshot::Sender<()>)>,
}

impl Pause {
    fn at(
        at: usize,
    ) -> (
        Arc<Self>,
        mpsc::UnboundedReceiver<(String, oneshot::Sender<()>)>,
    ) {
        let (tx, rx) = mpsc::unbounded_channel();
        let pause = Arc::new(Self {
            at,
            seen: AtomicUsize::new(0),
            paused: tx,
        });
        (pause, rx)
    }
}

#[async_trait]
impl Observer for Pause {
    async fn entering(&self, state: &str, _: &Value) {
        if self.seen.fetch_add(1, Ordering::SeqCst) == self.at {
            let (resume, resumed) = oneshot::channel();
            self.paused.send((state.to_owned(), resume)).unwrap();
            resumed.await.unwrap();
        }
    }
}

/// A service whose first session's run is paused as it enters its `at`-th state: the service,
/// the session id, the state's name, and the sender that resumes the run.
async fn paused_at(at: usize) -> (Api, String, String, oneshot::Sender<()>) {
    let (pause, mut paused) = Pause::at(at);
    let api = Api::start_setup(Setup {
        integrations: docs(),
        observer: pause,
        ..Setup::new(Arc::new(BuiltinAgent))
    })
    .await;
    let id = api.create("How do I cancel?").await;
    let (state, resume) = tokio::time::timeout(WAIT, paused.recv())
        .await
        .unwrap()
        .unwrap();
    (api, id, state, resume)
}

/// The states a turn with a docs search goes through, recorded from a run.
async fn path_of_a_turn_with_a_search() -> Vec<String> {
    let recorder = Arc::new(Recorder::default());
    let api = Api::start_setup(Setup {
        integrations: docs(),
        observer: recorder.clone(),
        ..Setup::new(Arc::new(BuiltinAgent))
    })
    .await;
    api.create("How do I cancel?").await;
    api.settle().await;
    let states = recorder.states();
    assert_eq!(
        states,
        [
            "LoadTurn",
            "Route",
            "CallAgent",
            "Route",
            "RunTool",
            "Route",
            "CallAgent",
            "Route",
            "FinishTurn",
            "Route",
            "LoadTurn",
            "Route",
            "Done"
        ]
    );
    states
}

#[tokio::test]
async fn every_task_of_the_state_machine_has_a_local_handler_and_every_handler_a_task() {
    // The steps, and the one service integration the handover uses.
    let names = [&Handler::ALL.map(Handler::name)[..], &[START_EXECUTION]].concat();
    let machine = StateMachine::load(AGENT_DEFINITION, &names).unwrap();
    let used: HashSet<&str> = machine.handlers();
    let handlers: HashSet<&str> = names.iter().copied().collect();
    assert_eq!(used, handlers);
    // Without one handler, the same file is refused at load time, naming the state.
    for missing in ["RunTool", START_EXECUTION] {
        let fewer: Vec<&str> = names.iter().copied().filter(|h| *h != missing).collect();
        let e = StateMachine::load(AGENT_DEFINITION, &fewer).unwrap_err();
        assert!(e.to_string().contains("no local handler"), "{e}");
    }
}

#[test]
fn each_steps_timeout_is_its_task_states_timeout_seconds() {
    let definition: Value = serde_json::from_str(AGENT_DEFINITION).unwrap();
    for (name, state) in definition["States"].as_object().unwrap() {
        let Some(handler) = state["Resource"].as_str().and_then(handler_of) else {
            continue;
        };
        let Some(handler) = Handler::named(handler) else {
            assert_eq!(handler, START_EXECUTION, "{name}");
            continue;
        };
        assert_eq!(
            state["TimeoutSeconds"].as_u64(),
            Some(handler.timeout().as_secs()),
            "{name}: the handover budget counts on this timeout"
        );
    }
}

#[tokio::test]
async fn a_normal_turn_goes_load_agent_finish_and_ends_the_run_quietly() {
    let recorder = Arc::new(Recorder::default());
    let api = Api::start_setup(Setup {
        observer: recorder.clone(),
        ..Setup::new(Arc::new(BuiltinAgent))
    })
    .await;
    let created = api
        .post(
            "/api/managed-agents/session",
            serde_json::json!({"text": "hello"}),
        )
        .await;
    assert_eq!(created.body["noConnectors"], true);
    let id = created.body["id"].as_str().unwrap();
    api.settle().await;
    assert_eq!(recorder.states(), A_TURN_WITHOUT_TOOLS);
    let events = api.all_events(id).await;
    assert_eq!(
        kinds(&events),
        ["user_message", "agent_message", "status_idle"]
    );
    assert!(
        events[1]["payload"]["text"]
            .as_str()
            .unwrap()
            .contains("No integrations are connected")
    );
    assert!(api.transcript(id).await.body["workflowRunId"].is_null());
}

#[tokio::test]
async fn a_turn_with_a_tool_call_records_the_search_and_answers_with_passages_and_sources() {
    let api = Api::start_setup(Setup {
        integrations: docs(),
        ..Setup::new(Arc::new(BuiltinAgent))
    })
    .await;
    let created = api
        .post(
            "/api/managed-agents/session",
            serde_json::json!({"text": "How do I cancel a running answer?"}),
        )
        .await;
    assert_eq!(created.body["noConnectors"], false);
    let id = created.body["id"].as_str().unwrap();
    api.settle().await;
    let events = api.all_events(id).await;
    assert_eq!(
        kinds(&events),
        [
            "user_message",
            "tool_use",
            "tool_result",
            "agent_message",
            "status_idle"
        ]
    );
    assert_eq!(events[1]["payload"]["tool"], "search_docs");
    assert_eq!(
        events[1]["payload"]["input"]["query"],
        "How do I cancel a running answer?"
    );
    let hits = events[2]["payload"]["output"].as_array().unwrap();
    assert_eq!(hits[0]["source"], "cancel.md");
    assert_eq!(hits[0]["heading"], "Cancelling");
    let answer = events[3]["payload"]["text"].as_str().unwrap();
    assert!(answer.contains("**Cancelling** (`cancel.md`)"), "{answer}");
    assert!(answer.contains("> POST the cancel endpoint"), "{answer}");
}

#[tokio::test]
async fn a_cancel_at_every_state_transition_terminates_a_turn_in_flight_once_and_no_other() {
    let path = path_of_a_turn_with_a_search().await;
    // The run owns the session until its last LoadTurn ends it, but its turn is in flight only
    // until FinishTurn commits status_idle: a cancel after that changes nothing.
    let last_load = path.iter().rposition(|s| s == "LoadTurn").unwrap();
    let finish = path.iter().rposition(|s| s == "FinishTurn").unwrap();
    for (at, expected) in path.iter().enumerate() {
        let (api, id, state, resume) = paused_at(at).await;
        assert_eq!(&state, expected);
        let running = !api.transcript(&id).await.body["workflowRunId"].is_null();
        assert_eq!(
            running,
            at <= last_load,
            "run in flight before {at}:{state}"
        );
        let cancelled = api.cancel(&id).await;
        assert_eq!(cancelled.status, 200);
        resume.send(()).unwrap();
        api.settle().await;
        let events = kinds(&api.all_events(&id).await);
        let terminated = events.iter().filter(|k| *k == "status_terminated").count();
        if at <= finish {
            assert_eq!(terminated, 1, "cancel before {at}:{state}: {events:?}");
            assert_eq!(events.last().unwrap(), "status_terminated", "{at}:{state}");
        } else {
            assert_eq!(
                terminated, 0,
                "cancel after the turn ended at {at}:{state}: {events:?}"
            );
            assert_eq!(events.last().unwrap(), "status_idle", "{at}:{state}");
            assert_eq!(
                cancelled.body,
                serde_json::json!({ "ok": true }),
                "{at}:{state}"
            );
        }
        assert!(api.transcript(&id).await.body["workflowRunId"].is_null());
    }
}

#[tokio::test]
async fn a_delete_at_every_state_transition_leaves_nothing_written_after_it() {
    let path = path_of_a_turn_with_a_search().await;
    for (at, expected) in path.iter().enumerate() {
        let (api, id, state, resume) = paused_at(at).await;
        assert_eq!(&state, expected);
        assert_eq!(
            api.send_delete(&format!("/api/managed-agents/session?sessionId={id}"))
                .await
                .status,
            200
        );
        resume.send(()).unwrap();
        api.settle().await;
        assert_eq!(
            api.svc.store.rows_for(&api.key(&id)).await.unwrap(),
            (0, 0),
            "delete before {at}:{state}"
        );
        assert_eq!(api.transcript(&id).await.status, 404);
    }
}

/// Fails its first `failures` calls as unreachable, then answers like the built-in agent.
struct FlakyAgent {
    failures: usize,
    calls: AtomicUsize,
}

#[async_trait]
impl Agent for FlakyAgent {
    async fn health(&self) -> Result<(), AgentError> {
        Ok(())
    }
    async fn respond(&self, request: AgentRequest) -> Result<AgentReply, AgentError> {
        if self.calls.fetch_add(1, Ordering::SeqCst) < self.failures {
            return Err(AgentError::Unreachable("connection reset".into()));
        }
        BuiltinAgent.respond(request).await
    }
}

#[tokio::test]
async fn a_step_failing_once_is_retried_and_the_turn_is_answered_without_an_error() {
    let agent = Arc::new(FlakyAgent {
        failures: 1,
        calls: AtomicUsize::new(0),
    });
    let api = Api::start_with(agent.clone()).await;
    let id = api.create("hello").await;
    api.settle().await;
    assert_eq!(
        kinds(&api.all_events(&id).await),
        ["user_message", "agent_message", "status_idle"]
    );
    assert_eq!(agent.calls.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_step_failing_for_good_writes_an_error_then_status_idle_after_its_retries() {
    let agent = Arc::new(FlakyAgent {
        failures: usize::MAX,
        calls: AtomicUsize::new(0),
    });
    let api = Api::start_with(agent.clone()).await;
    let id = api.create("hello").await;
    api.settle().await;
    let events = api.all_events(&id).await;
    assert_eq!(kinds(&events), ["user_message", "error", "status_idle"]);
    assert_eq!(
        events[1]["payload"],
        serde_json::json!({"code": "agent_failed", "message": "The agent could not answer this message."})
    );
    // The first attempt and the two retries of the definition's AgentFailed retrier.
    assert_eq!(agent.calls.load(Ordering::SeqCst), 3);
    assert!(api.transcript(&id).await.body["workflowRunId"].is_null());
}

/// Step handlers whose `FinishTurn` always fails with an error no retrier matches.
struct BrokenFinish(Arc<dyn Tasks>);

#[async_trait]
impl Tasks for BrokenFinish {
    async fn invoke(
        &self, handler: &str, input: Value, signal: CancellationToken,
    ) -> Result<Value, TaskError> {
        if handler == "FinishTurn" {
            return Err(TaskError::new(
                "Broken",
                "internal detail that must not leak",
            ));
        }
        self.0.invoke(handler, input, signal).await
    }
}

#[tokio::test]
async fn a_failure_of_the_workflow_itself_writes_an_error_then_status_terminated() {
    let api = Api::start_setup(Setup {
        wrap: |tasks| Arc::new(BrokenFinish(tasks)),
        ..Setup::new(Arc::new(BuiltinAgent))
    })
    .await;
    let id = api.create("hello").await;
    api.settle().await;
    let events = api.all_events(&id).await;
    assert_eq!(
        kinds(&events),
        [
            "user_message",
            "agent_message",
            "error",
            "status_terminated"
        ]
    );
    assert_eq!(events[2]["payload"]["code"], "workflow_failed");
    assert!(!events[2].to_string().contains("internal detail"));
    assert_eq!(events[3]["payload"]["reason"], "failed");
    // The session stays usable: a follow-up starts a fresh run (which fails the same way here).
    assert_eq!(api.message(&id, "again").await.status, 200);
    api.settle().await;
    let events = kinds(&api.all_events(&id).await);
    assert_eq!(events.len(), 8, "{events:?}");
}

/// Delivers every step twice, one after the other, and keeps the second's output.
struct Twice(Arc<dyn Tasks>);

#[async_trait]
impl Tasks for Twice {
    async fn invoke(
        &self, handler: &str, input: Value, signal: CancellationToken,
    ) -> Result<Value, TaskError> {
        self.0
            .invoke(handler, input.clone(), signal.clone())
            .await?;
        self.0.invoke(handler, input, signal).await
    }
}

/// Delivers every step twice at once and keeps the first's output.
struct TwiceAtOnce(Arc<dyn Tasks>);

#[async_trait]
impl Tasks for TwiceAtOnce {
    async fn invoke(
        &self, handler: &str, input: Value, signal: CancellationToken,
    ) -> Result<Value, TaskError> {
        let (a, b) = tokio::join!(
            self.0.invoke(handler, input.clone(), signal.clone()),
            self.0.invoke(handler, input, signal)
        );
        b?;
        a
    }
}

#[tokio::test]
async fn every_step_delivered_twice_in_turn_or_at_once_commits_its_events_once() {
    let wraps: [WrapTasks; 2] = [
        |tasks| Arc::new(Twice(tasks)),
        |tasks| Arc::new(TwiceAtOnce(tasks)),
    ];
    for wrap in wraps {
        let api = Api::start_setup(Setup {
            integrations: docs(),
            wrap,
            ..Setup::new(Arc::new(BuiltinAgent))
        })
        .await;
        let id = api.create("How do I cancel?").await;
        api.settle().await;
        assert_eq!(api.message(&id, "And deleting?").await.status, 200);
        api.settle().await;
        let turn = [
            "user_message",
            "tool_use",
            "tool_result",
            "agent_message",
            "status_idle",
        ];
        assert_eq!(kinds(&api.all_events(&id).await), [turn, turn].concat());
    }
}

#[tokio::test]
async fn twenty_follow_ups_posted_at_once_during_a_turn_are_each_answered_once_in_posting_order() {
    let agent = GatedAgent::new();
    let recorder = Arc::new(Recorder::default());
    let api = Api::start_setup(Setup {
        observer: recorder.clone(),
        ..Setup::new(agent.clone())
    })
    .await;
    let id = api.create("first").await;
    assert_eq!(agent.asked().await, "first");
    let posts = (0..20).map(|i| {
        let (api, id) = (&api, &id);
        async move { api.message(id, &format!("follow-up {i}")).await.status }
    });
    let statuses = futures_util::future::join_all(posts).await;
    assert!(statuses.iter().all(|s| *s == 200), "{statuses:?}");
    agent.release(21);
    api.settle().await;

    let events = api.all_events(&id).await;
    let asked: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "user_message")
        .map(|e| e["payload"]["text"].as_str().unwrap())
        .collect();
    let answered: Vec<String> = events
        .iter()
        .filter(|e| e["type"] == "agent_message")
        .map(|e| e["payload"]["text"].as_str().unwrap().to_owned())
        .collect();
    let expected: Vec<String> = asked.iter().map(|q| format!("answer to: {q}")).collect();
    assert_eq!(answered, expected, "each answered once, in the log's order");
    assert_eq!(asked.len(), 21);
    // One run answered them all, one turn each.
    let states = recorder.states();
    assert_eq!(states.iter().filter(|s| *s == "Done").count(), 1);
    assert_eq!(states.iter().filter(|s| *s == "FinishTurn").count(), 21);
}
