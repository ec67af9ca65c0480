//! Cases of consent in [`SessionStore`](knowledge_core::ports::SessionStore): a paused turn's
//! calls answered by rewriting their events, the list's mark of a session waiting for its
//! member, and its place in the sweeper's index.

use std::sync::Arc;

use knowledge_core::clock::Timestamp;
use knowledge_core::domain::{
    Approval, ApprovalState, Awaiting, CallApproval, EventBody, NewEvent, Session, TurnProgress,
};
use knowledge_core::ids::RunId;
use knowledge_core::ports::StoreError;

use crate::{NOW, Tested, new_key, seed_session};

/// Pauses `s` (as stored) on a call that asks, expiring at `expires_at`: the call's event and
/// the turn, no run. Returns the session as committed and the call's sequence number.
async fn pause(store: &dyn Tested, mut s: Session, expires_at: Timestamp) -> (Session, u64) {
    let expected = s.version;
    s.version += 1;
    let approval = Approval {
        state: ApprovalState::Pending,
        integration: Some("tracker".into()),
        expires_at,
        may_always_allow: true,
    };
    let events = s.place(
        NOW,
        vec![
            NewEvent::user_message("file it"),
            NewEvent::ToolUse {
                tool: "tracker_file".into(),
                input: serde_json::json!({ "title": "t" }),
                approval: Some(approval),
            },
        ],
    );
    let call = events[1].seq;
    s.pending = vec![events[0].seq];
    s.turn = Some(TurnProgress {
        step: 1,
        agent_calls: 1,
        from_seq: call,
        awaiting: Awaiting::Tools(vec![call]),
        approvals: vec![CallApproval {
            seq: call,
            state: ApprovalState::Pending,
            expires_at,
        }],
        calling: None,
    });
    store
        .commit_session(&s, expected, &events, None, None)
        .await
        .unwrap();
    (s, call)
}

pub async fn an_answer_rewrites_the_calls_event_with_the_session_at_its_version_only(
    store: Arc<dyn Tested>,
) {
    let key = new_key();
    let seeded = seed_session(&*store, &key, NOW, 2).await;
    let (paused, call) = pause(&*store, seeded, NOW.plus_millis(60_000)).await;
    let mut events = store.list_events(&key, 0, 100).await.unwrap();
    let mut answered = paused.clone();
    answered.version += 1;
    answered.turn.as_mut().unwrap().approvals[0].state = ApprovalState::Approved;
    answered.start_run(RunId::generate(), NOW, None);
    let i = events.iter().position(|e| e.seq == call).unwrap();
    if let EventBody::ToolUse {
        approval: Some(a), ..
    } = &mut events[i].body
    {
        a.state = ApprovalState::Approved;
    }
    let rewritten = vec![events[i].clone()];

    // A writer that read an older version rewrites nothing.
    let mut stale = answered.clone();
    stale.version = paused.version;
    let refused = (store.rewrite_events(&stale, paused.version - 1, &rewritten)).await;
    assert!(matches!(refused, Err(StoreError::Conflict)), "{refused:?}");
    let unchanged = store.list_events(&key, 0, 100).await.unwrap();
    assert_ne!(unchanged, events);

    (store.rewrite_events(&answered, paused.version, &rewritten))
        .await
        .unwrap();
    assert_eq!(store.list_events(&key, 0, 100).await.unwrap(), events);
    assert_eq!(
        store.get_session(&key).await.unwrap(),
        Some(answered.clone())
    );
    // The same answer again, at the version it read, is refused: one answer lands.
    let again = (store.rewrite_events(&answered, paused.version, &rewritten)).await;
    assert!(matches!(again, Err(StoreError::Conflict)), "{again:?}");
    // A session gone is gone.
    let gone = (store.rewrite_events(&Session::new(new_key(), "x".into(), NOW), 1, &[])).await;
    assert!(matches!(gone, Err(StoreError::Gone)), "{gone:?}");
}

pub async fn a_session_waiting_for_its_member_is_marked_in_the_list_and_swept_at_its_expiry(
    store: Arc<dyn Tested>,
) {
    let key = new_key();
    let seeded = seed_session(&*store, &key, NOW, 1).await;
    let expiry = NOW.plus_millis(60_000);
    let (paused, _) = pause(&*store, seeded, expiry).await;
    let listed = store.list_sessions(&key.user, &key.org, 10).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert!(listed[0].awaits_member);
    assert_eq!(listed[0].id, key.session);
    // In the sweeper's index once its call has expired, not before.
    let swept = |at: Timestamp| {
        let store = store.clone();
        async move { store.stale_runs(at, 1_000).await.unwrap() }
    };
    assert!(!swept(expiry).await.contains(&key));
    assert!(swept(expiry.plus_millis(1)).await.contains(&key));

    // Answered: no longer marked, nor swept as paused.
    let mut answered = paused.clone();
    answered.version += 1;
    answered.turn.as_mut().unwrap().approvals[0].state = ApprovalState::Declined;
    answered.start_run(RunId::generate(), NOW, None);
    store
        .rewrite_events(&answered, paused.version, &[])
        .await
        .unwrap();
    let listed = store.list_sessions(&key.user, &key.org, 10).await.unwrap();
    assert!(!listed[0].awaits_member);
}
