//! A turn that outgrows its execution, on the local engine behind the real HTTP server: the
//! step that could run past the five-minute limit hands the run over, the `Handover` state
//! starts the next execution, and that one finishes the turn, or terminates it when a cancel
//! came in between. The clock is moved while the engine waits at a chosen state.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use knowledge_asl::Observer;
use knowledge_core::adapters::agent::BuiltinAgent;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use crate::support::{Api, Setup, WAIT, kinds};
use crate::workflow::A_TURN_WITHOUT_TOOLS;

/// Milliseconds after an execution's start past which a `CallAgent` (120 s, less the 60 s
/// reserve out of 300 s) no longer starts in it.
const PAST_AGENT_BUDGET_MS: i64 = 121_000;

/// Records every state entered, in order, and stops the first time an execution enters each of
/// the named states, until the test resumes it.
struct Stops {
    at: Vec<&'static str>,
    seen: Mutex<HashSet<String>>,
    states: Mutex<Vec<String>>,
    stopped: mpsc::UnboundedSender<(String, oneshot::Sender<()>)>,
}

#[async_trait]
impl Observer for Stops {
    async fn entering(&self, state: &str, _: &Value) {
        self.states.lock().unwrap().push(state.to_owned());
        if self.at.contains(&state) && self.seen.lock().unwrap().insert(state.to_owned()) {
            let (resume, resumed) = oneshot::channel();
            self.stopped.send((state.to_owned(), resume)).unwrap();
            resumed.await.unwrap();
        }
    }
}

/// A service whose executions stop at `at`, and the receiver of the stops.
async fn stopping_at(
    at: Vec<&'static str>,
) -> (
    Api,
    Arc<Stops>,
    mpsc::UnboundedReceiver<(String, oneshot::Sender<()>)>,
) {
    let (tx, rx) = mpsc::unbounded_channel();
    let stops = Arc::new(Stops {
        at,
        seen: Mutex::default(),
        states: Mutex::default(),
        stopped: tx,
    });
    let api = Api::start_setup(Setup {
        observer: stops.clone(),
        ..Setup::new(Arc::new(BuiltinAgent))
    })
    .await;
    (api, stops, rx)
}

/// Waits (bounded) for the next stop, which must be at `state`.
async fn stop(
    rx: &mut mpsc::UnboundedReceiver<(String, oneshot::Sender<()>)>, state: &str,
) -> oneshot::Sender<()> {
    let (at, resume) = tokio::time::timeout(WAIT, rx.recv())
        .await
        .expect("the execution reaches its stop")
        .unwrap();
    assert_eq!(at, state);
    resume
}

fn sorted(states: &[String]) -> Vec<String> {
    let mut states = states.to_vec();
    states.sort();
    states
}

#[tokio::test]
async fn a_turn_that_outgrows_its_execution_is_handed_over_and_answered_once() {
    let (api, stops, mut rx) = stopping_at(vec!["CallAgent"]).await;
    let id = api.create("hello").await;
    let resume = stop(&mut rx, "CallAgent").await;
    api.clock.advance(PAST_AGENT_BUDGET_MS);
    resume.send(()).unwrap();
    api.settle().await;

    let events = api.all_events(&id).await;
    assert_eq!(
        kinds(&events),
        ["user_message", "agent_message", "status_idle"]
    );
    assert!(api.transcript(&id).await.body["workflowRunId"].is_null());
    let states = stops.states.lock().unwrap().clone();
    assert_eq!(
        states[..5],
        ["LoadTurn", "Route", "CallAgent", "Route", "Handover"]
    );
    // The first execution's end and the second's whole turn interleave.
    let rest: Vec<String> = std::iter::once("Done")
        .chain(A_TURN_WITHOUT_TOOLS)
        .map(String::from)
        .collect();
    assert_eq!(sorted(&states[5..]), sorted(&rest));
}

#[tokio::test]
async fn a_cancel_during_a_handover_is_terminated_by_the_next_execution_once() {
    let (api, stops, mut rx) = stopping_at(vec!["CallAgent", "Handover"]).await;
    let id = api.create("hello").await;
    let resume = stop(&mut rx, "CallAgent").await;
    api.clock.advance(PAST_AGENT_BUDGET_MS);
    resume.send(()).unwrap();
    let resume = stop(&mut rx, "Handover").await;
    assert_eq!(api.cancel(&id).await.status, 200);
    resume.send(()).unwrap();
    api.settle().await;

    let events = api.all_events(&id).await;
    assert_eq!(kinds(&events), ["user_message", "status_terminated"]);
    let states = stops.states.lock().unwrap().clone();
    assert_eq!(states.iter().filter(|s| *s == "Terminate").count(), 1);
    assert!(api.transcript(&id).await.body["workflowRunId"].is_null());
}
