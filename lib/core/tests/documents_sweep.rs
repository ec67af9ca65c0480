//! What a crash leaves of the documents, settled: `Documents::sweep` on uploads left
//! `uploading` (queued when their original is stored, deleted when it never came, failed when
//! it is not the file announced, and left alone within the hour), and
//! `Documents::release_leases` on a dead process's leases; on the transient store with
//! originals in memory and a clock the tests move.

use std::sync::Arc;

use bytes::Bytes;
use knowledge_core::admin::Admin;
use knowledge_core::clock::{Clock, SystemClock};
use knowledge_core::documents::{
    DocumentLimits, DocumentStores, Documents, NewCollection, SweptUploads, UPLOAD_STALE_MS,
    UploadIntent,
};
use knowledge_core::domain::{Access, Actor, AuditAction, Document, DocumentStatus, Org, Plan};
use knowledge_core::ids::{CollectionId, OrgId};
use knowledge_core::ports::{Originals, Store};
use knowledge_core::testing::{RecordingIndex, ShiftedClock, TransientOriginals, TransientStore};
use sha2::{Digest, Sha256};

const ORG: &str = "org_0123456789abcdef0123456789abcdef";
const TEXT: &[u8] = b"The per diem for Lisbon is forty euros a day.";

struct Rig {
    store: Arc<dyn Store>,
    held: Arc<TransientOriginals>,
    index: Arc<RecordingIndex>,
    clock: Arc<ShiftedClock>,
    documents: Documents,
    admin: Admin,
    collection: CollectionId,
}

impl Rig {
    async fn new() -> Self {
        let store: Arc<dyn Store> = Arc::new(TransientStore::default());
        let org = OrgId::parse(ORG).unwrap();
        let org_record = Org::new(org.clone(), "Acme", Plan::Business, SystemClock.now());
        store.put_org(&org_record).await.unwrap();
        let (held, index) = (
            Arc::new(TransientOriginals::default()),
            Arc::new(RecordingIndex::default()),
        );
        let clock = Arc::new(ShiftedClock::default());
        let stores = DocumentStores {
            documents: store.clone(),
            groups: store.clone(),
            orgs: store.clone(),
        };
        let documents = Documents::new(
            stores,
            held.clone(),
            index.clone(),
            clock.clone(),
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
            held,
            index,
            clock,
            documents,
            admin,
            collection,
        }
    }

    async fn announced(&self, name: &str, bytes: usize) -> Document {
        let intent = UploadIntent {
            name: name.into(),
            bytes: bytes as u64,
        };
        (self.documents)
            .begin_upload(&self.admin, &self.collection, &intent)
            .await
            .unwrap()
    }

    /// The original of `d`'s generation stored, as `receive` stores it before it queues.
    async fn stored(&self, d: &Document, bytes: &'static [u8]) {
        let bytes = Bytes::from_static(bytes);
        (self.held.put(&d.org, &d.id, d.generation, bytes))
            .await
            .unwrap();
    }

    async fn current(&self, d: &Document) -> Option<Document> {
        (self.store)
            .get_document(&d.org, &d.collection, &d.id)
            .await
            .unwrap()
    }

    async fn sweep(&self) -> SweptUploads {
        self.documents.sweep(self.clock.now()).await.unwrap()
    }
}

#[tokio::test]
async fn an_hour_on_the_sweep_queues_a_stored_upload_deletes_an_unsent_one_and_fails_a_wrong_one() {
    let rig = Rig::new().await;
    let kept = rig.announced("kept.md", TEXT.len()).await;
    rig.stored(&kept, TEXT).await;
    let unsent = rig.announced("unsent.md", 40).await;
    let wrong = rig.announced("wrong.md", TEXT.len() + 1).await;
    rig.stored(&wrong, TEXT).await;
    let org = kept.org.clone();
    let used = (2 * TEXT.len() + 41) as u64;
    assert_eq!(rig.store.storage_used(&org).await.unwrap(), used);

    assert_eq!(
        rig.sweep().await,
        SweptUploads::default(),
        "within the hour"
    );
    assert_eq!(
        rig.current(&kept).await.unwrap().status,
        DocumentStatus::Uploading
    );

    rig.clock.advance(UPLOAD_STALE_MS + 1_000);
    let swept = rig.sweep().await;
    assert_eq!(
        swept,
        SweptUploads {
            queued: 1,
            failed: 1,
            deleted: 1
        }
    );
    let queued = rig.current(&kept).await.unwrap();
    assert_eq!(queued.status, DocumentStatus::Queued);
    assert_eq!(queued.sha256, hex::encode(Sha256::digest(TEXT)));
    assert!(queued.claimable(rig.clock.now()), "a worker takes it next");

    assert_eq!(rig.current(&unsent).await, None);
    let removed = rig.index.removed();
    assert_eq!(removed, std::slice::from_ref(&unsent.id));
    let failed = rig.current(&wrong).await.unwrap();
    assert_eq!(failed.status, DocumentStatus::Failed);
    assert!(failed.reason.unwrap().contains("upload it again"));
    let used = (2 * TEXT.len() + 1) as u64;
    assert_eq!(rig.store.storage_used(&org).await.unwrap(), used);

    let audit = rig.store.list_audit(&org, None, 10).await.unwrap();
    let deleted = (audit.iter())
        .find(|e| e.action == AuditAction::DocumentDeleted)
        .expect("the deletion is audited");
    assert_eq!(deleted.target, unsent.id.as_str());
    assert_eq!((deleted.actor, deleted.by.clone()), (Actor::Admin, None));

    assert_eq!(rig.sweep().await, SweptUploads::default(), "settled once");
}

#[tokio::test]
async fn a_replacement_whose_file_never_came_takes_the_document_and_its_originals() {
    let rig = Rig::new().await;
    let first = rig.announced("travel.md", TEXT.len()).await;
    let bytes = Bytes::from_static(TEXT);
    let queued = (rig.documents)
        .receive(&rig.admin, &rig.collection, &first.id, 1, bytes)
        .await
        .unwrap();
    assert_eq!(queued.status, DocumentStatus::Queued);
    let intent = UploadIntent {
        name: "travel.md".into(),
        bytes: 99,
    };
    let replacing = (rig.documents)
        .begin_replace(&rig.admin, &rig.collection, &first.id, &intent)
        .await
        .unwrap();
    assert_eq!(replacing.generation, 2);
    assert_eq!(rig.held.generations(&first.id), [1]);

    rig.clock.advance(UPLOAD_STALE_MS + 1_000);
    assert_eq!(rig.sweep().await.deleted, 1);
    assert_eq!(rig.current(&first).await, None);
    assert!(rig.held.generations(&first.id).is_empty());
    assert_eq!(rig.store.storage_used(&first.org).await.unwrap(), 0);
}

#[tokio::test]
async fn a_dead_processs_leases_are_released_with_their_attempts_counted() {
    let rig = Rig::new().await;
    let now = rig.clock.now();
    let mut leased = Vec::new();
    for name in ["a.md", "b.md"] {
        let d = rig.announced(name, TEXT.len()).await;
        let bytes = Bytes::from_static(TEXT);
        let queued = (rig.documents)
            .receive(&rig.admin, &rig.collection, &d.id, 1, bytes)
            .await
            .unwrap();
        leased.push(queued);
    }
    let taken = Document {
        lease_until: Some(now.plus_millis(300_000)),
        attempts: 1,
        ..leased[0].next(now)
    };
    (rig.store
        .update_document(&leased[0], &taken, u64::MAX, None))
    .await
    .unwrap();
    assert!(!rig.current(&taken).await.unwrap().claimable(now));

    assert_eq!(rig.documents.release_leases().await.unwrap(), 1);
    let released = rig.current(&taken).await.unwrap();
    assert!(released.claimable(rig.clock.now()), "{released:?}");
    assert_eq!(released.attempts, 1, "the killed attempt still counts");
    assert_eq!(released.status, DocumentStatus::Queued);
    assert_eq!(rig.current(&leased[1]).await, Some(leased[1].clone()));
    assert_eq!(rig.documents.release_leases().await.unwrap(), 0);
}
