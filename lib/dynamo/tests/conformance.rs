//! The storage ports' contract on DynamoDB: a table of its own for each case, in the stand-in
//! (moto on loopback) that `KNOWLEDGE_TEST_DYNAMODB_ENDPOINT` names; `scripts/test` starts it.
//! Without it each case is skipped (`knowledge_test_support::stores`).

use std::sync::Arc;

use knowledge_dynamo::{DynamoStore, RequestCounter, connect, create_table_if_missing};
use knowledge_store_tests::Tested;

/// A fresh table on the stand-in, or `None` (the case skipped) when no stand-in is named.
async fn open() -> Option<(Arc<dyn Tested>, ())> {
    if knowledge_test_support::stores::skip_dynamodb() {
        return None;
    }
    let endpoint = knowledge_test_support::stores::dynamodb_endpoint();
    let client = connect(Some(&endpoint), RequestCounter::default()).await;
    let table = format!("conformance-{}", uuid::Uuid::new_v4().simple());
    create_table_if_missing(&client, &table).await.unwrap();
    Some((Arc::new(DynamoStore::new(client, table)), ()))
}

knowledge_store_tests::conformance!(open);

/// A search reads at most its pages of the index, newest first, and says when older sessions
/// were left unsearched (the bound made small: pages of 2 entries).
#[tokio::test]
async fn a_search_reads_only_its_pages_of_the_index_and_says_when_it_stopped_short() {
    use knowledge_core::clock::Timestamp;
    use knowledge_core::domain::{Session, TitleQuery};
    use knowledge_core::ids::{OrgId, SessionId, SessionKey, UserId};
    use knowledge_core::ports::SessionStore;

    knowledge_test_support::skip_without_dynamodb!();
    let endpoint = knowledge_test_support::stores::dynamodb_endpoint();
    let client = connect(Some(&endpoint), RequestCounter::default()).await;
    let table = format!("find-{}", uuid::Uuid::new_v4().simple());
    create_table_if_missing(&client, &table).await.unwrap();
    let store = DynamoStore::new(client, table);
    let (user, org) = (
        UserId::parse("usr_a").unwrap(),
        OrgId::parse("org_a").unwrap(),
    );
    for n in 0..7 {
        let key = SessionKey::new(&user, &org, &SessionId::generate());
        let session = Session::new(key, format!("Refund question {n}"), Timestamp(1_000 + n));
        store.create_session(&session, &[], None).await.unwrap();
    }
    let query = TitleQuery::parse("REFUND").unwrap();
    let titles = |found: &knowledge_core::domain::FoundSessions| -> Vec<String> {
        found.sessions.iter().map(|s| s.title.clone()).collect()
    };
    // Three pages of two: the six newest, and the oldest left unsearched.
    let short = (store.find_sessions_in_pages(&user, &org, &query, 50, 2, 3))
        .await
        .unwrap();
    assert_eq!(
        titles(&short),
        (1..7)
            .rev()
            .map(|n| format!("Refund question {n}"))
            .collect::<Vec<_>>()
    );
    assert!(!short.complete);
    // Four pages reach the end.
    let all = (store.find_sessions_in_pages(&user, &org, &query, 50, 2, 4))
        .await
        .unwrap();
    assert_eq!(all.sessions.len(), 7);
    assert!(all.complete);
    // The limit stops the search early; nothing was left out for want of pages.
    let few = (store.find_sessions_in_pages(&user, &org, &query, 3, 2, 1_000))
        .await
        .unwrap();
    assert_eq!(titles(&few).len(), 3);
    assert!(few.complete);
}
