//! The indexer's schedule on moto: uploads cut short settled (an original stored is queued
//! and indexed, one never sent deleted with its bytes released), a document whose bucket's
//! event was lost indexed, and a recent upload left alone. Every request is checked against
//! the indexer's row.

use knowledge_aws::functions;
use knowledge_core::clock::{Clock, SystemClock, Timestamp};
use knowledge_core::domain::{Actor, AuditAction, AuditEntry, Document, DocumentStatus, Format};
use knowledge_core::ids::{CollectionId, DocumentId, OrgId};
use knowledge_core::ports::DocumentStore;
use lambda_runtime::{Context, LambdaEvent};
use serde_json::json;

use crate::admin::promote_the_sample_user;
use crate::support::{Deployment, ORG, USER};

const FILE: &[u8] = b"# Visas\n\nA visa for Brazil is asked for a month ahead.\n";

/// A document of `collection` written straight to the store, as a function would have left
/// it at `at`: `status`, generation 1, of [`FILE`]'s size.
async fn left(
    d: &Deployment, collection: &CollectionId, status: DocumentStatus, at: Timestamp,
) -> Document {
    let org = OrgId::parse(ORG).unwrap();
    let document = Document {
        org: org.clone(),
        collection: collection.clone(),
        id: DocumentId::generate(),
        name: "visas.md".into(),
        format: Format::Markdown,
        bytes: FILE.len() as u64,
        sha256: String::new(),
        status,
        reason: None,
        generation: 1,
        passages: 0,
        attempts: 0,
        lease_until: None,
        version: 1,
        by: None,
        created_at: at,
        updated_at: at,
    };
    let audit = AuditEntry::new(&org, at, Actor::Admin, AuditAction::DocumentAdded, USER);
    (d.store.create_document(&document, u64::MAX, &audit))
        .await
        .unwrap();
    document
}

/// Stores [`FILE`] as `document`'s original, as the browser's upload does.
async fn sent(d: &Deployment, document: &Document) {
    let key = knowledge_s3::original_key(&document.org, &document.id, 1);
    (d.s3.put_object())
        .bucket(d.env.documents_bucket.as_ref().unwrap())
        .key(key)
        .body(FILE.to_vec().into())
        .send()
        .await
        .unwrap();
}

async fn stored(d: &Deployment, document: &Document) -> Option<Document> {
    let store = &d.store;
    (store.get_document(&document.org, &document.collection, &document.id))
        .await
        .unwrap()
}

#[tokio::test]
async fn the_indexers_schedule_settles_uploads_cut_short_and_indexes_what_was_left_queued() {
    knowledge_test_support::skip_without_dynamodb!();
    let d = Deployment::new().await;
    promote_the_sample_user(&d).await;
    let body = json!({"name": "Travel", "description": "", "access": {"kind": "everyone"}});
    let (status, made, _) = d
        .send(functions::ADMIN, "POST", "/api/admin/collections", body)
        .await;
    assert_eq!(status, 201, "{made}");
    let collection = CollectionId::parse(made["id"].as_str().unwrap()).unwrap();
    let now = SystemClock.now();
    let hours_ago = now.plus_millis(-2 * 60 * 60_000);
    // Its original came, and its event never did (or the process died before queueing it).
    let arrived = left(&d, &collection, DocumentStatus::Uploading, hours_ago).await;
    sent(&d, &arrived).await;
    // Its original never came.
    let unsent = left(&d, &collection, DocumentStatus::Uploading, hours_ago).await;
    // Queued, and its event's deliveries spent before it was indexed.
    let lost = left(&d, &collection, DocumentStatus::Queued, hours_ago).await;
    sent(&d, &lost).await;
    // Being uploaded now.
    let recent = left(&d, &collection, DocumentStatus::Uploading, now).await;
    d.counter.take();

    let indexer = d.cold_start(functions::INDEXER).await.indexer().unwrap();
    let mut context = Context::default();
    context.deadline = u64::try_from(now.0).unwrap() + 120_000;
    let schedule = json!({"source": "knowledge.documents"});
    let answer = indexer.handle(LambdaEvent::new(schedule, context)).await;
    let made = d.take_checked(functions::INDEXER.name);
    assert_eq!(
        answer.unwrap(),
        json!({"queued": 1, "failed": 0, "deleted": 1, "indexed": 2}),
        "{made:?}"
    );

    for document in [&arrived, &lost] {
        let indexed = stored(&d, document).await.unwrap();
        assert_eq!(
            indexed.status,
            DocumentStatus::Indexed,
            "{:?}",
            indexed.reason
        );
        assert_eq!(indexed.passages, 1);
    }
    assert_eq!(stored(&d, &unsent).await, None);
    assert_eq!(
        stored(&d, &recent).await.unwrap().status,
        DocumentStatus::Uploading
    );
    let org = OrgId::parse(ORG).unwrap();
    let used = d.store.storage_used(&org).await.unwrap();
    assert_eq!(
        used,
        3 * FILE.len() as u64,
        "the unsent upload's bytes are released"
    );

    // A second sweep finds nothing left to do.
    let mut context = Context::default();
    context.deadline = u64::try_from(SystemClock.now().0).unwrap() + 120_000;
    let schedule = json!({"source": "knowledge.documents"});
    d.counter.take();
    let answer = indexer.handle(LambdaEvent::new(schedule, context)).await;
    assert_eq!(
        answer.unwrap(),
        json!({"queued": 0, "failed": 0, "deleted": 0, "indexed": 0})
    );
    // GSI2's uploads, then its queue: a query each.
    let made = d.take_checked(functions::INDEXER.name);
    assert_eq!(made, crate::support::requests(&[("Query", 2)]));
}
