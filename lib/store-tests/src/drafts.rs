//! Cases of the answer in progress kept beside a session
//! ([`SessionStore::put_draft`](knowledge_core::ports::SessionStore::put_draft)).

use std::sync::Arc;

use knowledge_core::domain::{Draft, DraftMark, NewEvent, Session};
use knowledge_core::ids::{RunId, SessionKey, UserId};
use knowledge_core::ports::{Reads, Snapshot};

use crate::{NOW, Store, Tested, mark_deleting, member_with_session};

/// The session under `key` given a run, in one commit; returns it as stored.
async fn running(store: &dyn Store, key: &SessionKey) -> Session {
    let mut s = store.get_session(key).await.unwrap().unwrap();
    let expected = s.version;
    s.version += 1;
    s.start_run(RunId::generate(), NOW, None);
    s.pending = vec![1];
    store
        .commit_session(&s, expected, &[], None, None)
        .await
        .unwrap();
    s
}

async fn read(store: &dyn Store, key: &SessionKey) -> Snapshot {
    let reads = Reads {
        session: Some(&key.session),
        ..Reads::member(&key.org, &key.user)
    };
    store.read_batch(&reads).await.unwrap()
}

fn draft(text: &str, s: &Session) -> Draft {
    Draft::new(text, NOW, s.draft_mark().expect("a call in flight"))
}

pub async fn a_draft_is_read_with_its_session_replaced_by_the_next_and_removed_by_a_commit(
    store: Arc<dyn Tested>,
) {
    let key = member_with_session(&*store, 1).await;
    let s = running(&*store, &key).await;
    let run = s.run_id.clone().unwrap();
    assert_eq!(read(&*store, &key).await.draft, None);
    assert!(
        store
            .put_draft(&key, &run, &draft("Half", &s))
            .await
            .unwrap()
    );
    assert!(
        store
            .put_draft(&key, &run, &draft("Half an answer", &s))
            .await
            .unwrap()
    );
    let seen = read(&*store, &key).await;
    assert_eq!(seen.draft, Some(draft("Half an answer", &s)));
    // Kept beside the session: its version did not move.
    assert_eq!(seen.session.unwrap().version, s.version);
    // The answer's commit removes it.
    let mut next = s.clone();
    next.version += 1;
    let placed = next.place(NOW, vec![NewEvent::agent_message("Half an answer, whole")]);
    store
        .commit_session(&next, s.version, &placed, None, None)
        .await
        .unwrap();
    assert_eq!(read(&*store, &key).await.draft, None);
}

pub async fn a_draft_for_another_run_or_a_session_being_deleted_is_refused_and_read_by_no_one_else(
    store: Arc<dyn Tested>,
) {
    let key = member_with_session(&*store, 1).await;
    let s = running(&*store, &key).await;
    let run = s.run_id.clone().unwrap();
    // Another run's draft (an execution of a run already replaced) writes nothing.
    assert!(
        !store
            .put_draft(&key, &RunId::generate(), &draft("Old", &s))
            .await
            .unwrap()
    );
    assert_eq!(read(&*store, &key).await.draft, None);
    assert!(
        store
            .put_draft(&key, &run, &draft("Mine", &s))
            .await
            .unwrap()
    );
    // Another member asking for the same session id reads no session and no draft.
    let other = SessionKey {
        user: UserId::generate(),
        ..key.clone()
    };
    let theirs = read(&*store, &other).await;
    assert_eq!((theirs.session, theirs.draft), (None, None));
    // A session being deleted takes none, and one that is gone neither.
    mark_deleting(&*store, &key).await;
    assert!(
        !store
            .put_draft(&key, &run, &draft("Late", &s))
            .await
            .unwrap()
    );
    store.delete_session(&key).await.unwrap();
    assert!(
        !store
            .put_draft(&key, &run, &draft("Later", &s))
            .await
            .unwrap()
    );
    assert_eq!(read(&*store, &key).await.draft, None);
}

/// The mark is only a value: a hand-made one reads back as written.
pub async fn a_draft_reads_back_exactly_as_written(store: Arc<dyn Tested>) {
    let key = member_with_session(&*store, 1).await;
    let s = running(&*store, &key).await;
    let written = Draft::new(
        "Ünïcode, **Markdown** and a\nnew line",
        NOW,
        DraftMark {
            user_seq: 1,
            step: 3,
        },
    );
    assert!(
        store
            .put_draft(&key, s.run_id.as_ref().unwrap(), &written)
            .await
            .unwrap()
    );
    assert_eq!(read(&*store, &key).await.draft, Some(written));
}
