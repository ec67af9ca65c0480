//! The sweep for runs whose execution died, on the transient store with a clock the tests move:
//! a run whose lease ran out is given a new execution that answers the turn; a live one is left
//! alone; a turn that kills every execution ends as failed after the bound, and the next turn
//! goes on; a sweep racing a message, or another sweep, starts exactly one execution.

#[allow(dead_code)]
mod common;

use common::Turn;
use knowledge_core::domain::{EventKind, LEASE_MS, MAX_REVIVALS};
use knowledge_core::ports::SessionStore;
use knowledge_core::service::Swept;
use knowledge_core::steps::{Handler, Next};

/// A sweep that revived one run, and one that gave one up.
const REVIVED_ONE: Swept = Swept {
    revived: 1,
    failed: 0,
    expired: 0,
};
const FAILED_ONE: Swept = Swept {
    revived: 0,
    failed: 1,
    expired: 0,
};

/// Past the lease of a claim written now, with a second of margin (the clock is real time
/// moved by the tests).
const PAST_LEASE_MS: i64 = LEASE_MS + 1_000;

impl Turn {
    /// The names of the executions the workflow was asked to start, in order.
    fn started(&self) -> Vec<String> {
        self.rig.workflow.executions.lock().unwrap().clone()
    }

    /// Binds the run to a new execution of the name its claim holds, which then dies.
    async fn bound_then_dies(&self, id: &str) {
        let name = self.rig.stored(&self.session).await.exec.unwrap().name;
        let exec = self.execution(id, &name);
        assert_eq!(
            self.step(Handler::LoadTurn, &exec, None).await.next,
            Next::Agent
        );
    }

    /// Runs the turn to its end in the execution the claim names.
    async fn answered_by(&self, id: &str) {
        let name = self.rig.stored(&self.session).await.exec.unwrap().name;
        let exec = self.execution(id, &name);
        let loaded = self.step(Handler::LoadTurn, &exec, None).await;
        assert_eq!(loaded.next, Next::Agent);
        let answered = self.step(Handler::CallAgent, &exec, loaded.turn).await;
        assert_eq!(answered.next, Next::Finish);
        self.step(Handler::FinishTurn, &exec, answered.turn).await;
        assert_eq!(
            self.step(Handler::LoadTurn, &exec, None).await.next,
            Next::Done
        );
    }
}

#[tokio::test]
async fn a_run_whose_execution_died_is_found_by_the_sweep_and_its_turn_answered() {
    let t = Turn::new().await;
    t.bound_then_dies("exec-dead").await;
    let swept = t.rig.service.sweep().await.unwrap();
    assert_eq!(swept, Swept::default(), "the lease has not run out");

    t.rig.clock.advance(PAST_LEASE_MS);
    let swept = t.rig.service.sweep().await.unwrap();
    assert_eq!(swept, REVIVED_ONE);
    let successor = format!("{}-1", t.run);
    assert_eq!(t.started().last(), Some(&successor));
    let claim = t.rig.stored(&t.session).await.exec.unwrap();
    assert_eq!(
        (claim.name.as_str(), claim.id, claim.revivals),
        (successor.as_str(), None, 1)
    );
    // Revived once, it is not revived again while its new lease runs.
    assert_eq!(t.rig.service.sweep().await.unwrap(), Swept::default());

    t.answered_by("exec-successor").await;
    assert_eq!(
        t.rig.kinds(&t.session).await,
        [
            EventKind::UserMessage,
            EventKind::AgentMessage,
            EventKind::StatusIdle
        ]
    );
    assert_eq!(t.rig.stored(&t.session).await.run_id, None);
    t.rig.clock.advance(PAST_LEASE_MS);
    assert_eq!(
        t.rig.service.sweep().await.unwrap(),
        Swept::default(),
        "a run that ended"
    );
}

#[tokio::test]
async fn a_turn_that_kills_every_execution_ends_as_failed_and_the_next_turn_goes_on() {
    let t = Turn::new().await;
    t.rig
        .service
        .post_message(&t.rig.who, &t.session, "second")
        .await
        .unwrap();
    t.bound_then_dies("exec-0").await;
    for revival in 1..=MAX_REVIVALS {
        t.rig.clock.advance(PAST_LEASE_MS);
        let swept = t.rig.service.sweep().await.unwrap();
        assert_eq!(swept, REVIVED_ONE, "revival {revival}");
        t.bound_then_dies(&format!("exec-{revival}")).await;
    }
    t.rig.clock.advance(PAST_LEASE_MS);
    let swept = t.rig.service.sweep().await.unwrap();
    assert_eq!(swept, FAILED_ONE);
    let events = t
        .rig
        .store
        .list_events(&t.rig.key(&t.session), 0, 100)
        .await
        .unwrap();
    let kinds: Vec<EventKind> = events.iter().map(|e| e.kind()).collect();
    assert_eq!(
        kinds,
        [
            EventKind::UserMessage,
            EventKind::UserMessage,
            EventKind::Error,
            EventKind::StatusIdle
        ]
    );
    assert_eq!(events[2].body.payload()["code"], "run_died");
    // The second message is the next turn, in a fresh execution with its count cleared.
    let s = t.rig.stored(&t.session).await;
    let claim = s.exec.clone().unwrap();
    assert_eq!((s.pending.len(), claim.revivals), (1, 0));
    assert_eq!(t.started().last(), Some(&claim.name));
    t.answered_by("exec-next").await;
    assert_eq!(
        t.rig.kinds(&t.session).await.last(),
        Some(&EventKind::StatusIdle)
    );
    assert_eq!(t.rig.stored(&t.session).await.run_id, None);
}

#[tokio::test]
async fn a_run_that_moves_on_between_deaths_is_revived_every_time() {
    let t = Turn::new().await;
    t.bound_then_dies("exec-0").await;
    for revival in 1..=MAX_REVIVALS + 2 {
        t.rig
            .service
            .post_message(&t.rig.who, &t.session, "more")
            .await
            .unwrap();
        t.rig.clock.advance(PAST_LEASE_MS);
        let swept = t.rig.service.sweep().await.unwrap();
        assert_eq!(swept, REVIVED_ONE, "revival {revival}");
        // Each new execution takes one step that writes (the run moves on), then dies.
        let name = t.rig.stored(&t.session).await.exec.unwrap().name;
        let exec = t.execution(&format!("exec-{revival}"), &name);
        let loaded = t.step(Handler::LoadTurn, &exec, None).await;
        let handler = match loaded.next {
            Next::Agent => Handler::CallAgent,
            Next::Finish => Handler::FinishTurn,
            other => panic!("{other:?}"),
        };
        t.step(handler, &exec, loaded.turn).await;
        assert_eq!(t.rig.stored(&t.session).await.exec.unwrap().revivals, 0);
    }
    assert!(!t.rig.kinds(&t.session).await.contains(&EventKind::Error));
}

#[tokio::test]
async fn a_sweep_racing_a_message_or_another_sweep_starts_exactly_one_execution() {
    let t = Turn::new().await;
    t.bound_then_dies("exec-dead").await;
    t.rig.clock.advance(PAST_LEASE_MS);
    let before = t.started().len();
    let (swept, posted, again) = tokio::join!(
        t.rig.service.sweep(),
        t.rig
            .service
            .post_message(&t.rig.who, &t.session, "still there?"),
        t.rig.service.sweep(),
    );
    posted.unwrap();
    let revived = swept.unwrap().revived + again.unwrap().revived;
    assert!(revived <= 1, "{revived}");
    assert_eq!(t.started().len(), before + 1, "{:?}", t.started());
    let claim = t.rig.stored(&t.session).await.exec.unwrap();
    assert_eq!(t.started().last(), Some(&claim.name));
}

#[tokio::test]
async fn a_cancelled_run_whose_executions_keep_dying_ends_with_one_status_terminated() {
    let t = Turn::new().await;
    t.bound_then_dies("exec-0").await;
    assert!(!t.rig.service.cancel(&t.rig.who, &t.session).await.unwrap());
    for revival in 1..=MAX_REVIVALS {
        t.rig.clock.advance(PAST_LEASE_MS);
        assert_eq!(
            t.rig.service.sweep().await.unwrap().revived,
            1,
            "revival {revival}"
        );
    }
    t.rig.clock.advance(PAST_LEASE_MS);
    assert_eq!(t.rig.service.sweep().await.unwrap().failed, 1);
    assert_eq!(
        t.rig.kinds(&t.session).await,
        [EventKind::UserMessage, EventKind::StatusTerminated]
    );
    let s = t.rig.stored(&t.session).await;
    assert_eq!((s.run_id, s.pending.len()), (None, 0));
}
