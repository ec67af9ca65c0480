//! An admin's documents: list, upload, replace and delete. An upload is announced first (the
//! document recorded `uploading`, its bytes counted), then its original is stored, then the
//! document is queued: a crash between any two leaves a document `uploading`, which the sweep
//! queues when its original is stored and deletes when it is not. Where the originals' store
//! takes uploads itself (S3, pre-signed), the service stores nothing: the store's event says
//! the original arrived ([`Documents::arrived`]).

use bytes::Bytes;
use sha2::{Digest, Sha256};

use crate::CoreError;
use crate::admin::Admin;
use crate::domain::{
    AuditAction, Collection, CollectionSource, Document, DocumentStatus, Format, FormatRefusal,
};
use crate::ids::{CollectionId, DocumentId, OrgId};
use crate::ports::{StoreError, UploadTarget};

use super::Documents;
use super::collections::checked_name;

/// A file an admin is about to send: its name and size.
#[derive(Debug, Clone)]
pub struct UploadIntent {
    pub name: String,
    pub bytes: u64,
}

/// A file as an admin sends it.
#[derive(Debug, Clone)]
pub struct Upload {
    /// Its name; only the last segment of a path is kept.
    pub name: String,
    pub bytes: Bytes,
}

/// What became of an original that arrived in the originals' store ([`Documents::arrived`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Arrival {
    /// The document is queued at the original's generation: index it.
    Queued(Document),
    /// The original is not the size announced or not what its name says: the document ended
    /// `failed` with the reason.
    Refused(Document),
    /// Nothing to do: the document is gone, replaced since, or past being queued.
    Stale,
}

/// The errors of the file itself, before anything is stored.
fn refused(refusal: FormatRefusal) -> CoreError {
    match refusal {
        FormatRefusal::Unsupported => CoreError::UnsupportedFormat(refusal.to_string()),
        FormatRefusal::NotWhatItSays(_) => {
            CoreError::invalid("content_mismatch", refusal.to_string())
        }
    }
}

fn full(allowance: u64) -> CoreError {
    CoreError::TooLarge {
        code: "storage_full",
        message: format!(
            "the organisation's documents would pass its storage allowance of {allowance} bytes; delete some or ask for a larger plan"
        ),
    }
}

impl Documents {
    /// A collection the admin may upload into: it exists (else `NotFound`) and is not synced
    /// from a folder (else 409 `collection_synced_from_folder`).
    async fn uploadable(&self, admin: &Admin, id: &CollectionId) -> Result<Collection, CoreError> {
        let collection = self.collection(admin, id).await?;
        if collection.source == CollectionSource::Folder {
            return Err(CoreError::conflict(
                "collection_synced_from_folder",
                "this collection mirrors a folder: change the folder",
            ));
        }
        Ok(collection)
    }

    /// Every document of a collection, by name. Errors: `NotFound`.
    pub async fn documents(
        &self, admin: &Admin, collection: &CollectionId,
    ) -> Result<Vec<Document>, CoreError> {
        self.collection(admin, collection).await?;
        let mut all = (self.stores.documents)
            .list_documents(&admin.org, collection)
            .await?;
        all.sort_by_key(|d| (d.name.to_lowercase(), d.id.clone()));
        Ok(all)
    }

    /// The document, which must exist in that collection of the admin's organisation.
    pub async fn document(
        &self, admin: &Admin, collection: &CollectionId, id: &DocumentId,
    ) -> Result<Document, CoreError> {
        (self.stores.documents)
            .get_document(&admin.org, collection, id)
            .await?
            .ok_or(CoreError::NotFound("document"))
    }

    /// A file's name and claimed format and size as an admin announces it. Errors: 400 for a
    /// bad name or no bytes, 413 `file_too_large`, 415 for a format the service does not read.
    fn announced(&self, intent: &UploadIntent) -> Result<(String, Format), CoreError> {
        let base = intent.name.rsplit(['/', '\\']).next().unwrap_or_default();
        let name = checked_name("the file's name", base)?;
        let format = Format::of_name(&name).map_err(refused)?;
        if intent.bytes == 0 {
            return Err(CoreError::invalid("empty_file", "the file is empty"));
        }
        let max = self.limits.max_file_bytes;
        if intent.bytes > max {
            return Err(CoreError::TooLarge {
                code: "file_too_large",
                message: format!("a file may be at most {max} bytes"),
            });
        }
        Ok((name, format))
    }

    /// Records a new document `uploading`, its announced bytes counted against the
    /// organisation's allowance, for its original to be sent next ([`Self::receive`], or
    /// straight to the originals' store where it takes uploads). Errors: as
    /// [`Self::announced`]; `NotFound` (the collection); 409 `collection_synced_from_folder`;
    /// 413 `storage_full` past the organisation's allowance.
    pub async fn begin_upload(
        &self, admin: &Admin, collection: &CollectionId, intent: &UploadIntent,
    ) -> Result<Document, CoreError> {
        let (name, format) = self.announced(intent)?;
        self.uploadable(admin, collection).await?;
        let allowance = self.allowance(&admin.org).await?;
        let now = self.clock.now();
        let document = Document {
            org: admin.org.clone(),
            collection: collection.clone(),
            id: DocumentId::generate(),
            name,
            format,
            bytes: intent.bytes,
            sha256: String::new(),
            status: DocumentStatus::Uploading,
            reason: None,
            generation: 1,
            passages: 0,
            attempts: 0,
            lease_until: None,
            version: 1,
            by: admin.by.clone(),
            created_at: now,
            updated_at: now,
        };
        let audit = admin
            .audit(now, AuditAction::DocumentAdded, document.id.as_str())
            .target_named(Some(&document.name));
        match (self.stores.documents)
            .create_document(&document, allowance, &audit)
            .await
        {
            Ok(()) => Ok(document),
            Err(StoreError::Full) => Err(full(allowance)),
            Err(StoreError::Gone) => Err(CoreError::NotFound("collection")),
            Err(e) => Err(e.into()),
        }
    }

    /// Records a document's next generation `uploading`, replacing its original once sent: its
    /// passages stop being found at once, and the new ones are found, all together, once
    /// indexed. Errors: as [`Self::begin_upload`], and `NotFound` (the document).
    pub async fn begin_replace(
        &self, admin: &Admin, collection: &CollectionId, id: &DocumentId, intent: &UploadIntent,
    ) -> Result<Document, CoreError> {
        let (name, format) = self.announced(intent)?;
        self.uploadable(admin, collection).await?;
        let allowance = self.allowance(&admin.org).await?;
        loop {
            let current = self.document(admin, collection, id).await?;
            let now = self.clock.now();
            let next = Document {
                name: name.clone(),
                format,
                bytes: intent.bytes,
                sha256: String::new(),
                status: DocumentStatus::Uploading,
                reason: None,
                generation: current.generation + 1,
                passages: 0,
                attempts: 0,
                lease_until: None,
                by: admin.by.clone(),
                ..current.next(now)
            };
            let audit = admin
                .audit(now, AuditAction::DocumentReplaced, id.as_str())
                .target_named(Some(&next.name));
            match (self.stores.documents)
                .update_document(&current, &next, allowance, Some(&audit))
                .await
            {
                Ok(()) => return Ok(next),
                Err(StoreError::Conflict) => continue,
                Err(StoreError::Gone) => return Err(CoreError::NotFound("document")),
                Err(StoreError::Full) => return Err(full(allowance)),
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Where the admin's browser sends the original of `document`, announced `uploading`: the
    /// originals' store's own target (a pre-signed request), or `None` where the service takes
    /// it ([`Self::receive`]).
    pub async fn upload_target(
        &self, document: &Document,
    ) -> Result<Option<UploadTarget>, CoreError> {
        (self.originals)
            .upload_target(document)
            .await
            .map_err(CoreError::internal)
    }

    /// Takes the original of a document `uploading` at `generation`, stores it, and queues the
    /// document for indexing. Errors: `NotFound` (the document, or not at that generation);
    /// 409 `not_uploading` when its original was taken already, `upload_elsewhere` where the
    /// originals' store takes uploads itself ([`Self::upload_target`]); 400 `size_mismatch`
    /// when the bytes are not those announced, `content_mismatch` when they are not what the
    /// name says.
    pub async fn receive(
        &self, admin: &Admin, collection: &CollectionId, id: &DocumentId, generation: u64,
        bytes: Bytes,
    ) -> Result<Document, CoreError> {
        let current = self.document(admin, collection, id).await?;
        if current.generation != generation {
            return Err(CoreError::NotFound("document"));
        }
        if self.upload_target(&current).await?.is_some() {
            return Err(CoreError::conflict(
                "upload_elsewhere",
                "send the file where the announcement said (its `upload`), not to this service",
            ));
        }
        if current.status != DocumentStatus::Uploading {
            return Err(CoreError::conflict(
                "not_uploading",
                "this document's original was sent already",
            ));
        }
        if bytes.len() as u64 != current.bytes {
            return Err(CoreError::invalid(
                "size_mismatch",
                format!(
                    "the file has {} bytes, not the {} announced",
                    bytes.len(),
                    current.bytes
                ),
            ));
        }
        let head = &bytes[..bytes.len().min(4096)];
        Format::detect(&current.name, head).map_err(refused)?;
        let sha256 = hex::encode(Sha256::digest(&bytes));
        (self.originals)
            .put(&admin.org, id, generation, bytes)
            .await
            .map_err(CoreError::internal)?;
        crate::fault::point("receive", "stored").await;
        self.stored(current, sha256).await
    }

    /// The original of `id`'s `generation` arrived in the originals' store by itself (on AWS
    /// the browser's pre-signed PUT, told by the object's event, which names the organisation,
    /// the document and the generation), at least once and perhaps late. When the document is
    /// `uploading` at that generation, the original is read and must be the size announced and
    /// what its name says, else the document ends `failed` with why; its SHA-256 is recorded
    /// and it is queued ([`Arrival::Queued`]), to be indexed next
    /// ([`super::Workers::index_document`]). A document already queued at that generation (the
    /// event delivered again) is [`Arrival::Queued`] too. A document that is gone has its
    /// originals removed; any other (replaced since, indexed, failed) is [`Arrival::Stale`].
    /// The document is found among the organisation's collections: one query of them and one
    /// batched read of the document's key in each. Errors: the store or the originals failed;
    /// calling again is safe.
    pub async fn arrived(
        &self, org: &OrgId, id: &DocumentId, generation: u64,
    ) -> Result<Arrival, CoreError> {
        let Some(current) = self.find_document(org, id).await? else {
            if let Err(e) = self.originals.delete(org, id).await {
                tracing::error!(error = ?e, document = %id, "an original no document names stays until the sweep");
            }
            return Ok(Arrival::Stale);
        };
        if current.generation != generation {
            return Ok(Arrival::Stale);
        }
        match current.status {
            DocumentStatus::Uploading => {}
            DocumentStatus::Queued => return Ok(Arrival::Queued(current)),
            DocumentStatus::Indexed | DocumentStatus::Failed => return Ok(Arrival::Stale),
        }
        let original = (self.originals)
            .get(org, id, generation)
            .await
            .map_err(CoreError::internal)?;
        let Some(original) = original else {
            return Ok(Arrival::Stale);
        };
        let refusal = if original.len() as u64 != current.bytes {
            Some(format!(
                "the file sent has {} bytes, not the {} announced: upload it again",
                original.len(),
                current.bytes
            ))
        } else {
            let head = &original[..original.len().min(4096)];
            Format::detect(&current.name, head)
                .err()
                .map(|e| e.to_string())
        };
        if let Some(reason) = refusal {
            return self.refuse_arrival(current, reason).await;
        }
        let sha256 = hex::encode(Sha256::digest(&original));
        match self.stored(current, sha256).await {
            Ok(queued) => Ok(Arrival::Queued(queued)),
            Err(CoreError::NotFound(_) | CoreError::Conflict { .. }) => Ok(Arrival::Stale),
            Err(e) => Err(e),
        }
    }

    /// The document `id` of the organisation, in whichever of its collections holds it.
    async fn find_document(
        &self, org: &OrgId, id: &DocumentId,
    ) -> Result<Option<Document>, CoreError> {
        let store = &self.stores.documents;
        let keys: Vec<(CollectionId, DocumentId)> = (store.list_collections(org).await?)
            .into_iter()
            .map(|c| (c.id, id.clone()))
            .collect();
        for batch in keys.chunks(100) {
            if let Some(found) = store.get_documents(org, batch).await?.into_iter().next() {
                return Ok(Some(found));
            }
        }
        Ok(None)
    }

    /// Ends `uploading` failed with `reason`, unless it moved meanwhile.
    async fn refuse_arrival(
        &self, uploading: Document, reason: String,
    ) -> Result<Arrival, CoreError> {
        let failed = Document {
            status: DocumentStatus::Failed,
            reason: Some(reason),
            ..uploading.next(self.clock.now())
        };
        match (self.stores.documents)
            .update_document(&uploading, &failed, u64::MAX, None)
            .await
        {
            Ok(()) => Ok(Arrival::Refused(failed)),
            Err(StoreError::Conflict | StoreError::Gone) => Ok(Arrival::Stale),
            Err(e) => Err(e.into()),
        }
    }

    /// Queues `uploading`, whose original is now stored with digest `sha256`. A crash before
    /// it leaves the document `uploading` with its original stored, which the sweep queues.
    pub(super) async fn stored(
        &self, uploading: Document, sha256: String,
    ) -> Result<Document, CoreError> {
        let mut current = uploading;
        loop {
            let next = Document {
                sha256: sha256.clone(),
                status: DocumentStatus::Queued,
                ..current.next(self.clock.now())
            };
            match (self.stores.documents)
                .update_document(&current, &next, u64::MAX, None)
                .await
            {
                Ok(()) => {
                    self.queued.notify_waiters();
                    if next.generation > 1 {
                        let older =
                            self.originals
                                .delete_older(&next.org, &next.id, next.generation);
                        if let Err(e) = older.await {
                            tracing::warn!(error = ?e, document = %next.id, "a replaced original stays until the sweep");
                        }
                    }
                    return Ok(next);
                }
                Err(StoreError::Conflict) => {}
                Err(StoreError::Gone) => {
                    self.forget_original(&current).await;
                    return Err(CoreError::NotFound("document"));
                }
                Err(e) => return Err(e.into()),
            }
            let again = (self.stores.documents)
                .get_document(&current.org, &current.collection, &current.id)
                .await?;
            match again {
                Some(d)
                    if d.generation == current.generation
                        && d.status == DocumentStatus::Uploading =>
                {
                    current = d
                }
                _ => {
                    return Err(CoreError::conflict(
                        "not_uploading",
                        "this document changed while its original was sent",
                    ));
                }
            }
        }
    }

    /// A whole upload in one call: [`Self::begin_upload`] then [`Self::receive`]. For files
    /// the service has in hand (a synced folder, the command line).
    pub async fn upload(
        &self, admin: &Admin, collection: &CollectionId, upload: Upload,
    ) -> Result<Document, CoreError> {
        let intent = UploadIntent {
            name: upload.name,
            bytes: upload.bytes.len() as u64,
        };
        let document = self.begin_upload(admin, collection, &intent).await?;
        let received = self
            .receive(admin, collection, &document.id, 1, upload.bytes)
            .await;
        if received.is_err() {
            let _ = self.delete_document(admin, collection, &document.id).await;
        }
        received
    }

    /// Deletes a document: at once unsearchable, then its original and passages removed (a
    /// failure there is logged; the sweep finishes it). Errors: `NotFound`.
    pub async fn delete_document(
        &self, admin: &Admin, collection: &CollectionId, id: &DocumentId,
    ) -> Result<(), CoreError> {
        loop {
            let current = self.document(admin, collection, id).await?;
            let audit = admin
                .audit(self.clock.now(), AuditAction::DocumentDeleted, id.as_str())
                .target_named(Some(&current.name));
            match self
                .stores
                .documents
                .delete_document(&current, &audit)
                .await
            {
                Ok(true) => {
                    if let Err(e) = self.index.remove(&admin.org, id).await {
                        tracing::error!(error = ?e, document = %id, "a deleted document's passages stay until the sweep");
                    }
                    self.forget_original(&current).await;
                    return Ok(());
                }
                Ok(false) => return Err(CoreError::NotFound("document")),
                Err(StoreError::Conflict) => continue,
                Err(e) => return Err(e.into()),
            }
        }
    }

    async fn forget_original(&self, document: &Document) {
        if let Err(e) = self.originals.delete(&document.org, &document.id).await {
            tracing::error!(error = ?e, document = %document.id, "an original no document names stays until the sweep");
        }
    }
}
