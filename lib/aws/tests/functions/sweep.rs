//! The sweep function: a dead run revived, or its turn ended as failed, and a sweep racing a
//! message.

use std::collections::BTreeMap;

use knowledge_aws::{Handler, functions};
use knowledge_core::clock::{Clock, SystemClock};
use knowledge_core::domain::{EventKind, NewEvent, Session};
use knowledge_core::domain::{LEASE_MS, MAX_REVIVALS};
use knowledge_core::ids::{RunId, SessionId, SessionKey};
use knowledge_core::ports::SessionStore;
use lambda_runtime::{Context, LambdaEvent};
use serde_json::{Value, json};
use tower::ServiceExt;

use crate::support::{Deployment, repo_file, requests, sample_input, task};

impl Deployment {
    /// A session of the sample user whose turn's execution died: its claim's lease ran out a
    /// minute ago, with `revivals` revivals behind it. Returns its key and run.
    async fn dead_run(&self, revivals: u32) -> (SessionKey, RunId) {
        let key = SessionKey {
            session: SessionId::generate(),
            ..self.key.clone()
        };
        let ago = SystemClock.now().plus_millis(-(LEASE_MS + 60_000));
        let mut s = Session::new(key.clone(), "stuck".into(), ago);
        let run = RunId::generate();
        s.start_run(run.clone(), ago, None);
        s.exec.as_mut().unwrap().revivals = revivals;
        let placed = s.place(ago, vec![NewEvent::user_message("Still there?")]);
        s.pending = vec![placed[0].seq];
        self.store.create_session(&s, &placed, None).await.unwrap();
        self.counter.take();
        (key, run)
    }

    /// The sweep function fed its sample event; returns its answer and the DynamoDB requests
    /// it made, checked against its policies.
    pub(crate) async fn sweep(&self) -> (Value, BTreeMap<String, u64>) {
        let sweep = self.cold_start(functions::SWEEP).await.sweep();
        let payload = serde_json::from_str(&repo_file("events/sweep.json")).unwrap();
        self.counter.take();
        let answer = sweep
            .handle(LambdaEvent::new(payload, Context::default()))
            .await;
        (answer.unwrap(), self.take_checked("sweep"))
    }

    /// Runs the turn of `key`'s run in the execution `name`, Task by Task; returns the event
    /// types of its log.
    async fn answered_in(&self, key: &SessionKey, run: &RunId, name: &str) -> Vec<EventKind> {
        let started_at = SystemClock.now().to_iso8601();
        let mut turn = Value::Null;
        for h in [
            Handler::LoadTurn,
            Handler::CallAgent,
            Handler::FinishTurn,
            Handler::LoadTurn,
        ] {
            let mut payload = sample_input(h);
            payload["session"]["session"] = json!(key.session.as_str());
            payload["runId"] = json!(run.as_str());
            payload["execution"] =
                json!({ "id": format!("{name}:exec"), "name": name, "startedAt": started_at });
            if payload.get("turn").is_some() {
                payload["turn"] = turn.clone();
            }
            let out = task(self, h, payload).await.unwrap();
            turn = out["turn"].clone();
        }
        let events = self.store.list_events(key, 0, 100).await.unwrap();
        events.iter().map(|e| e.kind()).collect()
    }
}

#[tokio::test]
async fn sweep_event_revives_a_run_whose_execution_was_stopped_and_its_turn_is_answered() {
    knowledge_test_support::skip_without_dynamodb!();
    let d = Deployment::new().await;
    let (key, run) = d.dead_run(0).await;
    // Its execution ran on Step Functions and was stopped there, never to come back.
    let started = d
        .sfn
        .start_execution()
        .state_machine_arn(&d.state_machine_arn)
        .name(run.as_str())
        .input("{}")
        .send()
        .await
        .unwrap();
    let arn = started.execution_arn().to_owned();
    d.sfn
        .stop_execution()
        .execution_arn(arn)
        .send()
        .await
        .unwrap();

    let (answer, made) = d.sweep().await;
    assert_eq!(answer, json!({ "revived": 1, "failed": 0, "expired": 0 }));
    // The index, one query per shard; the session read again and committed alone.
    let shards = u64::from(knowledge_dynamo::keys::STALE_SHARDS);
    assert_eq!(
        made,
        requests(&[("Query", shards), ("GetItem", 1), ("PutItem", 1)])
    );
    let successor = format!("{run}-1");
    assert!(
        d.executions().await.contains(&successor),
        "{:?}",
        d.executions().await
    );
    // A sweep a moment later finds nothing: the new execution's lease runs.
    assert_eq!(
        d.sweep().await.0,
        json!({ "revived": 0, "failed": 0, "expired": 0 })
    );

    let kinds = d.answered_in(&key, &run, &successor).await;
    assert_eq!(
        kinds,
        [
            EventKind::UserMessage,
            EventKind::AgentMessage,
            EventKind::StatusIdle
        ]
    );
    assert_eq!(
        d.store.get_session(&key).await.unwrap().unwrap().run_id,
        None
    );
}

#[tokio::test]
async fn sweep_event_ends_a_turn_that_keeps_killing_its_executions_as_failed() {
    knowledge_test_support::skip_without_dynamodb!();
    let d = Deployment::new().await;
    let (key, run) = d.dead_run(MAX_REVIVALS).await;
    let (answer, made) = d.sweep().await;
    assert_eq!(answer, json!({ "revived": 0, "failed": 1, "expired": 0 }));
    // The error and the turn's end with the session, in one transaction.
    let shards = u64::from(knowledge_dynamo::keys::STALE_SHARDS);
    let expected = requests(&[("Query", shards), ("GetItem", 1), ("TransactWriteItems", 1)]);
    assert_eq!(made, expected);
    let events = d.store.list_events(&key, 0, 100).await.unwrap();
    let kinds: Vec<EventKind> = events.iter().map(|e| e.kind()).collect();
    assert_eq!(
        kinds,
        [
            EventKind::UserMessage,
            EventKind::Error,
            EventKind::StatusIdle
        ]
    );
    assert_eq!(events[1].body.payload()["code"], "run_died");
    assert_eq!(
        d.store.get_session(&key).await.unwrap().unwrap().run_id,
        None
    );
    assert!(
        !d.executions()
            .await
            .iter()
            .any(|e| e.starts_with(run.as_str()))
    );
}

#[tokio::test]
async fn a_sweep_racing_a_message_to_the_dead_run_starts_exactly_one_execution() {
    knowledge_test_support::skip_without_dynamodb!();
    let d = Deployment::new().await;
    let (key, run) = d.dead_run(0).await;
    let mut event = d.event(functions::MESSAGE);
    let body = json!({ "sessionId": key.session.as_str(), "text": "Hello?" }).to_string();
    *event.body_mut() = lambda_http::Body::Text(body);
    let message = d.router(functions::MESSAGE).await;
    // Both count their requests in one counter here: the sweep's are checked alone above.
    let sweep = d.cold_start(functions::SWEEP).await.sweep();
    let payload = serde_json::from_str(&repo_file("events/sweep.json")).unwrap();
    let swept = sweep.handle(LambdaEvent::new(payload, Context::default()));
    let (answered, swept) = tokio::join!(message.oneshot(event), swept);
    assert_eq!(answered.unwrap().status().as_u16(), 200);
    let swept = swept.unwrap();
    assert!(swept["revived"].as_u64().unwrap() <= 1, "{swept}");
    let revived: Vec<String> = (d.executions().await.into_iter())
        .filter(|e| e.starts_with(run.as_str()))
        .collect();
    assert_eq!(revived, [format!("{run}-1")], "one execution, whoever won");
    let claim = d
        .store
        .get_session(&key)
        .await
        .unwrap()
        .unwrap()
        .exec
        .unwrap();
    assert_eq!(claim.name, format!("{run}-1"));
}
