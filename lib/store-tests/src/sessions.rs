//! Cases of [`SessionStore`](knowledge_core::ports::SessionStore): sessions and their logs.

use std::collections::BTreeSet;
use std::sync::Arc;

use knowledge_core::clock::Timestamp;
use knowledge_core::domain::{
    ApprovalState, Awaiting, CallApproval, Event, ExecClaim, NewEvent, Session, TurnProgress, Usage,
};
use knowledge_core::ids::{OrgId, RunId, SessionId, SessionKey, UserId};
use knowledge_core::ports::{Charge, StoreError, TokenUsage};
use knowledge_core::trace::TraceParent;

use crate::{
    NOW, Store, Tested, append, landed, listed, mark_deleting, new_key, seed_session, texts,
};

pub async fn a_session_reads_back_exactly_as_it_was_written(store: Arc<dyn Tested>) {
    let key = new_key();
    let mut session = Session {
        key: key.clone(),
        title: "Ünïcode title".into(),
        created_at: NOW,
        updated_at: NOW,
        cancelled_at: Some(Timestamp(NOW.millis() - 5)),
        run_id: Some(RunId::generate()),
        exec: Some(ExecClaim {
            name: "run-1".into(),
            id: Some("arn:aws:states:eu-west-1:1:express:agent:run-1:abc".into()),
            since: Timestamp(NOW.millis() - 9),
            from: Some("arn:aws:states:eu-west-1:1:express:agent:run:def".into()),
            seq: 1,
            lease: Some(Timestamp(NOW.millis() + 150_000)),
            revivals: 2,
            trace: TraceParent::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
        }),
        deleting: false,
        pending: vec![1, 2],
        turn: Some(TurnProgress {
            step: 3,
            agent_calls: 2,
            from_seq: 2,
            awaiting: Awaiting::Tools(vec![3, 4]),
            approvals: vec![CallApproval {
                seq: 4,
                state: ApprovalState::Approved,
                expires_at: Timestamp(1_795_000_000_000),
            }],
            calling: Some(4),
        }),
        next_seq: 1,
        version: 1,
    };
    let mut events = session.place(NOW, vec![NewEvent::user_message("hello")]);
    events.extend(session.place(
        NOW,
        vec![NewEvent::tool_use(
            "search",
            &serde_json::json!({ "query": "a \"quoted\" term" }),
        )],
    ));
    store.create_session(&session, &events, None).await.unwrap();
    assert_eq!(store.get_session(&key).await.unwrap(), Some(session));
    assert_eq!(store.list_events(&key, 0, 100).await.unwrap(), events);
}

pub async fn creating_a_session_whose_key_is_taken_is_refused_and_changes_nothing(
    store: Arc<dyn Tested>,
) {
    let key = new_key();
    let original = seed_session(&*store, &key, NOW, 2).await;
    let mut again = original.clone();
    again.title = "impostor".into();
    let events = vec![Event {
        seq: 1,
        body: NewEvent::user_message("overwritten"),
        occurred_at: NOW,
    }];
    let refused = store.create_session(&again, &events, None).await;
    assert!(
        matches!(refused, Err(StoreError::AlreadyExists)),
        "{refused:?}"
    );
    assert_eq!(store.get_session(&key).await.unwrap(), Some(original));
    assert_eq!(texts(&*store, &key).await, ["m0", "m1"]);
}

pub async fn events_follow_a_cursor_across_pages_in_order_exactly_once(store: Arc<dyn Tested>) {
    let key = new_key();
    seed_session(&*store, &key, NOW, 230).await;
    let mut seen = Vec::new();
    let mut pages = Vec::new();
    let mut after = 0;
    loop {
        let page = store.list_events(&key, after, 100).await.unwrap();
        pages.push(page.len());
        let Some(last) = page.last() else { break };
        after = last.seq;
        seen.extend(page.iter().map(|e| e.seq));
    }
    assert_eq!(pages, [100, 100, 30, 0]);
    assert_eq!(seen, (1..=230).collect::<Vec<u64>>());
    let middle: Vec<u64> = store
        .list_events(&key, 57, 10)
        .await
        .unwrap()
        .iter()
        .map(|e| e.seq)
        .collect();
    assert_eq!(middle, (58..=67).collect::<Vec<u64>>());
}

pub async fn another_user_or_organisation_cannot_read_change_or_delete_the_session(
    store: Arc<dyn Tested>,
) {
    let key = new_key();
    let mine = seed_session(&*store, &key, NOW, 3).await;
    let other_user = SessionKey {
        user: UserId::generate(),
        ..key.clone()
    };
    let other_org = SessionKey {
        org: OrgId::generate(),
        ..key.clone()
    };
    for other in [&other_user, &other_org] {
        assert_eq!(store.get_session(other).await.unwrap(), None);
        assert!(store.list_events(other, 0, 100).await.unwrap().is_empty());
        let mut forged = mine.clone();
        forged.key = other.clone();
        forged.version += 1;
        let placed = forged.place(NOW, vec![NewEvent::user_message("forged")]);
        let refused = store
            .commit_session(&forged, mine.version, &placed, None, None)
            .await;
        assert!(matches!(refused, Err(StoreError::Gone)), "{refused:?}");
        assert!(!store.delete_session(other).await.unwrap());
        let listed = store
            .list_sessions(&other.user, &other.org, 50)
            .await
            .unwrap();
        assert!(listed.is_empty(), "{listed:?}");
    }
    assert_eq!(store.get_session(&key).await.unwrap(), Some(mine));
    assert_eq!(texts(&*store, &key).await, ["m0", "m1", "m2"]);
}

pub async fn of_concurrent_commits_at_one_version_exactly_one_lands(store: Arc<dyn Tested>) {
    let key = new_key();
    let base = seed_session(&*store, &key, NOW, 1).await;
    let store = store.clone();
    let tasks: Vec<_> = (0..8)
        .map(|i| {
            let (store, mut s) = (store.clone(), base.clone());
            tokio::spawn(async move {
                s.version += 1;
                let placed = s.place(NOW, vec![NewEvent::user_message(&format!("w{i}"))]);
                store
                    .commit_session(&s, base.version, &placed, None, None)
                    .await
            })
        })
        .collect();
    assert_eq!(landed(tasks).await, 1);
    let stored = store.get_session(&key).await.unwrap().unwrap();
    assert_eq!((stored.version, stored.next_seq), (base.version + 1, 3));
    assert_eq!(store.list_events(&key, 0, 100).await.unwrap().len(), 2);
}

pub async fn concurrent_appenders_that_retry_on_conflict_leave_a_gap_free_log(
    store: Arc<dyn Tested>,
) {
    let key = new_key();
    seed_session(&*store, &key, NOW, 1).await;
    let store = store.clone();
    let tasks: Vec<_> = (0..6)
        .map(|w| {
            let (store, key) = (store.clone(), key.clone());
            tokio::spawn(async move {
                for i in 0..5 {
                    append(&*store, &key, &format!("w{w}-{i}")).await;
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let events = store.list_events(&key, 0, 1000).await.unwrap();
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=31).collect::<Vec<u64>>());
    let texts: BTreeSet<String> = texts(&*store, &key).await.into_iter().collect();
    let expected: BTreeSet<String> = std::iter::once("m0".to_owned())
        .chain((0..6).flat_map(|w| (0..5).map(move |i| format!("w{w}-{i}"))))
        .collect();
    assert_eq!(texts, expected);
}

pub async fn of_concurrent_run_claims_exactly_one_wins(store: Arc<dyn Tested>) {
    let key = new_key();
    seed_session(&*store, &key, NOW, 1).await;
    let store = store.clone();
    let tasks: Vec<_> = (0..6)
        .map(|_| {
            let (store, key) = (store.clone(), key.clone());
            tokio::spawn(async move {
                loop {
                    let mut s = store.get_session(&key).await.unwrap().unwrap();
                    if s.run_id.is_some() {
                        return None;
                    }
                    let run = RunId::generate();
                    let expected = s.version;
                    s.version += 1;
                    s.run_id = Some(run.clone());
                    match store.commit_session(&s, expected, &[], None, None).await {
                        Ok(()) => return Some(run),
                        Err(StoreError::Conflict) => continue,
                        Err(e) => panic!("unexpected {e}"),
                    }
                }
            })
        })
        .collect();
    let mut winners = Vec::new();
    for t in tasks {
        winners.extend(t.await.unwrap());
    }
    assert_eq!(winners.len(), 1, "{winners:?}");
    let stored = store.get_session(&key).await.unwrap().unwrap();
    assert_eq!(stored.run_id.as_ref(), winners.first());
}

pub async fn delete_removes_the_session_and_every_event_of_a_long_log_and_nothing_else(
    store: Arc<dyn Tested>,
) {
    let key = new_key();
    let neighbour = SessionKey {
        session: SessionId::generate(),
        ..key.clone()
    };
    // 260 events: several pages of the delete's query, and eleven write batches of 25.
    seed_session(&*store, &key, NOW, 260).await;
    seed_session(&*store, &neighbour, NOW, 2).await;
    assert_eq!(store.rows_for(&key).await.unwrap(), (1, 260));

    assert!(store.delete_session(&key).await.unwrap());
    assert_eq!(store.rows_for(&key).await.unwrap(), (0, 0));
    assert_eq!(store.get_session(&key).await.unwrap(), None);
    assert!(store.list_events(&key, 0, 100).await.unwrap().is_empty());
    assert_eq!(
        listed(&*store, &key).await,
        std::slice::from_ref(&neighbour.session)
    );
    assert_eq!(store.rows_for(&neighbour).await.unwrap(), (1, 2));
    assert!(!store.delete_session(&key).await.unwrap());
}

pub async fn a_session_being_deleted_is_never_listed_and_is_found_until_its_removal_finishes(
    store: Arc<dyn Tested>,
) {
    let key = new_key();
    let kept = SessionKey {
        session: SessionId::generate(),
        ..key.clone()
    };
    seed_session(&*store, &key, NOW, 3).await;
    seed_session(&*store, &kept, NOW, 1).await;
    assert!(store.deleting_sessions(100).await.unwrap().is_empty());
    // The first half of a delete, and then the process dies.
    mark_deleting(&*store, &key).await;

    assert_eq!(
        listed(&*store, &key).await,
        std::slice::from_ref(&kept.session)
    );
    assert_eq!(
        store.deleting_sessions(100).await.unwrap(),
        std::slice::from_ref(&key)
    );
    assert_eq!(store.rows_for(&key).await.unwrap(), (1, 3));

    // Finishing it removes everything, and it is no longer among the deletes to finish.
    assert!(store.delete_session(&key).await.unwrap());
    assert_eq!(store.rows_for(&key).await.unwrap(), (0, 0));
    assert!(store.deleting_sessions(100).await.unwrap().is_empty());
    assert_eq!(store.rows_for(&kept).await.unwrap(), (1, 1));
}

pub async fn a_commit_to_a_deleted_session_is_gone_and_writes_nothing(store: Arc<dyn Tested>) {
    let key = new_key();
    let mut s = seed_session(&*store, &key, NOW, 1).await;
    assert!(store.delete_session(&key).await.unwrap());
    let expected = s.version;
    s.version += 1;
    let placed = s.place(NOW, vec![NewEvent::status_idle()]);
    let charge = Charge {
        month: NOW.month(),
        day: NOW.day(),
        model: "model-a".to_owned(),
        tokens: TokenUsage::default(),
        micros: 10,
    };
    let refused = store
        .commit_session(&s, expected, &placed, Some(&charge), None)
        .await;
    assert!(matches!(refused, Err(StoreError::Gone)), "{refused:?}");
    assert_eq!(store.rows_for(&key).await.unwrap(), (0, 0));
    let usage = store.get_usage(&key.org, &NOW.month()).await.unwrap();
    assert_eq!(usage, Usage::default());
}

pub async fn a_commit_of_the_record_alone_lands_once_at_its_version_and_never_revives_a_deleted_session(
    store: Arc<dyn Tested>,
) {
    let key = new_key();
    let base = seed_session(&*store, &key, NOW, 2).await;
    let stamp = |version: u64| {
        let mut next = base.clone();
        next.version = version + 1;
        next.cancelled_at = Some(Timestamp(NOW.millis() + version as i64));
        next
    };
    // Of concurrent commits at one version exactly one lands; the others conflict.
    let tasks: Vec<_> = (0..4)
        .map(|_| {
            let (store, next) = (store.clone(), stamp(base.version));
            tokio::spawn(async move {
                store
                    .commit_session(&next, base.version, &[], None, None)
                    .await
            })
        })
        .collect();
    assert_eq!(landed(tasks).await, 1);
    let stored = store.get_session(&key).await.unwrap().unwrap();
    assert_eq!(stored, stamp(base.version));
    assert_eq!(store.rows_for(&key).await.unwrap(), (1, 2));

    assert!(store.delete_session(&key).await.unwrap());
    let refused = store
        .commit_session(&stamp(stored.version), stored.version, &[], None, None)
        .await;
    assert!(matches!(refused, Err(StoreError::Gone)), "{refused:?}");
    assert_eq!(store.rows_for(&key).await.unwrap(), (0, 0));
}

pub async fn sessions_list_newest_first_within_one_user_and_organisation(store: Arc<dyn Tested>) {
    let key = new_key();
    let at = |offset: i64| Timestamp(NOW.millis() + offset);
    let mut ids = Vec::new();
    for offset in [1_000, 3_000, 2_000] {
        let k = SessionKey {
            session: SessionId::generate(),
            ..key.clone()
        };
        seed_session(&*store, &k, at(offset), 1).await;
        ids.push(k.session);
    }
    // The same session id space under another organisation and another user.
    seed_session(
        &*store,
        &SessionKey {
            org: OrgId::generate(),
            ..key.clone()
        },
        at(9_000),
        1,
    )
    .await;
    seed_session(
        &*store,
        &SessionKey {
            user: UserId::generate(),
            ..key.clone()
        },
        at(9_000),
        1,
    )
    .await;
    let listed = |limit| {
        let store = store.clone();
        let key = key.clone();
        async move {
            store
                .list_sessions(&key.user, &key.org, limit)
                .await
                .unwrap()
                .into_iter()
                .map(|s| s.id)
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(
        listed(50).await,
        [ids[1].clone(), ids[2].clone(), ids[0].clone()]
    );
    assert_eq!(listed(2).await, [ids[1].clone(), ids[2].clone()]);

    // An update moves a session to the top.
    let oldest = SessionKey {
        session: ids[0].clone(),
        ..key.clone()
    };
    let mut s = store.get_session(&oldest).await.unwrap().unwrap();
    let expected = s.version;
    s.version += 1;
    let placed = s.place(at(5_000), vec![NewEvent::user_message("again")]);
    store
        .commit_session(&s, expected, &placed, None, None)
        .await
        .unwrap();
    assert_eq!(listed(50).await[0], ids[0]);
}

/// Gives the session under `key` a run whose claim is made at `at`, in one commit.
async fn start_run(store: &dyn Store, key: &SessionKey, at: Timestamp) -> Session {
    let mut s = store.get_session(key).await.unwrap().unwrap();
    let expected = s.version;
    s.version += 1;
    s.start_run(RunId::generate(), at, None);
    store
        .commit_session(&s, expected, &[], None, None)
        .await
        .unwrap();
    s
}

/// Which of `keys` the store lists as stale before `before`.
async fn stale_among(store: &dyn Store, keys: &[&SessionKey], before: Timestamp) -> Vec<usize> {
    let stale = store.stale_runs(before, 10_000).await.unwrap();
    (0..keys.len())
        .filter(|&i| stale.contains(keys[i]))
        .collect()
}

pub async fn runs_are_found_by_when_they_go_stale_and_leave_the_index_when_they_end(
    store: Arc<dyn Tested>,
) {
    let (early, late, idle, deleted) = (new_key(), new_key(), new_key(), new_key());
    for key in [&early, &late, &idle, &deleted] {
        seed_session(&*store, key, NOW, 1).await;
    }
    let mut renewing = start_run(&*store, &early, NOW).await;
    start_run(&*store, &late, NOW.plus_millis(100_000)).await;
    start_run(&*store, &deleted, NOW).await;
    mark_deleting(&*store, &deleted).await;
    let keys = [&early, &late, &idle, &deleted];
    let lease = ExecClaim::first(&RunId::generate(), NOW, None).stale_at();
    assert_eq!(
        stale_among(&*store, &keys, lease).await,
        Vec::<usize>::new(),
        "strictly before"
    );
    assert_eq!(stale_among(&*store, &keys, lease.plus_millis(1)).await, [0]);
    let later = lease.plus_millis(100_001);
    assert_eq!(stale_among(&*store, &keys, later).await, [0, 1]);
    assert!(
        store.stale_runs(later, 1).await.unwrap().len() <= 1,
        "the limit holds"
    );

    // A commit that renews the lease moves the run out of reach; one that ends it removes it.
    let expected = renewing.version;
    renewing.version += 1;
    renewing
        .exec
        .as_mut()
        .unwrap()
        .renew(lease.plus_millis(-1_000));
    store
        .commit_session(&renewing, expected, &[], None, None)
        .await
        .unwrap();
    assert_eq!(stale_among(&*store, &keys, later).await, [1]);
    let mut ended = store.get_session(&late).await.unwrap().unwrap();
    let expected = ended.version;
    ended.version += 1;
    ended.end_run();
    store
        .commit_session(&ended, expected, &[], None, None)
        .await
        .unwrap();
    let far = Timestamp(NOW.millis() + 10_000_000);
    assert_eq!(stale_among(&*store, &keys, far).await, [0]);
}
