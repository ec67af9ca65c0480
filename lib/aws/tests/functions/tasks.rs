//! The task functions the state machine runs (LoadTurn, CallAgent, RunTool, FinishTurn,
//! Terminate), and the idempotent start of an execution.

use knowledge_aws::{ColdStart, Handler, Parts, SfnWorkflow, functions};
use knowledge_core::ids::RunId;
use knowledge_core::ports::{SessionStore, Workflow};
use knowledge_dynamo::RequestCounter;
use lambda_runtime::{Context, LambdaEvent};
use serde_json::{Value, json};
use tower::ServiceExt;

use crate::support::{Deployment, follow_up, requests, row, sample_input, step, task};

#[tokio::test]
async fn a_retried_start_succeeds_where_the_machine_keeps_execution_names_unique() {
    knowledge_test_support::skip_without_dynamodb!();
    let d = Deployment::new().await;
    let workflow = SfnWorkflow::new(d.sfn.clone(), Some(d.state_machine_arn.clone()));
    let run = RunId::generate();
    for _ in 0..3 {
        workflow
            .start(&d.key, &run, run.as_str(), None)
            .await
            .unwrap();
    }
    assert_eq!(d.executions().await, [run.to_string()]);
}

#[tokio::test]
async fn task_events_drive_a_turn_through_the_task_functions() {
    knowledge_test_support::skip_without_dynamodb!();
    let d = Deployment::new().await;
    let follow_up = follow_up(&d).await;
    let (user_seq, started_at) = follow_up.clone();
    let run = |h: Handler| step(&d, h, &follow_up);
    // Each step's DynamoDB requests: the cost model in docs/deploy.md adds these up.
    // The first LoadTurn binds the run's claim to its execution: the session record alone.
    let (loaded, made) = run(Handler::LoadTurn).await;
    assert_eq!(loaded["next"], "agent", "{loaded}");
    assert_eq!(loaded["turn"], json!({ "userSeq": user_seq, "step": 0 }));
    assert_eq!(made, requests(&[("GetItem", 1), ("PutItem", 1)]));
    // A second execution started under the same name (Express starts at least once) reads
    // the claim bound to the first and ends, writing nothing.
    let mut duplicate = sample_input(Handler::LoadTurn);
    let other = format!("{}-2", duplicate["execution"]["id"].as_str().unwrap());
    duplicate["execution"]["id"] = json!(other);
    duplicate["execution"]["startedAt"] = json!(started_at);
    d.counter.take();
    let exited = task(&d, Handler::LoadTurn, duplicate).await.unwrap();
    assert_eq!(exited["next"], "done", "{exited}");
    let made = d.take_checked(functions::LOAD_TURN.name);
    assert_eq!(made, requests(&[("GetItem", 1)]));
    let (answered, made) = run(Handler::CallAgent).await;
    assert_eq!(answered["next"], "finish", "{answered}");
    // The session; the membership, the organisation (its cost cap and memory switch), its
    // month's usage and the member's memory in one batch; the connected integrations, the
    // history, then the answer with the session.
    let step = requests(&[
        ("GetItem", 1),
        ("BatchGetItem", 1),
        ("Query", 2),
        ("TransactWriteItems", 1),
    ]);
    assert_eq!(made, step);
    // RunTool delivered late, after the agent answered without tools: it commits nothing.
    let (late, made) = run(Handler::RunTool).await;
    assert_eq!(late["next"], "finish", "{late}");
    assert_eq!(made, requests(&[("GetItem", 1)]));
    let (finished, made) = run(Handler::FinishTurn).await;
    assert_eq!(finished["next"], "load", "{finished}");
    assert_eq!(made, requests(&[("GetItem", 1), ("TransactWriteItems", 1)]));
    // Nothing else is pending: the run ends there, with the session record alone (1 WRU).
    let (ended, made) = run(Handler::LoadTurn).await;
    assert_eq!(ended["next"], "done", "{ended}");
    assert_eq!(made, requests(&[("GetItem", 1), ("PutItem", 1)]));
    let (terminated, _) = run(Handler::Terminate).await;
    assert!(terminated.get("next").is_some(), "{terminated}");

    let kinds: Vec<&str> = d
        .store
        .list_events(&d.key, 6, 100)
        .await
        .unwrap()
        .iter()
        .map(|e| e.kind().as_str())
        .collect();
    assert_eq!(kinds, ["user_message", "agent_message", "status_idle"]);
    let s = d.store.get_session(&d.key).await.unwrap().unwrap();
    assert_eq!(s.run_id, None);
}

#[tokio::test]
async fn a_task_given_malformed_input_fails_with_the_error_name_the_state_machine_matches() {
    knowledge_test_support::skip_without_dynamodb!();
    let d = Deployment::new().await;
    let error = task(&d, Handler::LoadTurn, json!({ "session": 7 }))
        .await
        .unwrap_err();
    assert_eq!(error.error_type, "InvalidStepInput");
    let ok = task(&d, Handler::LoadTurn, sample_input(Handler::LoadTurn)).await;
    assert!(ok.is_ok(), "{ok:?}");
}

/// CallAgent on a provider streaming its answer over about three seconds, while the
/// transcript function is polled: the answer's draft is written beside the session at most
/// once a second (one UpdateItem each, on top of the step's own requests), every poll reads
/// what a poll reads without a draft, and the draft is gone with the answer's commit.
#[tokio::test]
async fn call_agent_writes_a_streamed_answers_draft_at_most_once_a_second_and_a_poll_reads_no_more()
{
    knowledge_test_support::skip_without_dynamodb!();
    use knowledge_providers::fake::{AgentSetup, Fake, OpenAi, Reply, Wire};
    use std::time::{Duration, Instant};

    let d = Deployment::new().await;
    let fake = Fake::start().await;
    fake.pace(Duration::from_millis(150));
    let words: Vec<String> = (1..=20).map(|n| format!("word{n}")).collect();
    fake.script(Reply::json(200, OpenAi::answer(&words.join(" "))));
    let turn = follow_up(&d).await;
    step(&d, Handler::LoadTurn, &turn).await;

    let parts = Parts::of(row(Handler::CallAgent));
    let mut settings = knowledge_aws::settings(parts, &d.shared, &d.env)
        .await
        .unwrap();
    settings.agent = Some(OpenAi::agent(&fake.base(), AgentSetup::default()));
    let cold = ColdStart::new(&d.shared, &d.env, settings, parts, d.counter.clone());
    let mut payload = sample_input(Handler::CallAgent);
    payload["turn"]["userSeq"] = json!(turn.0);
    payload["execution"]["startedAt"] = json!(turn.1);
    let polls = RequestCounter::default();
    let transcript = ColdStart::load(
        Parts::of(functions::TRANSCRIPT),
        &d.shared,
        &d.env,
        polls.clone(),
    )
    .await
    .unwrap()
    .router()
    .unwrap();
    d.counter.take();

    let started = Instant::now();
    let task = cold.task().unwrap();
    let answering = task.handle(LambdaEvent::new(payload, Context::default()));
    tokio::pin!(answering);
    // Poll until a draft shows (bounded), then once more while it grows.
    let mut drafts: Vec<String> = vec![];
    let answered = loop {
        tokio::select! {
            answered = &mut answering => break answered.unwrap(),
            () = tokio::time::sleep(Duration::from_millis(300)) => {
                let response = transcript.clone().oneshot(d.event(functions::TRANSCRIPT)).await.unwrap();
                let body: Value = serde_json::from_slice(
                    &axum::body::to_bytes(response.into_body(), 1 << 20).await.unwrap(),
                )
                .unwrap();
                if let Some(text) = body["draft"]["text"].as_str() {
                    drafts.push(text.to_owned());
                }
                // The draft is never beside its own answer: after the question, no answer yet.
                let answers_after = body["events"].as_array().unwrap().iter().filter(|e| {
                    e["type"] == "agent_message"
                        && e["id"].as_str().unwrap()[4..].parse::<u64>().unwrap() > turn.0
                });
                assert!(answers_after.count() == 0 || body.get("draft").is_none(), "{body}");
                // A poll costs what it costs without a draft.
                assert_eq!(polls.take(), requests(&[("BatchGetItem", 1), ("Query", 1)]));
                assert!(started.elapsed() < Duration::from_secs(20), "the answer took too long");
            }
        }
    };
    let took = started.elapsed();
    assert_eq!(answered["next"], "finish", "{answered}");
    // Seen growing, word by word, never past the answer.
    assert!(drafts.len() >= 3, "{drafts:?}");
    assert!(
        drafts.windows(2).all(|w| w[1].starts_with(&w[0])),
        "{drafts:?}"
    );
    assert!(
        drafts
            .iter()
            .all(|t| words.join(" ").starts_with(t.as_str()))
    );
    // The step's own requests, and one UpdateItem per draft: the first at once, then one a
    // second at most.
    let made = d.take_checked(functions::CALL_AGENT.name);
    let writes = made.get("UpdateItem").copied().unwrap_or(0);
    let most = took.as_secs() + 1;
    assert!(
        (2..=most).contains(&writes),
        "{writes} draft writes in {took:?}"
    );
    // Beside them, the step's own: as for an answer at once, plus the cancel watch's read of
    // the session each WATCH_INTERVAL (1 s) while the call is in flight.
    let mut step = made.clone();
    step.remove("UpdateItem");
    let watched = step.remove("GetItem").unwrap_or(0) - 1;
    assert!(
        watched <= took.as_secs(),
        "{watched} watch reads in {took:?}"
    );
    assert_eq!(
        step,
        requests(&[("BatchGetItem", 1), ("Query", 2), ("TransactWriteItems", 1)])
    );
    // The answer's commit took the draft with it.
    let response = transcript
        .oneshot(d.event(functions::TRANSCRIPT))
        .await
        .unwrap();
    let body: Value = serde_json::from_slice(
        &axum::body::to_bytes(response.into_body(), 1 << 20)
            .await
            .unwrap(),
    )
    .unwrap();
    assert!(body.get("draft").is_none(), "{body}");
}
