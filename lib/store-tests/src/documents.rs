//! Cases of [`DocumentStore`]: collections written at their version, documents read alone, in
//! a batch and by collection, the organisation's storage never passing its allowance (also
//! under concurrent uploads), a collection's deletion taking its documents, the queue of
//! documents a worker may take, and the uploads the sweep finds.

use std::collections::BTreeSet;
use std::sync::Arc;

use knowledge_core::domain::{
    Access, AuditAction, Collection, CollectionSource, Document, DocumentStatus, Format,
};
use knowledge_core::ids::{CollectionId, DocumentId, GroupId, OrgId};
use knowledge_core::ports::StoreError;

use crate::{NOW, Tested, audit, business_org};

/// Bytes every case's organisation may store.
const ALLOWANCE: u64 = 1_000;

async fn collection(store: &dyn Tested, org: &OrgId, name: &str) -> Collection {
    let c = Collection {
        org: org.clone(),
        id: CollectionId::generate(),
        name: name.into(),
        description: format!("{name}'s documents"),
        access: Access::Everyone,
        source: CollectionSource::Upload,
        version: 1,
        created_at: NOW,
        updated_at: NOW,
    };
    let created = audit(org, AuditAction::CollectionCreated, c.id.as_str());
    store.create_collection(&c, &created).await.unwrap();
    c
}

fn document(c: &Collection, name: &str, bytes: u64) -> Document {
    Document {
        org: c.org.clone(),
        collection: c.id.clone(),
        id: DocumentId::generate(),
        name: name.into(),
        format: Format::Markdown,
        bytes,
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
    }
}

async fn upload(store: &dyn Tested, c: &Collection, name: &str, bytes: u64) -> Document {
    let d = document(c, name, bytes);
    let added = audit(&c.org, AuditAction::DocumentAdded, d.id.as_str());
    store.create_document(&d, ALLOWANCE, &added).await.unwrap();
    d
}

async fn actions(store: &dyn Tested, org: &OrgId) -> Vec<AuditAction> {
    let entries = store.list_audit(org, None, 100).await.unwrap();
    entries.iter().rev().map(|e| e.action).collect()
}

pub async fn collections_read_back_within_their_organisation_and_change_only_at_their_version(
    store: Arc<dyn Tested>,
) {
    let (org, other) = (business_org(&*store).await, business_org(&*store).await);
    let handbook = collection(&*store, &org.id, "Handbook").await;
    let policies = collection(&*store, &org.id, "Policies").await;
    let theirs = collection(&*store, &other.id, "Theirs").await;
    assert_eq!(
        store.get_collection(&org.id, &handbook.id).await.unwrap(),
        Some(handbook.clone())
    );
    assert_eq!(
        store.get_collection(&other.id, &handbook.id).await.unwrap(),
        None
    );
    let mut listed: Vec<_> = store.list_collections(&org.id).await.unwrap();
    listed.sort_by(|a, b| a.name.cmp(&b.name));
    assert_eq!(listed, vec![handbook.clone(), policies]);
    assert_eq!(
        store.list_collections(&other.id).await.unwrap(),
        vec![theirs]
    );

    let group = GroupId::generate();
    let next = Collection {
        name: "People handbook".into(),
        access: Access::Groups(BTreeSet::from([group])),
        version: 2,
        ..handbook.clone()
    };
    let changed = audit(
        &org.id,
        AuditAction::CollectionChanged,
        handbook.id.as_str(),
    );
    store
        .update_collection(&handbook, &next, &changed)
        .await
        .unwrap();
    assert_eq!(
        store.get_collection(&org.id, &handbook.id).await.unwrap(),
        Some(next.clone())
    );
    let stale = Collection {
        name: "Lost".into(),
        version: 2,
        ..handbook.clone()
    };
    let refused = store.update_collection(&handbook, &stale, &changed).await;
    assert!(matches!(refused, Err(StoreError::Conflict)), "{refused:?}");
    assert_eq!(
        store.get_collection(&org.id, &handbook.id).await.unwrap(),
        Some(next)
    );
    let taken = store.create_collection(&handbook, &changed).await;
    assert!(matches!(taken, Err(StoreError::AlreadyExists)), "{taken:?}");
    assert_eq!(
        actions(&*store, &org.id).await,
        [
            AuditAction::CollectionCreated,
            AuditAction::CollectionCreated,
            AuditAction::CollectionChanged
        ]
    );
}

pub async fn a_document_reads_back_alone_in_a_batch_and_in_its_collection_and_nowhere_else(
    store: Arc<dyn Tested>,
) {
    let (org, other) = (business_org(&*store).await, business_org(&*store).await);
    let (a, b) = (
        collection(&*store, &org.id, "A").await,
        collection(&*store, &org.id, "B").await,
    );
    let one = upload(&*store, &a, "one.md", 10).await;
    let two = upload(&*store, &a, "two.md", 20).await;
    let three = upload(&*store, &b, "three.md", 30).await;
    assert_eq!(
        store.get_document(&org.id, &a.id, &one.id).await.unwrap(),
        Some(one.clone())
    );
    assert_eq!(
        store.get_document(&org.id, &b.id, &one.id).await.unwrap(),
        None
    );
    assert_eq!(
        store.get_document(&other.id, &a.id, &one.id).await.unwrap(),
        None
    );

    let mut in_a = store.list_documents(&org.id, &a.id).await.unwrap();
    in_a.sort_by(|x, y| x.name.cmp(&y.name));
    assert_eq!(in_a, vec![one.clone(), two.clone()]);

    let keys = [
        (a.id.clone(), one.id.clone()),
        (b.id.clone(), three.id.clone()),
        (a.id.clone(), DocumentId::generate()),
        (b.id.clone(), two.id.clone()),
    ];
    let mut batch = store.get_documents(&org.id, &keys).await.unwrap();
    batch.sort_by(|x, y| x.name.cmp(&y.name));
    assert_eq!(batch, vec![one, three]);
    assert!(
        store
            .get_documents(&other.id, &keys)
            .await
            .unwrap()
            .is_empty()
    );
}

pub async fn documents_charge_the_organisations_storage_which_never_passes_its_allowance(
    store: Arc<dyn Tested>,
) {
    let org = business_org(&*store).await;
    let c = collection(&*store, &org.id, "C").await;
    let big = upload(&*store, &c, "big.pdf", 600).await;
    assert_eq!(store.storage_used(&org.id).await.unwrap(), 600);

    let over = document(&c, "over.pdf", 401);
    let added = audit(&org.id, AuditAction::DocumentAdded, over.id.as_str());
    let refused = store.create_document(&over, ALLOWANCE, &added).await;
    assert!(matches!(refused, Err(StoreError::Full)), "{refused:?}");
    assert_eq!(
        store.get_document(&org.id, &c.id, &over.id).await.unwrap(),
        None
    );

    let small = upload(&*store, &c, "small.md", 400).await;
    assert_eq!(store.storage_used(&org.id).await.unwrap(), ALLOWANCE);

    let grown = Document {
        bytes: 601,
        generation: 2,
        ..big.next(NOW)
    };
    let replaced = audit(&org.id, AuditAction::DocumentReplaced, big.id.as_str());
    let refused = (store.update_document(&big, &grown, ALLOWANCE, Some(&replaced))).await;
    assert!(matches!(refused, Err(StoreError::Full)), "{refused:?}");
    let shrunk = Document {
        bytes: 100,
        ..grown
    };
    (store.update_document(&big, &shrunk, ALLOWANCE, Some(&replaced)))
        .await
        .unwrap();
    assert_eq!(store.storage_used(&org.id).await.unwrap(), 500);

    let deleted = audit(&org.id, AuditAction::DocumentDeleted, small.id.as_str());
    assert!(store.delete_document(&small, &deleted).await.unwrap());
    assert!(!store.delete_document(&small, &deleted).await.unwrap());
    assert_eq!(store.storage_used(&org.id).await.unwrap(), 100);
    assert_eq!(
        actions(&*store, &org.id).await,
        [
            AuditAction::CollectionCreated,
            AuditAction::DocumentAdded,
            AuditAction::DocumentAdded,
            AuditAction::DocumentReplaced,
            AuditAction::DocumentDeleted
        ]
    );
}

pub async fn concurrent_uploads_never_pass_the_allowance_together(store: Arc<dyn Tested>) {
    let org = business_org(&*store).await;
    let c = collection(&*store, &org.id, "C").await;
    let tasks: Vec<_> = (0..8)
        .map(|i| {
            let (store, d) = (store.clone(), document(&c, &format!("{i}.md"), 300));
            tokio::spawn(async move {
                let added = audit(&d.org, AuditAction::DocumentAdded, d.id.as_str());
                store.create_document(&d, ALLOWANCE, &added).await
            })
        })
        .collect();
    let mut landed = 0;
    for t in tasks {
        match t.await.unwrap() {
            Ok(()) => landed += 1,
            Err(StoreError::Full | StoreError::Conflict) => {}
            Err(e) => panic!("unexpected {e}"),
        }
    }
    assert!((1..=3).contains(&landed), "{landed} landed");
    let stored = store.list_documents(&org.id, &c.id).await.unwrap();
    assert_eq!(stored.len(), landed);
    assert_eq!(
        store.storage_used(&org.id).await.unwrap(),
        300 * landed as u64
    );
}

pub async fn a_document_changes_only_at_its_version_and_only_in_a_collection_that_exists(
    store: Arc<dyn Tested>,
) {
    let org = business_org(&*store).await;
    let c = collection(&*store, &org.id, "C").await;
    let d = upload(&*store, &c, "d.md", 10).await;
    let leased = Document {
        lease_until: Some(NOW.plus_millis(60_000)),
        attempts: 1,
        ..d.next(NOW)
    };
    store
        .update_document(&d, &leased, ALLOWANCE, None)
        .await
        .unwrap();
    let late = Document {
        lease_until: Some(NOW.plus_millis(90_000)),
        ..d.next(NOW)
    };
    let refused = store.update_document(&d, &late, ALLOWANCE, None).await;
    assert!(matches!(refused, Err(StoreError::Conflict)), "{refused:?}");
    let deleted = audit(&org.id, AuditAction::DocumentDeleted, d.id.as_str());
    let refused = store.delete_document(&d, &deleted).await;
    assert!(matches!(refused, Err(StoreError::Conflict)), "{refused:?}");
    assert_eq!(
        store.get_document(&org.id, &c.id, &d.id).await.unwrap(),
        Some(leased)
    );

    let nowhere = Collection {
        id: CollectionId::generate(),
        ..c.clone()
    };
    let orphan = document(&nowhere, "orphan.md", 10);
    let added = audit(&org.id, AuditAction::DocumentAdded, orphan.id.as_str());
    let refused = store.create_document(&orphan, ALLOWANCE, &added).await;
    assert!(matches!(refused, Err(StoreError::Gone)), "{refused:?}");
    let missing = document(&c, "missing.md", 10);
    let refused = (store.update_document(&missing, &missing.next(NOW), ALLOWANCE, None)).await;
    assert!(matches!(refused, Err(StoreError::Gone)), "{refused:?}");
    assert_eq!(store.storage_used(&org.id).await.unwrap(), 10);
}

pub async fn deleting_a_collection_takes_every_document_of_it_and_their_bytes_and_nothing_else(
    store: Arc<dyn Tested>,
) {
    let org = business_org(&*store).await;
    let (gone, kept) = (
        collection(&*store, &org.id, "Gone").await,
        collection(&*store, &org.id, "Kept").await,
    );
    let mut doomed = Vec::new();
    for i in 0..30 {
        doomed.push(upload(&*store, &gone, &format!("{i}.md"), 3).await.id);
    }
    let survivor = upload(&*store, &kept, "kept.md", 7).await;
    let deleted = audit(&org.id, AuditAction::CollectionDeleted, gone.id.as_str());
    let taken = store
        .delete_collection(&org.id, &gone.id, &deleted)
        .await
        .unwrap()
        .expect("it existed");
    let mut taken: Vec<_> = taken.into_iter().map(|d| d.id).collect();
    taken.sort();
    doomed.sort();
    assert_eq!(taken, doomed);
    assert_eq!(store.get_collection(&org.id, &gone.id).await.unwrap(), None);
    assert!(
        store
            .list_documents(&org.id, &gone.id)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(store.storage_used(&org.id).await.unwrap(), 7);
    assert_eq!(
        store.list_documents(&org.id, &kept.id).await.unwrap(),
        vec![survivor]
    );
    let again = store.delete_collection(&org.id, &gone.id, &deleted).await;
    assert!(matches!(again, Ok(None)), "{again:?}");
}

pub async fn a_worker_finds_each_organisations_longest_waiting_document_without_a_live_lease(
    store: Arc<dyn Tested>,
) {
    let (org, other) = (business_org(&*store).await, business_org(&*store).await);
    let (c, theirs) = (
        collection(&*store, &org.id, "C").await,
        collection(&*store, &other.id, "Theirs").await,
    );
    let at = |ms: i64| NOW.plus_millis(ms);
    let mut waiting = Vec::new();
    for (i, (col, ms)) in [(&c, 3), (&theirs, 1), (&c, 2)].into_iter().enumerate() {
        let d = Document {
            updated_at: at(ms),
            ..document(col, &format!("{i}.md"), 1)
        };
        let added = audit(&col.org, AuditAction::DocumentAdded, d.id.as_str());
        store.create_document(&d, ALLOWANCE, &added).await.unwrap();
        waiting.push(d);
    }
    let leased = Document {
        lease_until: Some(at(60_000)),
        ..waiting[2].next(at(2))
    };
    store
        .update_document(&waiting[2], &leased, ALLOWANCE, None)
        .await
        .unwrap();
    let indexed = Document {
        status: DocumentStatus::Indexed,
        ..upload(&*store, &c, "done.md", 1).await
    };
    let stored = store
        .get_document(&org.id, &c.id, &indexed.id)
        .await
        .unwrap()
        .unwrap();
    let indexed = Document {
        version: stored.version + 1,
        ..indexed
    };
    store
        .update_document(&stored, &indexed, ALLOWANCE, None)
        .await
        .unwrap();

    let ids = |docs: Vec<Document>| docs.into_iter().map(|d| d.id).collect::<Vec<_>>();
    let found = store.claimable_documents(at(10), 10).await.unwrap();
    let found: Vec<_> = ids(found)
        .into_iter()
        .filter(|id| waiting.iter().any(|w| w.id == *id))
        .collect();
    assert_eq!(found, vec![waiting[1].id.clone(), waiting[0].id.clone()]);
    let later = store.claimable_documents(at(60_000), 10).await.unwrap();
    let later: Vec<_> = ids(later)
        .into_iter()
        .filter(|id| waiting.iter().any(|w| w.id == *id))
        .collect();
    // The lease gone, the head of `c`'s queue is the one that waited longer; the other waits
    // behind it.
    assert_eq!(later, vec![waiting[1].id.clone(), waiting[2].id.clone()]);
    // Every queued document, the leased one too, the longest waiting first.
    let queued: Vec<_> = ids(store.queued_documents(1_000).await.unwrap())
        .into_iter()
        .filter(|id| waiting.iter().any(|w| w.id == *id))
        .collect();
    let by_age = [&waiting[1], &waiting[2], &waiting[0]].map(|w| w.id.clone());
    assert_eq!(queued, by_age);
    assert_eq!(
        store
            .claimable_documents(at(60_000), 1)
            .await
            .unwrap()
            .len(),
        1
    );
}

pub async fn the_sweep_finds_uploads_announced_before_a_time_the_oldest_first_until_they_move_on(
    store: Arc<dyn Tested>,
) {
    let (org, other) = (business_org(&*store).await, business_org(&*store).await);
    let (c, theirs) = (
        collection(&*store, &org.id, "C").await,
        collection(&*store, &other.id, "Theirs").await,
    );
    let at = |ms: i64| NOW.plus_millis(ms);
    let mut uploading = Vec::new();
    for (i, (col, ms)) in [(&c, 3), (&theirs, 1), (&c, 2), (&c, 50)]
        .into_iter()
        .enumerate()
    {
        let d = Document {
            status: DocumentStatus::Uploading,
            updated_at: at(ms),
            ..document(col, &format!("{i}.md"), 1)
        };
        let added = audit(&col.org, AuditAction::DocumentAdded, d.id.as_str());
        store.create_document(&d, ALLOWANCE, &added).await.unwrap();
        uploading.push(d);
    }
    let never_uploading = upload(&*store, &c, "queued.md", 1).await;
    let ours = |docs: Vec<Document>| -> Vec<DocumentId> {
        (docs.into_iter())
            .filter(|d| uploading.iter().any(|u| u.id == d.id) || d.id == never_uploading.id)
            .map(|d| d.id)
            .collect()
    };
    let stale = store.stale_uploads(at(10), 10).await.unwrap();
    assert!(stale.iter().all(|d| d.status == DocumentStatus::Uploading));
    let found = stale.iter().find(|d| d.id == uploading[0].id);
    assert_eq!(found, Some(&uploading[0]), "read back whole");
    assert_eq!(
        ours(stale),
        [&uploading[1], &uploading[2], &uploading[0]].map(|d| d.id.clone())
    );
    assert_eq!(
        ours(store.stale_uploads(at(2), 10).await.unwrap()),
        [uploading[1].id.clone()],
        "only those announced strictly before"
    );
    assert_eq!(store.stale_uploads(at(10), 1).await.unwrap().len(), 1);

    let queued = Document {
        status: DocumentStatus::Queued,
        ..uploading[1].next(at(4))
    };
    let replaced = Document {
        generation: 2,
        ..uploading[3].next(at(5))
    };
    for (previous, next) in [(&uploading[1], &queued), (&uploading[3], &replaced)] {
        let moved = store.update_document(previous, next, ALLOWANCE, None).await;
        moved.unwrap();
    }
    let deleted = audit(&org.id, AuditAction::DocumentDeleted, "0.md");
    let gone = store.delete_document(&uploading[0], &deleted).await;
    assert!(gone.unwrap());
    assert_eq!(
        ours(store.stale_uploads(at(10), 10).await.unwrap()),
        [uploading[2].id.clone(), uploading[3].id.clone()],
        "queued and deleted ones leave; a generation announced again sorts by its announcement"
    );
}
