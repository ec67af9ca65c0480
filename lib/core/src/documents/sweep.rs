//! What a crash leaves of the documents, settled. An upload is announced (`uploading`), then its
//! original stored, then the document queued: a process that dies between the last two, or a
//! browser that never sends the file, leaves a document `uploading` for good. The sweep
//! ([`Documents::sweep`]) settles those announced more than [`UPLOAD_STALE_MS`] ago: one whose
//! original is stored is queued (the worker then indexes it), one whose original is not is
//! deleted and its bytes released. And a worker killed mid-index leaves its lease for
//! [`super::indexing`]'s five minutes; a process that knows it is the only one on its store
//! releases them all at its start ([`Documents::release_leases`]).

use sha2::{Digest, Sha256};

use crate::CoreError;
use crate::admin::Admin;
use crate::clock::Timestamp;
use crate::domain::{AuditAction, Document, DocumentStatus, Format};
use crate::error::Chain;
use crate::ports::StoreError;

use super::Documents;

/// How long a document may stay `uploading` before the sweep settles it: an upload over a slow
/// line takes minutes, never an hour.
pub const UPLOAD_STALE_MS: i64 = 60 * 60_000;

/// How many uploads one sweep settles at most; the next sweep takes the rest.
pub const UPLOAD_SWEEP_BATCH: usize = 100;

/// What one sweep of the uploads did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SweptUploads {
    /// Documents whose original was stored, now queued for indexing.
    pub queued: usize,
    /// Documents whose original was stored but is not the file announced, now `failed`.
    pub failed: usize,
    /// Documents whose original never came, deleted with their bytes released.
    pub deleted: usize,
}

/// What became of one upload.
enum Settled {
    Queued,
    Failed,
    Deleted,
    /// It moved on meanwhile (its original arrived, an admin deleted or replaced it).
    Skipped,
}

impl Documents {
    /// Settles the documents of every organisation `uploading` since before `now` less
    /// [`UPLOAD_STALE_MS`] (at most [`UPLOAD_SWEEP_BATCH`]). One whose original of that
    /// generation is stored is queued with the original's SHA-256, as the end of
    /// [`Self::receive`] would have (unless the original is not the size announced or not what
    /// its name says: then it ends `failed` with why). One whose original is not stored is
    /// deleted as an admin's delete is, its bytes released, its passages and originals removed
    /// (a replacement never sent takes the document with it: its former passages stopped being
    /// found at the announcement), with a `document.deleted` entry by the operator, as the
    /// service's own changes are audited (a synced folder's). Every write is conditional on the
    /// document's version, so an original arriving meanwhile, or an admin's change, wins. A
    /// document that cannot be settled is logged and left to the next sweep. Errors: the
    /// store's index could not be read.
    pub async fn sweep(&self, now: Timestamp) -> Result<SweptUploads, CoreError> {
        let before = now.plus_millis(-UPLOAD_STALE_MS);
        let stale = (self.stores.documents)
            .stale_uploads(before, UPLOAD_SWEEP_BATCH)
            .await?;
        let mut swept = SweptUploads::default();
        for uploading in stale {
            let id = uploading.id.clone();
            match self.settle_upload(uploading).await {
                Ok(Settled::Queued) => swept.queued += 1,
                Ok(Settled::Failed) => swept.failed += 1,
                Ok(Settled::Deleted) => swept.deleted += 1,
                Ok(Settled::Skipped) => {}
                Err(e) => {
                    tracing::error!(error = %Chain(&e), document = %id, "could not settle an upload cut short");
                }
            }
        }
        if swept != SweptUploads::default() {
            tracing::info!(?swept, "swept uploads cut short");
        }
        Ok(swept)
    }

    async fn settle_upload(&self, uploading: Document) -> Result<Settled, CoreError> {
        let d = &uploading;
        let original = (self.originals)
            .get(&d.org, &d.id, d.generation)
            .await
            .map_err(CoreError::internal)?;
        let Some(original) = original else {
            return self.delete_unsent(uploading).await;
        };
        let refusal = if original.len() as u64 != d.bytes {
            Some(format!(
                "the file stored has {} bytes, not the {} announced: upload it again",
                original.len(),
                d.bytes
            ))
        } else {
            let head = &original[..original.len().min(4096)];
            (Format::detect(&d.name, head).err()).map(|e| e.to_string())
        };
        if let Some(reason) = refusal {
            let failed = Document {
                status: DocumentStatus::Failed,
                reason: Some(reason),
                ..d.next(self.clock.now())
            };
            return match (self.stores.documents)
                .update_document(d, &failed, u64::MAX, None)
                .await
            {
                Ok(()) => Ok(Settled::Failed),
                Err(StoreError::Conflict | StoreError::Gone) => Ok(Settled::Skipped),
                Err(e) => Err(e.into()),
            };
        }
        let sha256 = hex::encode(Sha256::digest(&original));
        match self.stored(uploading, sha256).await {
            Ok(_) => Ok(Settled::Queued),
            Err(CoreError::NotFound(_) | CoreError::Conflict { .. }) => Ok(Settled::Skipped),
            Err(e) => Err(e),
        }
    }

    /// Deletes `uploading`, whose original never came, unless it moved meanwhile.
    async fn delete_unsent(&self, uploading: Document) -> Result<Settled, CoreError> {
        let d = &uploading;
        let audit = Admin::operator(d.org.clone())
            .audit(
                self.clock.now(),
                AuditAction::DocumentDeleted,
                d.id.as_str(),
            )
            .target_named(Some(&d.name));
        match self.stores.documents.delete_document(d, &audit).await {
            Ok(true) => {}
            Ok(false) | Err(StoreError::Conflict) => return Ok(Settled::Skipped),
            Err(e) => return Err(e.into()),
        }
        if let Err(e) = self.index.remove(&d.org, &d.id).await {
            tracing::error!(error = ?e, document = %d.id, "a deleted document's passages stay until the sweep");
        }
        if let Err(e) = self.originals.delete(&d.org, &d.id).await {
            tracing::error!(error = ?e, document = %d.id, "an original no document names stays until the sweep");
        }
        Ok(Settled::Deleted)
    }

    /// Releases the lease of every queued document, keeping the attempts counted (so that a
    /// file that kills the process each time still ends `failed`): the workers may take them at
    /// once. Only for a process that is the only one on its store (the local service on its
    /// embedded store) and calls it before its workers start: every lease is then a dead
    /// process's. Reads every queued document, leased or not. Answers how many it released. Errors: the store failed.
    pub async fn release_leases(&self) -> Result<usize, CoreError> {
        let store = &self.stores.documents;
        let now = self.clock.now();
        let every = store.queued_documents(usize::MAX).await?;
        let mut released = 0;
        for leased in every
            .iter()
            .filter(|d| d.lease_until.is_some_and(|t| t > now))
        {
            let free = Document {
                lease_until: None,
                ..leased.next(now)
            };
            match store.update_document(leased, &free, u64::MAX, None).await {
                Ok(()) => released += 1,
                Err(StoreError::Conflict | StoreError::Gone) => {}
                Err(e) => return Err(e.into()),
            }
        }
        if released > 0 {
            self.queued.notify_waiters();
        }
        Ok(released)
    }
}
