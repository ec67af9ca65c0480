//! The session use cases' own rules, on the transient store: a commit that loses its version
//! race is retried and lands once, a cancel stamps a turn once and tells the engine, a member's
//! turns are all cancelled at once, creating needs the agent, and deletes are finished.

use knowledge_core::CoreError;
use knowledge_core::clock::{Clock, SystemClock};
use knowledge_core::domain::EventKind;
use knowledge_core::ports::{SessionStore, StoredRows};
use knowledge_store_tests::mark_deleting;

#[allow(dead_code)]
mod common;

use common::Rig;

#[tokio::test]
async fn a_message_that_loses_its_commit_race_is_retried_and_written_once() {
    let rig = Rig::new(true).await;
    let created = rig.service.create_session(&rig.who, "first").await.unwrap();
    let before = rig.stored(&created.id).await;
    rig.store.lose_commits(3);
    rig.service
        .post_message(&rig.who, &created.id, "second")
        .await
        .unwrap();
    let after = rig.stored(&created.id).await;
    assert_eq!(after.version, before.version + 1);
    assert_eq!(
        rig.kinds(&created.id).await,
        [EventKind::UserMessage, EventKind::UserMessage]
    );
}

#[tokio::test]
async fn a_message_whose_commit_keeps_losing_fails_as_internal_and_writes_nothing() {
    let rig = Rig::new(true).await;
    let created = rig.service.create_session(&rig.who, "first").await.unwrap();
    rig.store.lose_commits(usize::MAX);
    let refused = rig
        .service
        .post_message(&rig.who, &created.id, "second")
        .await;
    assert!(
        matches!(refused, Err(CoreError::Internal(_))),
        "{refused:?}"
    );
    assert_eq!(rig.kinds(&created.id).await, [EventKind::UserMessage]);
}

#[tokio::test]
async fn a_cancel_stamps_the_turn_in_flight_once_and_tells_the_engine_once() {
    let rig = Rig::new(true).await;
    let created = rig.service.create_session(&rig.who, "first").await.unwrap();
    rig.store.lose_commits(2);
    assert!(!rig.service.cancel(&rig.who, &created.id).await.unwrap());
    let s = rig.stored(&created.id).await;
    assert!(s.cancelled_at.is_some());
    assert_eq!(*rig.workflow.cancelled.lock().unwrap(), [created.run_id]);
    // Again: already cancelled, nothing written, the engine not told twice.
    assert!(rig.service.cancel(&rig.who, &created.id).await.unwrap());
    let again = rig.stored(&created.id).await;
    assert_eq!(again, s);
    assert_eq!(rig.cancelled(), 1);
}

#[tokio::test]
async fn a_cancel_with_no_turn_in_flight_changes_nothing() {
    let rig = Rig::new(true).await;
    let created = rig.service.create_session(&rig.who, "first").await.unwrap();
    rig.end_run(&created.id).await;
    let idle = rig.stored(&created.id).await;
    assert!(!rig.service.cancel(&rig.who, &created.id).await.unwrap());
    assert_eq!(rig.stored(&created.id).await, idle);
    assert_eq!(rig.cancelled(), 0);
}

#[tokio::test]
async fn cancelling_all_of_a_members_runs_stamps_each_turn_in_flight_and_no_idle_session() {
    let rig = Rig::new(true).await;
    let first = rig.service.create_session(&rig.who, "one").await.unwrap();
    let second = rig.service.create_session(&rig.who, "two").await.unwrap();
    let idle = rig.service.create_session(&rig.who, "three").await.unwrap();
    rig.end_run(&idle.id).await;
    let cancelled = rig
        .service
        .cancel_all_runs(&rig.p.user, &rig.p.org)
        .await
        .unwrap();
    assert_eq!(cancelled, 2);
    let told = rig.workflow.cancelled.lock().unwrap().clone();
    assert_eq!(told.len(), 2);
    assert!(
        told.contains(&first.run_id) && told.contains(&second.run_id),
        "{told:?}"
    );
    let s = rig.stored(&idle.id).await;
    assert_eq!(s.cancelled_at, None);
}

#[tokio::test]
async fn creating_a_session_where_no_agent_is_configured_fails_and_writes_nothing() {
    let rig = Rig::new(false).await;
    let refused = rig.service.create_session(&rig.who, "first").await;
    assert!(
        matches!(refused, Err(CoreError::Internal(_))),
        "{refused:?}"
    );
    let listed = rig
        .store
        .list_sessions(&rig.p.user, &rig.p.org, 10)
        .await
        .unwrap();
    assert!(listed.is_empty());
    assert!(rig.workflow.started.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_delete_cut_short_is_finished_by_the_next_delete_or_the_start_up_sweep() {
    let rig = Rig::new(true).await;
    let retried = rig.service.create_session(&rig.who, "one").await.unwrap();
    let swept = rig.service.create_session(&rig.who, "two").await.unwrap();
    for id in [&retried.id, &swept.id] {
        mark_deleting(rig.store.as_ref(), &rig.key(id)).await;
    }
    rig.service.delete(&rig.p, &retried.id).await.unwrap();
    assert_eq!(
        rig.store.rows_for(&rig.key(&retried.id)).await.unwrap(),
        (0, 0)
    );
    assert_eq!(rig.service.finish_deletes().await.unwrap(), 1);
    assert_eq!(
        rig.store.rows_for(&rig.key(&swept.id)).await.unwrap(),
        (0, 0)
    );
    let gone = rig.service.delete(&rig.p, &retried.id).await;
    assert!(matches!(gone, Err(CoreError::NotFound(_))), "{gone:?}");
}

#[tokio::test]
async fn signing_out_refuses_cookies_issued_before_it_and_admits_later_ones() {
    let rig = Rig::new(true).await;
    let before = SystemClock.now();
    rig.service.sign_out(&rig.p.user, &rig.p.org).await.unwrap();
    let refused = rig
        .service
        .authenticate(rig.p.user.clone(), rig.p.org.clone(), before)
        .await;
    assert!(
        matches!(refused, Err(CoreError::Unauthenticated)),
        "{refused:?}"
    );
    let later = SystemClock.now().plus_millis(1);
    let admitted = rig
        .service
        .authenticate(rig.p.user.clone(), rig.p.org.clone(), later)
        .await;
    assert_eq!(admitted.unwrap(), rig.p);
    // Signing out again is harmless.
    rig.service.sign_out(&rig.p.user, &rig.p.org).await.unwrap();
}
