//! The storage ports' contract on DynamoDB: a table of its own for each case, in the stand-in
//! (moto on loopback) that `KNOWLEDGE_TEST_DYNAMODB_ENDPOINT` names; `scripts/test` starts it.
//! Without it each case is skipped (`knowledge_test_support::stores`).

use std::sync::Arc;

use knowledge_dynamo::{DynamoStore, RequestCounter, connect, create_table_if_missing};
use knowledge_store_tests::Tested;

/// A store on a fresh table of the stand-in, with its client, or `None` (the case skipped) when
/// no stand-in is named.
async fn fresh() -> Option<(DynamoStore, aws_sdk_dynamodb::Client)> {
    if knowledge_test_support::stores::skip_dynamodb() {
        return None;
    }
    let endpoint = knowledge_test_support::stores::dynamodb_endpoint();
    let client = connect(Some(&endpoint), RequestCounter::default()).await;
    let table = format!("conformance-{}", uuid::Uuid::new_v4().simple());
    create_table_if_missing(&client, &table).await.unwrap();
    Some((DynamoStore::new(client.clone(), table), client))
}

async fn open() -> Option<(Arc<dyn Tested>, ())> {
    Some((Arc::new(fresh().await?.0), ()))
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

/// A collection's deletion cut short after its first write (the collection marked, its
/// documents still stored) hides the collection from every read, takes no new document, and
/// is finished by the next call, which releases the documents' bytes; and the queue's index
/// (GSI2's `QUEUED`) holds a document only while it is queued.
#[tokio::test]
async fn a_collection_deletion_cut_short_is_finished_by_the_next_call() {
    use aws_sdk_dynamodb::types::AttributeValue;
    use knowledge_core::domain::{
        Access, AuditAction, Collection, CollectionSource, Document, DocumentStatus, Format,
    };
    use knowledge_core::ids::{CollectionId, DocumentId, OrgId};
    use knowledge_core::ports::{DocumentStore, StoreError};
    use knowledge_dynamo::keys;
    use knowledge_store_tests::{NOW, audit};

    let Some((store, client)) = fresh().await else {
        return;
    };
    let org = OrgId::generate();
    let c = Collection {
        org: org.clone(),
        id: CollectionId::generate(),
        name: "Doomed".into(),
        description: String::new(),
        access: Access::Everyone,
        source: CollectionSource::Upload,
        version: 1,
        created_at: NOW,
        updated_at: NOW,
    };
    let target = c.id.as_str();
    let created = audit(&org, AuditAction::CollectionCreated, target);
    store.create_collection(&c, &created).await.unwrap();
    let document = |name: &str| Document {
        org: org.clone(),
        collection: c.id.clone(),
        id: DocumentId::generate(),
        name: name.into(),
        format: Format::Text,
        bytes: 5,
        sha256: "0".repeat(64),
        status: DocumentStatus::Queued,
        reason: None,
        generation: 1,
        passages: 0,
        attempts: 0,
        lease_until: None,
        version: 1,
        by: None,
        created_at: NOW,
        updated_at: NOW,
    };
    let mut stored = Vec::new();
    for name in ["a.txt", "b.txt", "c.txt"] {
        let d = document(name);
        let added = audit(&org, AuditAction::DocumentAdded, d.id.as_str());
        store.create_document(&d, 100, &added).await.unwrap();
        stored.push(d);
    }
    let indexed = Document {
        status: DocumentStatus::Indexed,
        ..stored[2].next(NOW)
    };
    (store.update_document(&stored[2], &indexed, 100, None))
        .await
        .unwrap();
    let queued = client
        .query()
        .table_name(store.table())
        .index_name(keys::GSI2)
        .key_condition_expression("GSI2PK = :q")
        .expression_attribute_values(":q", AttributeValue::S(keys::QUEUED.into()))
        .send()
        .await
        .unwrap();
    assert_eq!(queued.items().len(), 2, "{:?}", queued.items());

    // What a call cut short after its first write leaves: the mark, and every document.
    let (pk, sk) = keys::collection(&org, &c.id);
    client
        .update_item()
        .table_name(store.table())
        .key(keys::PK, AttributeValue::S(pk))
        .key(keys::SK, AttributeValue::S(sk))
        .update_expression("SET deleting = :d ADD version :one")
        .expression_attribute_values(":d", AttributeValue::N("1".into()))
        .expression_attribute_values(":one", AttributeValue::N("1".into()))
        .send()
        .await
        .unwrap();
    assert_eq!(store.get_collection(&org, &c.id).await.unwrap(), None);
    assert!(store.list_collections(&org).await.unwrap().is_empty());
    let late = document("late.txt");
    let added = audit(&org, AuditAction::DocumentAdded, late.id.as_str());
    let refused = store.create_document(&late, 100, &added).await;
    assert!(matches!(refused, Err(StoreError::Gone)), "{refused:?}");
    let renamed = Collection {
        version: 2,
        ..c.clone()
    };
    let changed = audit(&org, AuditAction::CollectionChanged, target);
    let refused = store.update_collection(&c, &renamed, &changed).await;
    assert!(matches!(refused, Err(StoreError::Gone)), "{refused:?}");
    assert_eq!(store.storage_used(&org).await.unwrap(), 15);

    let deleted = audit(&org, AuditAction::CollectionDeleted, target);
    let finished = store.delete_collection(&org, &c.id, &deleted).await;
    let mut finished: Vec<_> = finished
        .unwrap()
        .expect("it was there")
        .into_iter()
        .map(|d| d.id)
        .collect();
    let mut ids: Vec<_> = stored.iter().map(|d| d.id.clone()).collect();
    finished.sort();
    ids.sort();
    assert_eq!(finished, ids);
    assert!(store.list_documents(&org, &c.id).await.unwrap().is_empty());
    assert_eq!(store.storage_used(&org).await.unwrap(), 0);
    let again = store.delete_collection(&org, &c.id, &deleted).await;
    assert!(matches!(again, Ok(None)), "{again:?}");
}
