//! Originals that arrive in the originals' store by themselves (on AWS, the browser's
//! pre-signed PUT, told by the object's event) and the document a queue names indexed: the
//! contract of `Documents::arrived` and `Workers::index_document`, on the transient store with
//! originals and an index in memory.

use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use knowledge_core::admin::Admin;
use knowledge_core::clock::{Clock, SystemClock};
use knowledge_core::documents::{
    Arrival, DocumentLimits, DocumentStores, Documents, IndexAttempt, IndexOutcome, NewCollection,
    UploadIntent,
};
use knowledge_core::domain::{
    Access, Document, DocumentStatus, Format, INDEX_ATTEMPTS, Org, Passage, Plan,
};
use knowledge_core::ids::{CollectionId, OrgId};
use knowledge_core::ports::{Originals, Parser, Store};
use knowledge_core::testing::{RecordingIndex, TransientOriginals, TransientStore};
use sha2::{Digest, Sha256};

const ORG: &str = "org_0123456789abcdef0123456789abcdef";

/// A passage per line.
struct Lines;

#[async_trait]
impl Parser for Lines {
    async fn parse(&self, _: Format, bytes: Bytes) -> Result<Vec<Passage>, String> {
        let text = String::from_utf8(bytes.to_vec()).map_err(|e| e.to_string())?;
        Ok(text
            .lines()
            .map(|line| Passage {
                headings: Vec::new(),
                page: None,
                text: line.to_owned(),
            })
            .collect())
    }
}

struct Rig {
    store: Arc<dyn Store>,
    bucket: Arc<TransientOriginals>,
    index: Arc<RecordingIndex>,
    documents: Documents,
    admin: Admin,
    collection: CollectionId,
}

impl Rig {
    async fn new() -> Self {
        let store: Arc<dyn Store> = Arc::new(TransientStore::default());
        let org = OrgId::parse(ORG).unwrap();
        let now = SystemClock.now();
        store
            .put_org(&Org::new(org.clone(), "Acme", Plan::Business, now))
            .await
            .unwrap();
        let bucket = Arc::new(TransientOriginals::default());
        let index = Arc::new(RecordingIndex::default());
        let stores = DocumentStores {
            documents: store.clone(),
            groups: store.clone(),
            orgs: store.clone(),
        };
        let documents = Documents::new(
            stores,
            bucket.clone(),
            index.clone(),
            Arc::new(SystemClock),
            DocumentLimits::DEFAULT,
        );
        let admin = Admin::operator(org);
        let new = NewCollection {
            name: "Handbook".into(),
            description: String::new(),
            access: Access::Everyone,
        };
        let collection = documents.create_collection(&admin, new).await.unwrap().id;
        Self {
            store,
            bucket,
            index,
            documents,
            admin,
            collection,
        }
    }

    /// A document announced as `name` of `bytes` bytes.
    async fn announced(&self, name: &str, bytes: u64) -> Document {
        let intent = UploadIntent {
            name: name.into(),
            bytes,
        };
        (self.documents)
            .begin_upload(&self.admin, &self.collection, &intent)
            .await
            .unwrap()
    }

    /// The browser's upload, straight to the bucket.
    async fn sent(&self, document: &Document, bytes: &'static [u8]) {
        (self.bucket)
            .put(
                &document.org,
                &document.id,
                document.generation,
                Bytes::from_static(bytes),
            )
            .await
            .unwrap();
    }

    async fn arrived(&self, document: &Document) -> Arrival {
        (self.documents)
            .arrived(&document.org, &document.id, document.generation)
            .await
            .unwrap()
    }

    async fn index(&self, document: &Document) -> IndexAttempt {
        (self.documents.workers(Arc::new(Lines)))
            .index_document(&document.org, &self.collection, &document.id)
            .await
            .unwrap()
    }

    async fn stored(&self, document: &Document) -> Option<Document> {
        (self.store)
            .get_document(&document.org, &self.collection, &document.id)
            .await
            .unwrap()
    }
}

const TEXT: &[u8] = b"first line\nsecond line\n";

#[tokio::test]
async fn an_arrived_original_is_queued_with_its_digest_then_indexed_once() {
    let r = Rig::new().await;
    let document = r.announced("notes.txt", TEXT.len() as u64).await;
    // The service stores nothing itself here: the bucket takes the upload.
    assert_eq!(r.documents.upload_target(&document).await.unwrap(), None);
    assert_eq!(
        r.index(&document).await,
        IndexAttempt::Idle,
        "not queued yet"
    );
    r.sent(&document, TEXT).await;
    let Arrival::Queued(queued) = r.arrived(&document).await else {
        panic!("queued");
    };
    assert_eq!(queued.status, DocumentStatus::Queued);
    assert_eq!(queued.sha256, hex::encode(Sha256::digest(TEXT)));
    // The event delivered again finds it queued: still to index, never queued twice.
    assert_eq!(r.arrived(&document).await, Arrival::Queued(queued.clone()));
    let IndexAttempt::Done(done) = r.index(&document).await else {
        panic!("indexed");
    };
    let IndexOutcome::Indexed(indexed) = *done else {
        panic!("indexed");
    };
    assert_eq!((indexed.passages, indexed.attempts), (2, 1));
    assert_eq!(r.index.replaced().len(), 1);
    // Delivered once more: nothing left to do, nothing indexed again.
    assert_eq!(r.arrived(&document).await, Arrival::Stale);
    assert_eq!(r.index(&document).await, IndexAttempt::Idle);
    assert_eq!(r.index.replaced().len(), 1);
}

#[tokio::test]
async fn an_original_not_the_size_announced_or_not_what_its_name_says_ends_failed() {
    let r = Rig::new().await;
    let short = r.announced("notes.txt", 100).await;
    r.sent(&short, TEXT).await;
    let Arrival::Refused(failed) = r.arrived(&short).await else {
        panic!("refused");
    };
    assert_eq!(failed.status, DocumentStatus::Failed);
    assert!(failed.reason.unwrap().contains("not the 100 announced"));
    let pdf = r.announced("report.pdf", TEXT.len() as u64).await;
    r.sent(&pdf, TEXT).await;
    let Arrival::Refused(failed) = r.arrived(&pdf).await else {
        panic!("refused");
    };
    assert!(failed.reason.unwrap().contains("application/pdf"));
    assert_eq!(r.index(&pdf).await, IndexAttempt::Idle);
}

#[tokio::test]
async fn an_event_for_a_gone_or_replaced_document_changes_nothing_but_stray_originals() {
    let r = Rig::new().await;
    let document = r.announced("notes.txt", TEXT.len() as u64).await;
    r.sent(&document, TEXT).await;
    (r.documents)
        .delete_document(&r.admin, &r.collection, &document.id)
        .await
        .unwrap();
    // The upload landed after the deletion removed the originals: the event removes it.
    r.sent(&document, TEXT).await;
    assert_eq!(r.arrived(&document).await, Arrival::Stale);
    assert!(r.bucket.is_empty());
    // An older generation's event, late, leaves the newer announcement alone.
    let first = r.announced("notes.txt", TEXT.len() as u64).await;
    let intent = UploadIntent {
        name: "notes.txt".into(),
        bytes: 5,
    };
    let second = (r.documents)
        .begin_replace(&r.admin, &r.collection, &first.id, &intent)
        .await
        .unwrap();
    r.sent(&first, TEXT).await;
    assert_eq!(r.arrived(&first).await, Arrival::Stale);
    assert_eq!(
        r.stored(&second).await.unwrap().status,
        DocumentStatus::Uploading
    );
}

#[tokio::test]
async fn a_held_document_is_left_to_its_holder_and_a_failed_last_attempt_ends_it_failed() {
    let r = Rig::new().await;
    let document = r.announced("notes.txt", TEXT.len() as u64).await;
    r.sent(&document, TEXT).await;
    r.arrived(&document).await;
    r.index.fail(true);
    let workers = r.documents.workers(Arc::new(Lines));
    let (org, id) = (&document.org, &document.id);
    assert!(
        workers
            .index_document(org, &r.collection, id)
            .await
            .is_err()
    );
    // The failed attempt keeps its lease: a second delivery meanwhile is told to come back.
    let IndexAttempt::Held(until) = r.index(&document).await else {
        panic!("held");
    };
    assert!(until > SystemClock.now());
    for attempt in 2..=INDEX_ATTEMPTS {
        // The lease ran out (a worker that died), as the queue's next delivery finds it.
        let held = r.stored(&document).await.unwrap();
        let expired = Document {
            lease_until: Some(SystemClock.now().plus_millis(-1)),
            ..held.next(SystemClock.now())
        };
        r.store
            .update_document(&held, &expired, u64::MAX, None)
            .await
            .unwrap();
        let done = workers.index_document(org, &r.collection, id).await;
        if attempt < INDEX_ATTEMPTS {
            assert!(done.is_err(), "attempt {attempt}");
            continue;
        }
        let Ok(IndexAttempt::Done(done)) = done else {
            panic!("the last attempt ends it failed: {done:?}");
        };
        let IndexOutcome::Failed(failed) = *done else {
            panic!("failed: {done:?}");
        };
        assert_eq!(failed.attempts, INDEX_ATTEMPTS);
        assert!(failed.reason.unwrap().contains("failed 3 times"));
    }
    assert_eq!(
        r.stored(&document).await.unwrap().status,
        DocumentStatus::Failed
    );
}

#[tokio::test]
async fn where_the_store_takes_uploads_itself_the_service_takes_none() {
    let r = Rig::new().await;
    r.bucket.take_uploads();
    let document = r.announced("notes.txt", TEXT.len() as u64).await;
    let target = r.documents.upload_target(&document).await.unwrap().unwrap();
    assert!(target.url.ends_with(document.id.as_str()));
    let sent = (r.documents)
        .receive(
            &r.admin,
            &r.collection,
            &document.id,
            1,
            Bytes::from_static(TEXT),
        )
        .await;
    let Err(knowledge_core::CoreError::Conflict { code, .. }) = sent else {
        panic!("refused: {sent:?}");
    };
    assert_eq!(code, "upload_elsewhere");
    assert!(r.bucket.is_empty());
}
