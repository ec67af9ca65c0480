//! [`DocumentStore`] in memory: collections, their documents, and each organisation's storage.

use async_trait::async_trait;

use super::{State, TransientStore};
use crate::clock::Timestamp;
use crate::domain::{AuditEntry, Collection, Document, DocumentStatus};
use crate::ids::{CollectionId, DocumentId, OrgId};
use crate::ports::{DocumentStore, StoreError, StoreResult};

impl State {
    /// Moves `org`'s storage by `delta` bytes, refusing to pass `allowance` when it grows.
    fn charge_storage(&mut self, org: &OrgId, delta: i128, allowance: u64) -> StoreResult<()> {
        let used = self.storage.get(org).copied().unwrap_or(0);
        let next = u64::try_from(i128::from(used) + delta).unwrap_or(0);
        if delta > 0 && next > allowance {
            return Err(StoreError::Full);
        }
        self.storage.insert(org.clone(), next);
        Ok(())
    }

    fn document(&self, org: &OrgId, c: &CollectionId, d: &DocumentId) -> Option<&Document> {
        let key = (c.clone(), d.clone());
        self.documents.get(org).and_then(|docs| docs.get(&key))
    }
}

#[async_trait]
impl DocumentStore for TransientStore {
    async fn create_collection(
        &self, collection: &Collection, audit: &AuditEntry,
    ) -> StoreResult<()> {
        let mut s = self.state();
        let collections = s.collections.entry(collection.org.clone()).or_default();
        if collections.contains_key(&collection.id) {
            return Err(StoreError::AlreadyExists);
        }
        collections.insert(collection.id.clone(), collection.clone());
        s.audit(audit);
        Ok(())
    }

    async fn get_collection(
        &self, org: &OrgId, id: &CollectionId,
    ) -> StoreResult<Option<Collection>> {
        let s = self.state();
        Ok(s.collections.get(org).and_then(|c| c.get(id)).cloned())
    }

    async fn list_collections(&self, org: &OrgId) -> StoreResult<Vec<Collection>> {
        let s = self.state();
        Ok(s.collections
            .get(org)
            .into_iter()
            .flat_map(|c| c.values().cloned())
            .collect())
    }

    async fn update_collection(
        &self, previous: &Collection, next: &Collection, audit: &AuditEntry,
    ) -> StoreResult<()> {
        let mut s = self.state();
        let collections = s.collections.entry(next.org.clone()).or_default();
        let stored = collections.get(&next.id).ok_or(StoreError::Gone)?;
        if stored.version != previous.version {
            return Err(StoreError::Conflict);
        }
        collections.insert(next.id.clone(), next.clone());
        s.audit(audit);
        Ok(())
    }

    async fn delete_collection(
        &self, org: &OrgId, id: &CollectionId, audit: &AuditEntry,
    ) -> StoreResult<Option<Vec<Document>>> {
        let mut s = self.state();
        let removed = s.collections.get_mut(org).and_then(|c| c.remove(id));
        if removed.is_none() {
            return Ok(None);
        }
        let docs = s.documents.entry(org.clone()).or_default();
        let keys: Vec<_> = docs.keys().filter(|(c, _)| c == id).cloned().collect();
        let gone: Vec<Document> = keys.iter().filter_map(|k| docs.remove(k)).collect();
        let bytes: u64 = gone.iter().map(|d| d.bytes).sum();
        s.charge_storage(org, -i128::from(bytes), u64::MAX)?;
        s.audit(audit);
        Ok(Some(gone))
    }

    async fn create_document(
        &self, document: &Document, allowance: u64, audit: &AuditEntry,
    ) -> StoreResult<()> {
        let mut s = self.state();
        let (org, c, d) = (&document.org, &document.collection, &document.id);
        if s.document(org, c, d).is_some() {
            return Err(StoreError::AlreadyExists);
        }
        if !(s.collections.get(org)).is_some_and(|cs| cs.contains_key(c)) {
            return Err(StoreError::Gone);
        }
        s.charge_storage(org, i128::from(document.bytes), allowance)?;
        let docs = s.documents.entry(org.clone()).or_default();
        docs.insert((c.clone(), d.clone()), document.clone());
        s.audit(audit);
        Ok(())
    }

    async fn update_document(
        &self, previous: &Document, next: &Document, allowance: u64, audit: Option<&AuditEntry>,
    ) -> StoreResult<()> {
        let mut s = self.state();
        let (org, c, d) = (&next.org, &next.collection, &next.id);
        let stored = s.document(org, c, d).ok_or(StoreError::Gone)?;
        if stored.version != previous.version {
            return Err(StoreError::Conflict);
        }
        let delta = i128::from(next.bytes) - i128::from(stored.bytes);
        s.charge_storage(org, delta, allowance)?;
        let docs = s.documents.entry(org.clone()).or_default();
        docs.insert((c.clone(), d.clone()), next.clone());
        if let Some(audit) = audit {
            s.audit(audit);
        }
        Ok(())
    }

    async fn get_document(
        &self, org: &OrgId, collection: &CollectionId, id: &DocumentId,
    ) -> StoreResult<Option<Document>> {
        Ok(self.state().document(org, collection, id).cloned())
    }

    async fn get_documents(
        &self, org: &OrgId, keys: &[(CollectionId, DocumentId)],
    ) -> StoreResult<Vec<Document>> {
        let s = self.state();
        Ok(keys
            .iter()
            .filter_map(|(c, d)| s.document(org, c, d).cloned())
            .collect())
    }

    async fn list_documents(
        &self, org: &OrgId, collection: &CollectionId,
    ) -> StoreResult<Vec<Document>> {
        let s = self.state();
        Ok(s.documents
            .get(org)
            .into_iter()
            .flat_map(|docs| docs.values())
            .filter(|d| d.collection == *collection)
            .cloned()
            .collect())
    }

    async fn delete_document(&self, previous: &Document, audit: &AuditEntry) -> StoreResult<bool> {
        let mut s = self.state();
        let (org, c, d) = (&previous.org, &previous.collection, &previous.id);
        let Some(stored) = s.document(org, c, d) else {
            return Ok(false);
        };
        if stored.version != previous.version {
            return Err(StoreError::Conflict);
        }
        let bytes = stored.bytes;
        s.charge_storage(org, -i128::from(bytes), u64::MAX)?;
        let docs = s.documents.entry(org.clone()).or_default();
        docs.remove(&(c.clone(), d.clone()));
        s.audit(audit);
        Ok(true)
    }

    async fn storage_used(&self, org: &OrgId) -> StoreResult<u64> {
        Ok(self.state().storage.get(org).copied().unwrap_or(0))
    }

    async fn claimable_documents(
        &self, now: Timestamp, limit: usize,
    ) -> StoreResult<Vec<Document>> {
        let s = self.state();
        let mut waiting: Vec<Document> = (s.documents.values())
            .flat_map(|docs| docs.values())
            .filter(|d| d.claimable(now))
            .cloned()
            .collect();
        waiting.sort_by_key(|d| d.updated_at);
        let mut orgs = std::collections::HashSet::new();
        waiting.retain(|d| orgs.insert(d.org.clone()));
        waiting.truncate(limit);
        Ok(waiting)
    }

    async fn queued_documents(&self, limit: usize) -> StoreResult<Vec<Document>> {
        let s = self.state();
        let mut queued: Vec<Document> = (s.documents.values())
            .flat_map(|docs| docs.values())
            .filter(|d| d.status == DocumentStatus::Queued)
            .cloned()
            .collect();
        queued.sort_by_key(|d| d.updated_at);
        queued.truncate(limit);
        Ok(queued)
    }

    async fn stale_uploads(&self, before: Timestamp, limit: usize) -> StoreResult<Vec<Document>> {
        let s = self.state();
        let mut stale: Vec<Document> = (s.documents.values())
            .flat_map(|docs| docs.values())
            .filter(|d| d.status == DocumentStatus::Uploading && d.updated_at < before)
            .cloned()
            .collect();
        stale.sort_by_key(|d| (d.updated_at, d.id.clone()));
        stale.truncate(limit);
        Ok(stale)
    }
}
