//! Organisations take turns at the workers: one organisation's thousand queued files do not
//! hold back another's one. On the transient store, with originals in memory.

use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use knowledge_core::clock::{Clock, SystemClock};
use knowledge_core::documents::{DocumentLimits, DocumentStores, Documents, IndexOutcome};
use knowledge_core::domain::{
    Access, Actor, AuditAction, AuditEntry, Collection, CollectionSource, Document, DocumentStatus,
    Format, Org, Passage, Plan,
};
use knowledge_core::ids::{CollectionId, DocumentId, OrgId};
use knowledge_core::ports::{Originals, Parser, Store};
use knowledge_core::testing::{RecordingIndex, TransientOriginals, TransientStore};

/// Every file is one passage.
struct OnePassage;

#[async_trait]
impl Parser for OnePassage {
    async fn parse(&self, _: Format, bytes: Bytes) -> Result<Vec<Passage>, String> {
        let text = String::from_utf8_lossy(&bytes).into_owned();
        Ok(vec![Passage {
            headings: Vec::new(),
            page: None,
            text,
        }])
    }
}

/// `count` documents of a new organisation queued, the first `waited` ms ago and each a
/// millisecond later; their organisation.
async fn queued(
    store: &Arc<dyn Store>, originals: &TransientOriginals, count: usize, waited: i64,
) -> OrgId {
    let now = SystemClock.now();
    let org = Org::new(OrgId::generate(), "Org", Plan::Business, now);
    store.put_org(&org).await.unwrap();
    let audit = |action, target: &str| AuditEntry::new(&org.id, now, Actor::Admin, action, target);
    let collection = Collection {
        org: org.id.clone(),
        id: CollectionId::generate(),
        name: "C".into(),
        description: String::new(),
        access: Access::Everyone,
        source: CollectionSource::Upload,
        version: 1,
        created_at: now,
        updated_at: now,
    };
    let made = audit(AuditAction::CollectionCreated, collection.id.as_str());
    store.create_collection(&collection, &made).await.unwrap();
    for i in 0..count {
        let at = now.plus_millis(i as i64 - waited);
        let document = Document {
            org: org.id.clone(),
            collection: collection.id.clone(),
            id: DocumentId::generate(),
            name: format!("{i}.md"),
            format: Format::Markdown,
            bytes: 4,
            sha256: String::new(),
            status: DocumentStatus::Queued,
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
        let added = audit(AuditAction::DocumentAdded, document.id.as_str());
        store
            .create_document(&document, u64::MAX, &added)
            .await
            .unwrap();
        let bytes = Bytes::from_static(b"text");
        (originals.put(&org.id, &document.id, 1, bytes))
            .await
            .unwrap();
    }
    org.id
}

#[tokio::test]
async fn one_organisations_bulk_upload_does_not_hold_back_anothers_documents() {
    let store: Arc<dyn Store> = Arc::new(TransientStore::default());
    let originals = Arc::new(TransientOriginals::default());
    // `bulk` queued five files a minute ago; `one` and `two` a file each since.
    let bulk = queued(&store, &originals, 5, 60_000).await;
    let one = queued(&store, &originals, 1, 30_000).await;
    let two = queued(&store, &originals, 1, 10_000).await;
    let stores = DocumentStores {
        documents: store.clone(),
        groups: store.clone(),
        orgs: store.clone(),
    };
    let documents = Documents::new(
        stores,
        originals,
        Arc::new(RecordingIndex::default()),
        Arc::new(SystemClock),
        DocumentLimits::DEFAULT,
    );
    let workers = documents.workers(Arc::new(OnePassage));
    let mut served = Vec::new();
    while let Some(outcome) = workers.index_next().await.unwrap() {
        let IndexOutcome::Indexed(d) = outcome else {
            panic!("{outcome:?}");
        };
        served.push(d.org);
    }
    // Each organisation's first file before `bulk`'s second: they take turns, then `bulk`
    // alone has files left.
    let expected = [&bulk, &one, &two, &bulk, &bulk, &bulk, &bulk];
    assert_eq!(served, expected.map(Clone::clone));
}
