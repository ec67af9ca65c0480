//! Cases of [`LimitStore`](knowledge_core::ports::LimitStore): rate windows, quota and cost cap.

use std::sync::Arc;

use knowledge_core::clock::Timestamp;
use knowledge_core::domain::NewEvent;
use knowledge_core::domain::Usage;
use knowledge_core::ids::{OrgId, UserId};
use knowledge_core::ports::{Charge, StoreError};

use crate::{NOW, Tested, landed, new_key, seed_session};

pub async fn a_rate_window_is_replaced_only_at_the_version_it_was_read_at(store: Arc<dyn Tested>) {
    let window = format!("message#{}", UserId::generate());
    assert_eq!(store.get_rate_window(&window).await.unwrap().version, 0);
    let hits = [Timestamp(NOW.millis() - 10), NOW];
    let expires = Timestamp(NOW.millis() + 60_000);
    store
        .put_rate_window(&window, &hits, 0, expires)
        .await
        .unwrap();
    let read = store.get_rate_window(&window).await.unwrap();
    assert_eq!((read.hits.as_slice(), read.version), (&hits[..], 1));
    for stale in [0, 2] {
        let refused = store.put_rate_window(&window, &[NOW], stale, expires).await;
        assert!(matches!(refused, Err(StoreError::Conflict)), "{refused:?}");
    }

    let store = store.clone();
    let tasks: Vec<_> = (0..6)
        .map(|i| {
            let (store, window) = (store.clone(), window.clone());
            tokio::spawn(async move {
                store
                    .put_rate_window(&window, &[Timestamp(NOW.millis() + i)], 1, expires)
                    .await
            })
        })
        .collect();
    assert_eq!(landed(tasks).await, 1);
    let read = store.get_rate_window(&window).await.unwrap();
    assert_eq!((read.hits.len(), read.version), (1, 2));
}

pub async fn concurrent_queries_never_pass_the_monthly_quota_together(store: Arc<dyn Tested>) {
    let org = OrgId::generate();
    let month = NOW.month();
    let store = store.clone();
    let tasks: Vec<_> = (0..12)
        .map(|_| {
            let (store, org, month) = (store.clone(), org.clone(), month.clone());
            tokio::spawn(async move { store.consume_query(&org, &month, Some(5), None).await })
        })
        .collect();
    let (mut admitted, mut refused) = (0, 0);
    for t in tasks {
        match t.await.unwrap().unwrap() {
            Ok(u) => {
                assert!(u.queries <= 5, "{u:?}");
                admitted += 1
            }
            Err(r) => {
                assert_eq!(r.0.queries, 5);
                refused += 1
            }
        }
    }
    assert_eq!((admitted, refused), (5, 7));
    assert_eq!(store.get_usage(&org, &month).await.unwrap().queries, 5);
    // A zero quota refuses a month that has no usage yet.
    let empty = store.consume_query(&org, "2020-01", Some(0), None).await;
    assert_eq!(
        empty.unwrap(),
        Err(knowledge_core::ports::UsageRefused(Usage::default()))
    );
}

pub async fn spend_charged_with_a_commit_counts_against_the_cost_cap(store: Arc<dyn Tested>) {
    let key = new_key();
    let month = NOW.month();
    let counted = store
        .consume_query(&key.org, &month, None, Some(1_000))
        .await
        .unwrap();
    assert_eq!(
        counted,
        Ok(Usage {
            queries: 1,
            cost_micros: 0
        })
    );
    let mut s = seed_session(&*store, &key, NOW, 1).await;
    let expected = s.version;
    s.version += 1;
    let placed = s.place(NOW, vec![NewEvent::agent_message("answer")]);
    let charge = Charge {
        month: month.clone(),
        micros: 1_500,
    };
    store
        .commit_session(&s, expected, &placed, Some(&charge))
        .await
        .unwrap();
    let spent = Usage {
        queries: 1,
        cost_micros: 1_500,
    };
    assert_eq!(store.get_usage(&key.org, &month).await.unwrap(), spent);
    let refused = store
        .consume_query(&key.org, &month, None, Some(1_000))
        .await
        .unwrap();
    assert_eq!(refused, Err(knowledge_core::ports::UsageRefused(spent)));
    assert_eq!(
        store.get_usage(&key.org, "1999-12").await.unwrap(),
        Usage::default()
    );
}
