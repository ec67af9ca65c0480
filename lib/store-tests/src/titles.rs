//! Cases of finding sessions by title ([`SessionStore::find_sessions`]) and of a renamed title.
//!
//! [`SessionStore::find_sessions`]: knowledge_core::ports::SessionStore::find_sessions

use std::sync::Arc;

use knowledge_core::clock::Timestamp;
use knowledge_core::domain::{Session, SessionSummary, TitleQuery};
use knowledge_core::ids::{OrgId, SessionId, SessionKey, UserId};

use crate::{NOW, Store, Tested, mark_deleting, new_key};

/// A session titled `title` under a new id of `key`'s member, updated at `NOW + offset`.
async fn titled(store: &dyn Store, key: &SessionKey, title: &str, offset: i64) -> SessionKey {
    let k = SessionKey {
        session: SessionId::generate(),
        ..key.clone()
    };
    let session = Session::new(k.clone(), title.into(), Timestamp(NOW.millis() + offset));
    store.create_session(&session, &[], None).await.unwrap();
    k
}

fn titles(found: &[SessionSummary]) -> Vec<&str> {
    found.iter().map(|s| s.title.as_str()).collect()
}

pub async fn sessions_are_found_by_every_word_of_their_titles_newest_first_within_one_member(
    store: Arc<dyn Tested>,
) {
    let key = new_key();
    titled(&*store, &key, "Refund policy for annual plans", 1_000).await;
    titled(&*store, &key, "Onboarding checklist", 2_000).await;
    titled(&*store, &key, "ANNUAL leave rules", 3_000).await;
    titled(&*store, &key, "Été annuel", 4_000).await;
    // Matching titles of another member, of another organisation, and one being deleted.
    let other_user = SessionKey {
        user: UserId::generate(),
        ..key.clone()
    };
    let other_org = SessionKey {
        org: OrgId::generate(),
        ..key.clone()
    };
    titled(&*store, &other_user, "Annual report", 5_000).await;
    titled(&*store, &other_org, "Annual report", 5_000).await;
    let leaving = titled(&*store, &key, "Annual budget", 6_000).await;
    mark_deleting(&*store, &leaving).await;

    let find = |q: &str, limit: usize| {
        let (store, key, q) = (store.clone(), key.clone(), TitleQuery::parse(q).unwrap());
        async move {
            let found = store
                .find_sessions(&key.user, &key.org, &q, limit)
                .await
                .unwrap();
            assert!(found.complete, "a handful of sessions is searched whole");
            found.sessions
        }
    };
    assert_eq!(
        titles(&find("annual", 50).await),
        ["ANNUAL leave rules", "Refund policy for annual plans"]
    );
    assert_eq!(
        titles(&find("plans REFUND", 50).await),
        ["Refund policy for annual plans"]
    );
    assert_eq!(titles(&find("ÉTÉ", 50).await), ["Été annuel"]);
    assert_eq!(titles(&find("annu", 1).await), ["Été annuel"]);
    assert!(find("holidays", 50).await.is_empty());
}

pub async fn a_renamed_title_is_listed_and_found_and_the_session_keeps_its_place(
    store: Arc<dyn Tested>,
) {
    let key = new_key();
    let first = titled(&*store, &key, "How do I cancel?", 1_000).await;
    titled(&*store, &key, "Newer question", 2_000).await;
    let mut s = store.get_session(&first).await.unwrap().unwrap();
    let expected = s.version;
    s.version += 1;
    s.title = "Cancelling, explained".into();
    store
        .commit_session(&s, expected, &[], None, None)
        .await
        .unwrap();
    let listed = store.list_sessions(&key.user, &key.org, 50).await.unwrap();
    assert_eq!(titles(&listed), ["Newer question", "Cancelling, explained"]);
    let q = TitleQuery::parse("explained").unwrap();
    let found = store
        .find_sessions(&key.user, &key.org, &q, 50)
        .await
        .unwrap();
    assert_eq!(titles(&found.sessions), ["Cancelling, explained"]);
    let old = TitleQuery::parse("cancel?").unwrap();
    let gone = store
        .find_sessions(&key.user, &key.org, &old, 50)
        .await
        .unwrap();
    assert!(gone.sessions.is_empty());
}
