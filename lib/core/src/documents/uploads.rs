//! An admin's documents: list, upload, replace and delete. An upload stores the original
//! first and then records the document `queued`, so a crash between the two leaves only an
//! original no document names (the sweep removes it), never a document without its original.

use bytes::Bytes;
use sha2::{Digest, Sha256};

use crate::CoreError;
use crate::admin::Admin;
use crate::domain::{
    AuditAction, Collection, CollectionSource, Document, DocumentStatus, Format, FormatRefusal,
};
use crate::ids::{CollectionId, DocumentId};
use crate::ports::StoreError;

use super::Documents;
use super::collections::checked_name;

/// A file as an admin sends it.
#[derive(Debug, Clone)]
pub struct Upload {
    /// Its name; only the last segment of a path is kept.
    pub name: String,
    pub bytes: Bytes,
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

    /// The file's name, format and digest. Errors: 400 for an empty file or a bad name or
    /// content that is not what its name says, 413 `file_too_large`, 415 for a format the
    /// service does not read.
    fn checked(&self, upload: &Upload) -> Result<(String, Format, String), CoreError> {
        let base = upload.name.rsplit(['/', '\\']).next().unwrap_or_default();
        let name = checked_name("the file's name", base)?;
        if upload.bytes.is_empty() {
            return Err(CoreError::invalid("empty_file", "the file is empty"));
        }
        let max = self.limits.max_file_bytes;
        if upload.bytes.len() as u64 > max {
            return Err(CoreError::TooLarge {
                code: "file_too_large",
                message: format!("a file may be at most {max} bytes"),
            });
        }
        let head = &upload.bytes[..upload.bytes.len().min(4096)];
        let format = Format::detect(&name, head).map_err(refused)?;
        let sha256 = hex::encode(Sha256::digest(&upload.bytes));
        Ok((name, format, sha256))
    }

    /// Stores a new document in the collection and queues it for indexing. Errors: as
    /// [`Self::checked`]; `NotFound` (the collection); 409 `collection_synced_from_folder`;
    /// 413 `storage_full` past the organisation's allowance.
    pub async fn upload(
        &self, admin: &Admin, collection: &CollectionId, upload: Upload,
    ) -> Result<Document, CoreError> {
        let (name, format, sha256) = self.checked(&upload)?;
        self.uploadable(admin, collection).await?;
        let allowance = self.allowance(&admin.org).await?;
        let now = self.clock.now();
        let document = Document {
            org: admin.org.clone(),
            collection: collection.clone(),
            id: DocumentId::generate(),
            name,
            format,
            bytes: upload.bytes.len() as u64,
            sha256,
            status: DocumentStatus::Queued,
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
        (self.originals)
            .put(&admin.org, &document.id, 1, upload.bytes)
            .await
            .map_err(CoreError::internal)?;
        let created = (self.stores.documents)
            .create_document(&document, allowance, &audit)
            .await;
        if let Err(e) = created {
            self.forget_original(&document).await;
            return Err(match e {
                StoreError::Full => full(allowance),
                StoreError::Gone => CoreError::NotFound("collection"),
                e => e.into(),
            });
        }
        self.queued.notify_waiters();
        Ok(document)
    }

    /// Replaces a document's original by a new upload, as its next generation: its passages
    /// stop being found at once, and its new ones are found, all together, once indexed.
    /// Errors: as [`Self::upload`], and `NotFound` (the document).
    pub async fn replace(
        &self, admin: &Admin, collection: &CollectionId, id: &DocumentId, upload: Upload,
    ) -> Result<Document, CoreError> {
        let (name, format, sha256) = self.checked(&upload)?;
        self.uploadable(admin, collection).await?;
        let allowance = self.allowance(&admin.org).await?;
        let mut stored = None;
        loop {
            let current = self.document(admin, collection, id).await?;
            let generation = current.generation + 1;
            if stored != Some(generation) {
                (self.originals)
                    .put(&admin.org, id, generation, upload.bytes.clone())
                    .await
                    .map_err(CoreError::internal)?;
                stored = Some(generation);
            }
            let now = self.clock.now();
            let next = Document {
                name: name.clone(),
                format,
                bytes: upload.bytes.len() as u64,
                sha256: sha256.clone(),
                status: DocumentStatus::Queued,
                reason: None,
                generation,
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
                Ok(()) => {
                    self.queued.notify_waiters();
                    if let Err(e) = self
                        .originals
                        .delete_older(&admin.org, id, generation)
                        .await
                    {
                        tracing::warn!(error = ?e, document = %id, "a replaced original stays until the sweep");
                    }
                    return Ok(next);
                }
                Err(StoreError::Conflict) => continue,
                Err(StoreError::Gone) => return Err(CoreError::NotFound("document")),
                Err(StoreError::Full) => return Err(full(allowance)),
                Err(e) => return Err(e.into()),
            }
        }
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
