//! Tail polls answered from a kept copy never hide a commit: a member removed or an event
//! appended, by this store or by another connection on the same file (as the admin commands in
//! another process are), is seen by the very next read.

use knowledge_core::domain::{AuditAction, NewEvent};
use knowledge_core::ids::SessionKey;
use knowledge_core::ports::{
    BatchStore, DirectoryStore, EventsAfter, Reads, SessionStore, Snapshot,
};
use knowledge_sqlite::SqliteStore;
use knowledge_store_tests::{NOW, audit, member_with_session};

/// This store and another on the same fresh file (as another process would open it), with a
/// member's session of three events; the session's key.
async fn two_stores() -> (SqliteStore, SqliteStore, SessionKey, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path()).unwrap();
    let other = SqliteStore::open(dir.path()).unwrap();
    let key = member_with_session(&store, 3).await;
    (store, other, key, dir)
}

async fn tail(store: &SqliteStore, key: &SessionKey) -> Snapshot {
    let reads = Reads {
        session: Some(&key.session),
        events: Some(EventsAfter {
            after: 3,
            limit: 101,
        }),
        ..Reads::member(&key.org, &key.user)
    };
    store.read_batch(&reads).await.unwrap()
}

async fn append(store: &SqliteStore, key: &SessionKey) {
    let mut s = store.get_session(key).await.unwrap().unwrap();
    let expected = s.version;
    s.version += 1;
    let placed = s.place(NOW, vec![NewEvent::agent_message("news")]);
    store
        .commit_session(&s, expected, &placed, None, None)
        .await
        .unwrap();
}

#[tokio::test]
async fn an_event_committed_here_or_by_another_connection_is_in_the_next_tail_read() {
    let (store, other, key, _dir) = two_stores().await;
    let first = tail(&store, &key).await;
    assert!(first.member.is_some() && first.events.is_empty());
    assert_eq!(tail(&store, &key).await, first);

    append(&store, &key).await;
    let seen = tail(&store, &key).await;
    assert_eq!(seen.events.iter().map(|e| e.seq).collect::<Vec<_>>(), [4]);

    let reads = |after| Reads {
        session: Some(&key.session),
        events: Some(EventsAfter { after, limit: 101 }),
        ..Reads::member(&key.org, &key.user)
    };
    assert!(store.read_batch(&reads(4)).await.unwrap().events.is_empty());
    append(&other, &key).await;
    let seen = store.read_batch(&reads(4)).await.unwrap();
    assert_eq!(seen.events.iter().map(|e| e.seq).collect::<Vec<_>>(), [5]);
}

#[tokio::test]
async fn a_member_removed_by_another_connection_is_gone_from_the_next_tail_read() {
    let (store, other, key, _dir) = two_stores().await;
    for _ in 0..3 {
        assert!(tail(&store, &key).await.member.is_some());
    }
    let removed = audit(&key.org, AuditAction::MemberRemoved, "m");
    assert!(
        other
            .remove_member(&key.org, &key.user, &removed)
            .await
            .unwrap()
    );
    let after = tail(&store, &key).await;
    assert_eq!((after.member, after.events.len()), (None, 0));
}

#[tokio::test]
async fn commits_after_the_log_restarts_from_its_start_are_seen_by_the_next_tail_read() {
    let (store, other, key, dir) = two_stores().await;
    let raw = rusqlite::Connection::open(dir.path().join("store.db")).unwrap();
    let after = |after| Reads {
        session: Some(&key.session),
        events: Some(EventsAfter { after, limit: 101 }),
        ..Reads::member(&key.org, &key.user)
    };
    for seq in 3..23 {
        // Kept: nothing new after `seq`.
        for _ in 0..2 {
            assert!(
                store
                    .read_batch(&after(seq))
                    .await
                    .unwrap()
                    .events
                    .is_empty()
            );
        }
        // Every other time the log is checkpointed and truncated first, so that the commit
        // writes the log from its start again.
        if seq % 2 == 0 {
            let _: (i64, i64, i64) = raw
                .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                })
                .unwrap();
        }
        append(if seq % 3 == 0 { &store } else { &other }, &key).await;
        let seen = store.read_batch(&after(seq)).await.unwrap();
        let seqs: Vec<_> = seen.events.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, [seq + 1], "the commit after event {seq}");
    }
}
