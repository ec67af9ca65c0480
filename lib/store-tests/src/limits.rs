//! Cases of [`LimitStore`](knowledge_core::ports::LimitStore) and of the gates a session write
//! passes ([`Gate`]): rate windows, the monthly quota and the cost cap, all or nothing with
//! the write.

use std::sync::Arc;

use knowledge_core::clock::Timestamp;
use knowledge_core::domain::{MemberCaps, NewEvent, Session, Usage};
use knowledge_core::ids::{SessionKey, UserId};
use knowledge_core::ports::{Charge, Gate, QueryCount, RateUpdate, StoreError, TokenUsage};

use crate::{NOW, Tested, landed, new_key, seed_session};

const EXPIRES: Timestamp = Timestamp(NOW.0 + 60_000);

pub(crate) fn update<'a>(
    key: &'a str, hits: &'a [Timestamp], expected_version: u64,
) -> RateUpdate<'a> {
    RateUpdate {
        key,
        hits,
        expected_version,
        expires_at: EXPIRES,
    }
}

/// A new session under `key` with one message, as creating one writes it.
pub(crate) fn opening(key: &SessionKey) -> (Session, Vec<knowledge_core::domain::Event>) {
    let mut s = Session::new(key.clone(), "opening".into(), NOW);
    let events = s.place(NOW, vec![NewEvent::user_message("question")]);
    (s, events)
}

/// Commits an answer to `s`, stored at its current version, with `micros` of spend charged
/// to `month`.
pub(crate) async fn answer_charged(store: &dyn Tested, s: &mut Session, month: &str, micros: u64) {
    let expected = s.version;
    s.version += 1;
    let placed = s.place(NOW, vec![NewEvent::agent_message("answer")]);
    let charge = Charge {
        month: month.to_owned(),
        day: NOW.day(),
        model: "model-a".to_owned(),
        tokens: TokenUsage::default(),
        micros,
    };
    store
        .commit_session(s, expected, &placed, Some(&charge), None)
        .await
        .unwrap();
}

pub async fn a_rate_window_is_replaced_only_at_the_version_it_was_read_at(store: Arc<dyn Tested>) {
    let window = format!("message#{}", UserId::generate());
    assert_eq!(store.get_rate_window(&window).await.unwrap().version, 0);
    let hits = [Timestamp(NOW.millis() - 10), NOW];
    store
        .put_rate_window(update(&window, &hits, 0))
        .await
        .unwrap();
    let read = store.get_rate_window(&window).await.unwrap();
    assert_eq!((read.hits.as_slice(), read.version), (&hits[..], 1));
    for stale in [0, 2] {
        let refused = store.put_rate_window(update(&window, &[NOW], stale)).await;
        assert!(matches!(refused, Err(StoreError::Conflict)), "{refused:?}");
    }

    let tasks: Vec<_> = (0..6)
        .map(|i| {
            let (store, window) = (store.clone(), window.clone());
            tokio::spawn(async move {
                let hits = [Timestamp(NOW.millis() + i)];
                store.put_rate_window(update(&window, &hits, 1)).await
            })
        })
        .collect();
    assert_eq!(landed(tasks).await, 1);
    let read = store.get_rate_window(&window).await.unwrap();
    assert_eq!((read.hits.len(), read.version), (1, 2));
}

pub async fn concurrent_gated_creates_never_pass_the_monthly_quota_together(
    store: Arc<dyn Tested>,
) {
    let org = new_key().org;
    let month = NOW.month();
    let tasks: Vec<_> = (0..12)
        .map(|_| {
            let (store, month) = (store.clone(), month.clone());
            let key = SessionKey {
                org: org.clone(),
                ..new_key()
            };
            tokio::spawn(async move {
                // Each its own user, so only the quota can refuse.
                let window = format!("create#{}", key.user);
                let (session, events) = opening(&key);
                let gate = Gate {
                    rate: update(&window, &[NOW], 0),
                    query: Some(QueryCount {
                        month: &month,
                        day: NOW.day(),
                        quota: Some(5),
                        cap_micros: None,
                        member: MemberCaps::UNLIMITED,
                    }),
                };
                let created = store.create_session(&session, &events, Some(&gate)).await;
                (key, window, created)
            })
        })
        .collect();
    let (mut created, mut refused) = (0, 0);
    for t in tasks {
        let (key, window, outcome) = t.await.unwrap();
        let rows = store.rows_for(&key).await.unwrap();
        let window = store.get_rate_window(&window).await.unwrap();
        match outcome {
            Ok(()) => {
                assert_eq!((rows, window.version), ((1, 1), 1));
                created += 1;
            }
            Err(StoreError::UsageLimit(usage)) => {
                assert_eq!(usage.queries, 5);
                // Nothing of a refused write stays: no session, no event, no slot taken.
                assert_eq!((rows, window.version), ((0, 0), 0));
                refused += 1;
            }
            Err(e) => panic!("unexpected {e}"),
        }
    }
    assert_eq!((created, refused), (5, 7));
    assert_eq!(store.get_usage(&org, &month).await.unwrap().queries, 5);
}

pub async fn a_zero_quota_or_cap_refuses_a_month_with_no_usage_yet(store: Arc<dyn Tested>) {
    for (quota, cap_micros) in [(Some(0), None), (None, Some(0))] {
        let key = new_key();
        let window = format!("create#{}", key.user);
        let (session, events) = opening(&key);
        let gate = Gate {
            rate: update(&window, &[NOW], 0),
            query: Some(QueryCount {
                month: "2020-01",
                day: NOW.day(),
                quota,
                cap_micros,
                member: MemberCaps::UNLIMITED,
            }),
        };
        let refused = store.create_session(&session, &events, Some(&gate)).await;
        assert!(
            matches!(refused, Err(StoreError::UsageLimit(u)) if u == Usage::default()),
            "{refused:?}"
        );
        assert_eq!(store.rows_for(&key).await.unwrap(), (0, 0));
    }
}

pub async fn a_gate_whose_rate_window_moved_refuses_the_write_and_changes_nothing(
    store: Arc<dyn Tested>,
) {
    let key = new_key();
    let month = NOW.month();
    let window = format!("message#{}", key.user);
    store
        .put_rate_window(update(&window, &[NOW], 0))
        .await
        .unwrap();
    let count = QueryCount {
        month: &month,
        day: NOW.day(),
        quota: Some(10),
        cap_micros: None,
        member: MemberCaps::UNLIMITED,
    };
    // Creating, with the window read before another request took a slot.
    let (session, events) = opening(&key);
    let stale = Gate {
        rate: update(&window, &[NOW, NOW], 0),
        query: Some(count),
    };
    let refused = store.create_session(&session, &events, Some(&stale)).await;
    assert!(matches!(refused, Err(StoreError::Conflict)), "{refused:?}");
    assert_eq!(store.rows_for(&key).await.unwrap(), (0, 0));

    // Committing a message, likewise.
    let mut s = seed_session(&*store, &key, NOW, 1).await;
    let expected = s.version;
    s.version += 1;
    let placed = s.place(NOW, vec![NewEvent::user_message("follow-up")]);
    let refused = store
        .commit_session(&s, expected, &placed, None, Some(&stale))
        .await;
    assert!(matches!(refused, Err(StoreError::Conflict)), "{refused:?}");
    assert_eq!(store.rows_for(&key).await.unwrap(), (1, 1));
    assert_eq!(
        store.get_usage(&key.org, &month).await.unwrap(),
        Usage::default()
    );
    let read = store.get_rate_window(&window).await.unwrap();
    assert_eq!((read.hits.len(), read.version), (1, 1));

    // At the version it was read at, all of it lands.
    let fresh = Gate {
        rate: update(&window, &[NOW, NOW], 1),
        query: Some(count),
    };
    store
        .commit_session(&s, expected, &placed, None, Some(&fresh))
        .await
        .unwrap();
    assert_eq!(store.rows_for(&key).await.unwrap(), (1, 2));
    assert_eq!(store.get_usage(&key.org, &month).await.unwrap().queries, 1);
    assert_eq!(store.get_rate_window(&window).await.unwrap().version, 2);
}

pub async fn spend_charged_with_a_commit_counts_against_the_cost_cap(store: Arc<dyn Tested>) {
    let key = new_key();
    let month = NOW.month();
    let window = format!("create#{}", key.user);
    let count = QueryCount {
        month: &month,
        day: NOW.day(),
        quota: None,
        cap_micros: Some(1_000),
        member: MemberCaps::UNLIMITED,
    };
    let (mut s, events) = opening(&key);
    let gate = Gate {
        rate: update(&window, &[NOW], 0),
        query: Some(count),
    };
    store
        .create_session(&s, &events, Some(&gate))
        .await
        .unwrap();
    let counted = Usage {
        queries: 1,
        cost_micros: 0,
    };
    assert_eq!(store.get_usage(&key.org, &month).await.unwrap(), counted);

    answer_charged(&*store, &mut s, &month, 1_500).await;
    let spent = Usage {
        queries: 1,
        cost_micros: 1_500,
    };
    assert_eq!(store.get_usage(&key.org, &month).await.unwrap(), spent);

    // The next question is refused by the cap, and its message is not written.
    let expected = s.version;
    s.version += 1;
    let placed = s.place(NOW, vec![NewEvent::user_message("one more")]);
    let gate = Gate {
        rate: update(&window, &[NOW, NOW], 1),
        query: Some(count),
    };
    let refused = store
        .commit_session(&s, expected, &placed, None, Some(&gate))
        .await;
    assert!(
        matches!(refused, Err(StoreError::UsageLimit(u)) if u == spent),
        "{refused:?}"
    );
    assert_eq!(store.rows_for(&key).await.unwrap(), (1, 2));
    assert_eq!(store.get_rate_window(&window).await.unwrap().version, 1);
    assert_eq!(
        store.get_usage(&key.org, "1999-12").await.unwrap(),
        Usage::default()
    );
}
