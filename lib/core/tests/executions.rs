//! The run's claim and handover, step by step on the in-memory store with a clock the tests move:
//! a duplicate execution exits at its first step without writing, a step that could outlast the
//! five-minute execution hands the run over and the successor finishes the turn, cancellation
//! still wins at every step, and a run whose executions died gets a new one from the next
//! message or cancel.

#[allow(dead_code)]
mod common;

use common::Rig;
use knowledge_core::clock::Clock;
use knowledge_core::domain::{EventKind, Session};
use knowledge_core::ids::{RunId, SessionId};
use knowledge_core::steps::{
    ExecRef, Failure, Handler, Next, StepInput, StepOutput, TurnRef, errors,
};

/// Seconds of an execution after which a `CallAgent` (120 s timeout, 60 s reserve) no longer
/// starts in it.
const PAST_AGENT_BUDGET_MS: i64 = 121_000;

/// An execution of the run, as Step Functions would describe it in the steps' input.
fn execution(rig: &Rig, id: &str, name: &str) -> ExecRef {
    ExecRef {
        id: id.into(),
        name: name.into(),
        started_at: rig.clock.now(),
    }
}

/// Runs `handler` in the execution `exec`, as its Task would.
async fn step(
    rig: &Rig, handler: Handler, session: &SessionId, run: &RunId, exec: &ExecRef,
    turn: Option<TurnRef>,
) -> StepOutput {
    step_after(rig, handler, session, run, exec, turn, None).await
}

async fn step_after(
    rig: &Rig, handler: Handler, session: &SessionId, run: &RunId, exec: &ExecRef,
    turn: Option<TurnRef>, failure: Option<Failure>,
) -> StepOutput {
    let input = StepInput {
        turn,
        failure,
        execution: Some(exec.clone()),
        ..StepInput::start(&rig.key(session), run)
    };
    let out = rig
        .steps
        .invoke(
            handler,
            serde_json::to_value(input).unwrap(),
            std::future::pending(),
        )
        .await
        .unwrap();
    serde_json::from_value(out).unwrap()
}

/// A session whose first turn is waiting for its run, and that run.
async fn created(rig: &Rig) -> (SessionId, RunId) {
    let created = rig.service.create_session(&rig.who, "first").await.unwrap();
    (created.id, created.run_id)
}

fn unchanged(before: &Session, after: &Session) {
    assert_eq!(after.version, before.version, "nothing was committed");
    assert_eq!(after.next_seq, before.next_seq, "no event was written");
}

#[tokio::test]
async fn a_second_execution_started_under_the_runs_name_exits_at_its_first_step_without_writing() {
    let rig = Rig::new(true).await;
    let (session, run) = created(&rig).await;
    assert_eq!(
        rig.workflow.executions.lock().unwrap()[..],
        [run.to_string()]
    );
    let first = execution(&rig, "exec-1", run.as_str());
    let second = execution(&rig, "exec-2", run.as_str());

    let loaded = step(&rig, Handler::LoadTurn, &session, &run, &first, None).await;
    assert_eq!(loaded.next, Next::Agent);
    let bound = rig.stored(&session).await;
    assert_eq!(bound.exec.as_ref().unwrap().id.as_deref(), Some("exec-1"));

    let exited = step(&rig, Handler::LoadTurn, &session, &run, &second, None).await;
    assert_eq!(exited.next, Next::Done);
    let late = step(
        &rig,
        Handler::CallAgent,
        &session,
        &run,
        &second,
        loaded.turn,
    )
    .await;
    assert_eq!(late.next, Next::Done);
    unchanged(&bound, &rig.stored(&session).await);

    // The owner goes on, and a same-id re-run of its first step finds the run its own.
    let again = step(&rig, Handler::LoadTurn, &session, &run, &first, None).await;
    assert_eq!(again.next, Next::Agent);
    let answered = step(
        &rig,
        Handler::CallAgent,
        &session,
        &run,
        &first,
        loaded.turn,
    )
    .await;
    assert_eq!(answered.next, Next::Finish);
}

#[tokio::test]
async fn a_claim_older_than_any_execution_can_live_is_taken_over_by_another_execution() {
    let rig = Rig::new(true).await;
    let (session, run) = created(&rig).await;
    let dead = execution(&rig, "exec-dead", run.as_str());
    step(&rig, Handler::LoadTurn, &session, &run, &dead, None).await;
    rig.clock.advance(330_000);
    let early = execution(&rig, "exec-early", run.as_str());
    let refused = step(&rig, Handler::LoadTurn, &session, &run, &early, None).await;
    assert_eq!(refused.next, Next::Done, "the claim is not yet stale");
    rig.clock.advance(1_001);
    let rerun = execution(&rig, "exec-rerun", run.as_str());
    let loaded = step(&rig, Handler::LoadTurn, &session, &run, &rerun, None).await;
    assert_eq!(loaded.next, Next::Agent);
    let claim = rig.stored(&session).await.exec.unwrap();
    assert_eq!(claim.id.as_deref(), Some("exec-rerun"));
}

#[tokio::test]
async fn a_step_that_could_outlast_the_execution_hands_over_and_the_successor_answers_once() {
    let rig = Rig::new(true).await;
    let (session, run) = created(&rig).await;
    let first = execution(&rig, "exec-1", run.as_str());
    let loaded = step(&rig, Handler::LoadTurn, &session, &run, &first, None).await;
    rig.clock.advance(PAST_AGENT_BUDGET_MS);

    let handed = step(
        &rig,
        Handler::CallAgent,
        &session,
        &run,
        &first,
        loaded.turn,
    )
    .await;
    let successor = format!("{run}-1");
    assert_eq!(
        (handed.next, handed.handover.as_deref()),
        (Next::Handover, Some(successor.as_str()))
    );
    assert!(!handed.cancelled);
    let moved = rig.stored(&session).await;
    assert_eq!(rig.kinds(&session).await, [EventKind::UserMessage]);
    // A retried attempt, or a later step of the old execution, repeats the handover and
    // writes nothing.
    let retried = step(
        &rig,
        Handler::CallAgent,
        &session,
        &run,
        &first,
        loaded.turn,
    )
    .await;
    assert_eq!(retried, handed);
    let reloaded = step(&rig, Handler::LoadTurn, &session, &run, &first, None).await;
    assert_eq!(reloaded, handed);
    unchanged(&moved, &rig.stored(&session).await);

    let next = execution(&rig, "exec-2", &successor);
    let loaded = step(&rig, Handler::LoadTurn, &session, &run, &next, None).await;
    assert_eq!(loaded.next, Next::Agent);
    let stale = step(
        &rig,
        Handler::CallAgent,
        &session,
        &run,
        &first,
        loaded.turn,
    )
    .await;
    assert_eq!(
        stale.next,
        Next::Done,
        "the old execution is no longer the owner"
    );
    let answered = step(&rig, Handler::CallAgent, &session, &run, &next, loaded.turn).await;
    assert_eq!(answered.next, Next::Finish);
    let finished = step(
        &rig,
        Handler::FinishTurn,
        &session,
        &run,
        &next,
        answered.turn,
    )
    .await;
    assert_eq!(finished.next, Next::Load);
    let ended = step(&rig, Handler::LoadTurn, &session, &run, &next, None).await;
    assert_eq!(ended.next, Next::Done);
    assert_eq!(
        rig.kinds(&session).await,
        [
            EventKind::UserMessage,
            EventKind::AgentMessage,
            EventKind::StatusIdle
        ]
    );
    let s = rig.stored(&session).await;
    assert_eq!((s.run_id, s.exec), (None, None));
}

#[tokio::test]
async fn a_cancel_wins_over_a_handover_and_the_successor_terminates_the_run_once() {
    let rig = Rig::new(true).await;
    let (session, run) = created(&rig).await;
    let first = execution(&rig, "exec-1", run.as_str());
    let loaded = step(&rig, Handler::LoadTurn, &session, &run, &first, None).await;
    rig.clock.advance(PAST_AGENT_BUDGET_MS);
    step(
        &rig,
        Handler::CallAgent,
        &session,
        &run,
        &first,
        loaded.turn,
    )
    .await;
    assert!(!rig.service.cancel(&rig.who, &session).await.unwrap());

    let next = execution(&rig, "exec-2", &format!("{run}-1"));
    let seen = step(&rig, Handler::LoadTurn, &session, &run, &next, None).await;
    assert!(seen.cancelled, "{seen:?}");
    // Past its own budget too, a cancelled run terminates rather than handing over again.
    rig.clock.advance(PAST_AGENT_BUDGET_MS);
    let again = step(&rig, Handler::CallAgent, &session, &run, &next, loaded.turn).await;
    assert!(again.cancelled, "{again:?}");
    step(&rig, Handler::Terminate, &session, &run, &next, None).await;
    step(&rig, Handler::Terminate, &session, &run, &next, None).await;
    assert_eq!(
        rig.kinds(&session).await,
        [EventKind::UserMessage, EventKind::StatusTerminated]
    );
}

#[tokio::test]
async fn finishing_steps_never_hand_over_and_a_failed_handover_ends_the_run() {
    let rig = Rig::new(true).await;
    let (session, run) = created(&rig).await;
    let first = execution(&rig, "exec-1", run.as_str());
    let loaded = step(&rig, Handler::LoadTurn, &session, &run, &first, None).await;
    rig.clock.advance(250_000);
    let failure = Failure {
        error: errors::AGENT.into(),
        cause: None,
    };
    let failed = step_after(
        &rig,
        Handler::FinishTurn,
        &session,
        &run,
        &first,
        loaded.turn,
        Some(failure.clone()),
    )
    .await;
    assert_eq!(
        failed.next,
        Next::Load,
        "FailTurn wrote its error and ended the turn"
    );
    rig.service
        .post_message(&rig.who, &session, "second")
        .await
        .unwrap();
    let handed = step(&rig, Handler::LoadTurn, &session, &run, &first, None).await;
    assert_eq!(handed.next, Next::Handover);
    // The Handover state failed for good: TerminateFailed, in the execution that handed over.
    step_after(
        &rig,
        Handler::Terminate,
        &session,
        &run,
        &first,
        None,
        Some(failure),
    )
    .await;
    assert_eq!(
        rig.kinds(&session).await,
        [
            EventKind::UserMessage,
            EventKind::Error,
            EventKind::StatusIdle,
            EventKind::UserMessage,
            EventKind::Error,
            EventKind::StatusTerminated,
        ]
    );
    assert_eq!(rig.stored(&session).await.run_id, None);
}

#[tokio::test]
async fn a_message_or_a_cancel_to_a_run_whose_executions_died_starts_a_new_execution() {
    let rig = Rig::new(true).await;
    let (session, run) = created(&rig).await;
    let dead = execution(&rig, "exec-dead", run.as_str());
    step(&rig, Handler::LoadTurn, &session, &run, &dead, None).await;
    rig.service
        .post_message(&rig.who, &session, "while alive")
        .await
        .unwrap();
    assert_eq!(
        rig.workflow.executions.lock().unwrap().len(),
        1,
        "queued only"
    );

    rig.clock.advance(331_000);
    rig.service
        .post_message(&rig.who, &session, "after it died")
        .await
        .unwrap();
    let successor = format!("{run}-1");
    assert_eq!(
        rig.workflow.executions.lock().unwrap().last(),
        Some(&successor)
    );
    let claim = rig.stored(&session).await.exec.unwrap();
    assert_eq!((claim.name.as_str(), claim.id), (successor.as_str(), None));

    rig.clock.advance(331_000);
    assert!(!rig.service.cancel(&rig.who, &session).await.unwrap());
    assert_eq!(
        rig.workflow.executions.lock().unwrap().last(),
        Some(&format!("{run}-2"))
    );
    let next = execution(&rig, "exec-3", &format!("{run}-2"));
    let seen = step(&rig, Handler::LoadTurn, &session, &run, &next, None).await;
    assert!(
        seen.cancelled,
        "the new execution terminates the cancelled run"
    );
}
