//! The run's claim and handover, step by step on the transient store with a clock the tests move:
//! a duplicate execution exits at its first step without writing, a step that could outlast the
//! five-minute execution hands the run over and the successor finishes the turn, cancellation
//! still wins at every step, and a run whose executions died gets a new one from the next
//! message or cancel.

#[allow(dead_code)]
mod common;

use common::Turn;
use knowledge_core::clock::Clock;
use knowledge_core::domain::{EventKind, LEASE_MS, Session};
use knowledge_core::steps::{Failure, Handler, Next, errors};

/// Seconds of an execution after which a `CallAgent` (120 s timeout, 60 s reserve) no longer
/// starts in it.
const PAST_AGENT_BUDGET_MS: i64 = 121_000;

fn unchanged(before: &Session, after: &Session) {
    assert_eq!(after.version, before.version, "nothing was committed");
    assert_eq!(after.next_seq, before.next_seq, "no event was written");
}

#[tokio::test]
async fn a_second_execution_started_under_the_runs_name_exits_at_its_first_step_without_writing() {
    let t = Turn::new().await;
    let (rig, session, run) = (&t.rig, &t.session, &t.run);
    assert_eq!(
        rig.workflow.executions.lock().unwrap()[..],
        [run.to_string()]
    );
    let first = t.execution("exec-1", run.as_str());
    let second = t.execution("exec-2", run.as_str());

    let loaded = t.step(Handler::LoadTurn, &first, None).await;
    assert_eq!(loaded.next, Next::Agent);
    let bound = rig.stored(session).await;
    assert_eq!(bound.exec.as_ref().unwrap().id.as_deref(), Some("exec-1"));

    let exited = t.step(Handler::LoadTurn, &second, None).await;
    assert_eq!(exited.next, Next::Done);
    let late = t.step(Handler::CallAgent, &second, loaded.turn).await;
    assert_eq!(late.next, Next::Done);
    unchanged(&bound, &rig.stored(session).await);

    // The owner goes on, and a same-id re-run of its first step finds the run its own.
    let again = t.step(Handler::LoadTurn, &first, None).await;
    assert_eq!(again.next, Next::Agent);
    let answered = t.step(Handler::CallAgent, &first, loaded.turn).await;
    assert_eq!(answered.next, Next::Finish);
}

#[tokio::test]
async fn a_claim_whose_lease_ran_out_is_taken_over_by_another_execution() {
    let t = Turn::new().await;
    let (rig, session, run) = (&t.rig, &t.session, &t.run);
    let dead = t.execution("exec-dead", run.as_str());
    t.step(Handler::LoadTurn, &dead, None).await;
    // The clock is real time moved by the test: a second of margin either side of the lease.
    rig.clock.advance(LEASE_MS - 1_000);
    let early = t.execution("exec-early", run.as_str());
    let refused = t.step(Handler::LoadTurn, &early, None).await;
    assert_eq!(refused.next, Next::Done, "the lease has not run out");
    rig.clock.advance(2_000);
    let rerun = t.execution("exec-rerun", run.as_str());
    let loaded = t.step(Handler::LoadTurn, &rerun, None).await;
    assert_eq!(loaded.next, Next::Agent);
    let claim = rig.stored(session).await.exec.unwrap();
    assert_eq!(claim.id.as_deref(), Some("exec-rerun"));
}

#[tokio::test]
async fn every_step_commit_of_the_owner_keeps_its_claim_live() {
    let t = Turn::new().await;
    let (rig, session, run) = (&t.rig, &t.session, &t.run);
    let owner = t.execution("exec-owner", run.as_str());
    let loaded = t.step(Handler::LoadTurn, &owner, None).await;
    // The agent's call takes most of what the longest step may; its commit renews the lease.
    rig.clock.advance(100_000);
    let answered = t.step(Handler::CallAgent, &owner, loaded.turn).await;
    assert_eq!(answered.next, Next::Finish);
    let renewed = rig.stored(session).await.exec.unwrap();
    assert!(renewed.stale_at() > rig.clock.now().plus_millis(LEASE_MS - 1_000));
    // Past the first lease, the claim is still the owner's.
    rig.clock.advance(100_000);
    let other = t.execution("exec-other", run.as_str());
    assert_eq!(
        t.step(Handler::LoadTurn, &other, None).await.next,
        Next::Done
    );
}

#[tokio::test]
async fn a_step_that_could_outlast_the_execution_hands_over_and_the_successor_answers_once() {
    let t = Turn::new().await;
    let (rig, session, run) = (&t.rig, &t.session, &t.run);
    let first = t.execution("exec-1", run.as_str());
    let loaded = t.step(Handler::LoadTurn, &first, None).await;
    rig.clock.advance(PAST_AGENT_BUDGET_MS);

    let handed = t.step(Handler::CallAgent, &first, loaded.turn).await;
    let successor = format!("{run}-1");
    assert_eq!(
        (handed.next, handed.handover.as_deref()),
        (Next::Handover, Some(successor.as_str()))
    );
    assert!(!handed.cancelled);
    let moved = rig.stored(session).await;
    assert_eq!(rig.kinds(session).await, [EventKind::UserMessage]);
    // A retried attempt, or a later step of the old execution, repeats the handover and
    // writes nothing.
    let retried = t.step(Handler::CallAgent, &first, loaded.turn).await;
    assert_eq!(retried, handed);
    let reloaded = t.step(Handler::LoadTurn, &first, None).await;
    assert_eq!(reloaded, handed);
    unchanged(&moved, &rig.stored(session).await);

    let next = t.execution("exec-2", &successor);
    let loaded = t.step(Handler::LoadTurn, &next, None).await;
    assert_eq!(loaded.next, Next::Agent);
    let stale = t.step(Handler::CallAgent, &first, loaded.turn).await;
    assert_eq!(
        stale.next,
        Next::Done,
        "the old execution is no longer the owner"
    );
    let answered = t.step(Handler::CallAgent, &next, loaded.turn).await;
    assert_eq!(answered.next, Next::Finish);
    let finished = t.step(Handler::FinishTurn, &next, answered.turn).await;
    assert_eq!(finished.next, Next::Load);
    let ended = t.step(Handler::LoadTurn, &next, None).await;
    assert_eq!(ended.next, Next::Done);
    assert_eq!(
        rig.kinds(session).await,
        [
            EventKind::UserMessage,
            EventKind::AgentMessage,
            EventKind::StatusIdle
        ]
    );
    let s = rig.stored(session).await;
    assert_eq!((s.run_id, s.exec), (None, None));
}

#[tokio::test]
async fn a_cancel_wins_over_a_handover_and_the_successor_terminates_the_run_once() {
    let t = Turn::new().await;
    let (rig, session, run) = (&t.rig, &t.session, &t.run);
    let first = t.execution("exec-1", run.as_str());
    let loaded = t.step(Handler::LoadTurn, &first, None).await;
    rig.clock.advance(PAST_AGENT_BUDGET_MS);
    t.step(Handler::CallAgent, &first, loaded.turn).await;
    assert!(!rig.service.cancel(&rig.who, session).await.unwrap());

    let next = t.execution("exec-2", &format!("{run}-1"));
    let seen = t.step(Handler::LoadTurn, &next, None).await;
    assert!(seen.cancelled, "{seen:?}");
    // Past its own budget too, a cancelled run terminates rather than handing over again.
    rig.clock.advance(PAST_AGENT_BUDGET_MS);
    let again = t.step(Handler::CallAgent, &next, loaded.turn).await;
    assert!(again.cancelled, "{again:?}");
    t.step(Handler::Terminate, &next, None).await;
    t.step(Handler::Terminate, &next, None).await;
    assert_eq!(
        rig.kinds(session).await,
        [EventKind::UserMessage, EventKind::StatusTerminated]
    );
}

#[tokio::test]
async fn finishing_steps_never_hand_over_and_a_failed_handover_ends_the_run() {
    let t = Turn::new().await;
    let (rig, session, run) = (&t.rig, &t.session, &t.run);
    let first = t.execution("exec-1", run.as_str());
    let loaded = t.step(Handler::LoadTurn, &first, None).await;
    rig.clock.advance(250_000);
    let failure = Failure {
        error: errors::AGENT.into(),
        cause: None,
    };
    let failed = t
        .step_after(
            Handler::FinishTurn,
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
        .post_message(&rig.who, session, "second")
        .await
        .unwrap();
    let handed = t.step(Handler::LoadTurn, &first, None).await;
    assert_eq!(handed.next, Next::Handover);
    // The Handover state failed for good: TerminateFailed, in the execution that handed over.
    t.step_after(Handler::Terminate, &first, None, Some(failure))
        .await;
    assert_eq!(
        rig.kinds(session).await,
        [
            EventKind::UserMessage,
            EventKind::Error,
            EventKind::StatusIdle,
            EventKind::UserMessage,
            EventKind::Error,
            EventKind::StatusTerminated,
        ]
    );
    assert_eq!(rig.stored(session).await.run_id, None);
}

#[tokio::test]
async fn a_message_or_a_cancel_to_a_run_whose_executions_died_starts_a_new_execution() {
    let t = Turn::new().await;
    let (rig, session, run) = (&t.rig, &t.session, &t.run);
    let dead = t.execution("exec-dead", run.as_str());
    t.step(Handler::LoadTurn, &dead, None).await;
    rig.service
        .post_message(&rig.who, session, "while alive")
        .await
        .unwrap();
    assert_eq!(
        rig.workflow.executions.lock().unwrap().len(),
        1,
        "queued only"
    );

    rig.clock.advance(331_000);
    rig.service
        .post_message(&rig.who, session, "after it died")
        .await
        .unwrap();
    let successor = format!("{run}-1");
    assert_eq!(
        rig.workflow.executions.lock().unwrap().last(),
        Some(&successor)
    );
    let claim = rig.stored(session).await.exec.unwrap();
    assert_eq!((claim.name.as_str(), claim.id), (successor.as_str(), None));

    rig.clock.advance(331_000);
    assert!(!rig.service.cancel(&rig.who, session).await.unwrap());
    assert_eq!(
        rig.workflow.executions.lock().unwrap().last(),
        Some(&format!("{run}-2"))
    );
    let next = t.execution("exec-3", &format!("{run}-2"));
    let seen = t.step(Handler::LoadTurn, &next, None).await;
    assert!(
        seen.cancelled,
        "the new execution terminates the cancelled run"
    );
}
