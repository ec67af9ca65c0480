//! A collection kept in step with a folder (the local service's `serve --docs DIR`): read-only
//! in the admin API, its documents are the folder's files, named by their paths in it. A sync
//! adds the files that are new, replaces those whose content changed (by SHA-256) and deletes
//! the documents whose file is gone, each as an upload, replacement or deletion would, so the
//! workers index them and a search sees each change whole.

use bytes::Bytes;
use sha2::{Digest, Sha256};

use crate::CoreError;
use crate::admin::Admin;
use crate::domain::{
    Access, AuditAction, Collection, CollectionSource, Document, DocumentStatus, Format,
};
use crate::ids::{DocumentId, OrgId};
use crate::ports::StoreError;

use super::{Documents, NewCollection};

/// A file of the folder: its path in it (`/`-separated) and its content.
#[derive(Debug, Clone)]
pub struct FolderFile {
    pub path: String,
    pub bytes: Bytes,
}

/// What a sync changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Synced {
    pub added: usize,
    pub replaced: usize,
    pub removed: usize,
    pub unchanged: usize,
    /// The files left out, with why (a format not read, too large, the allowance).
    pub refused: Vec<(String, String)>,
}

impl Documents {
    /// The collection synced from the folder `name` in `org`, made (open to every member) the
    /// first time.
    pub async fn folder_collection(
        &self, org: &OrgId, name: &str,
    ) -> Result<Collection, CoreError> {
        let existing = self.stores.documents.list_collections(org).await?;
        let found = existing
            .into_iter()
            .find(|c| c.source == CollectionSource::Folder && c.name == name);
        if let Some(collection) = found {
            return Ok(collection);
        }
        let new = NewCollection {
            name: name.to_owned(),
            description: "Kept in step with a folder of the local service.".to_owned(),
            access: Access::Everyone,
        };
        let operator = Admin::operator(org.clone());
        self.create_collection_from(&operator, new, CollectionSource::Folder)
            .await
    }

    /// Makes `collection`'s documents `files`. Errors: the store or the originals failed; a
    /// sync cut short is finished by the next.
    pub async fn sync_folder(
        &self, collection: &Collection, files: Vec<FolderFile>,
    ) -> Result<Synced, CoreError> {
        let operator = Admin::operator(collection.org.clone());
        let allowance = self.allowance(&collection.org).await?;
        let mut held = (self.stores.documents)
            .list_documents(&collection.org, &collection.id)
            .await?;
        let mut synced = Synced::default();
        for file in files {
            let at = held.iter().position(|d| d.name == file.path);
            let current = at.map(|i| held.swap_remove(i));
            let outcome = self
                .sync_file(&operator, collection, current, &file, allowance)
                .await?;
            match outcome {
                Ok(Change::Added) => synced.added += 1,
                Ok(Change::Replaced) => synced.replaced += 1,
                Ok(Change::Unchanged) => synced.unchanged += 1,
                Err(reason) => synced.refused.push((file.path, reason)),
            }
        }
        for gone in held {
            let audit = operator
                .audit(
                    self.clock.now(),
                    AuditAction::DocumentDeleted,
                    gone.id.as_str(),
                )
                .target_named(Some(&gone.name));
            if self.stores.documents.delete_document(&gone, &audit).await? {
                if let Err(e) = self.index.remove(&gone.org, &gone.id).await {
                    tracing::error!(error = ?e, document = %gone.id, "a removed file's passages stay until the sweep");
                }
                let _ = self.originals.delete(&gone.org, &gone.id).await;
                synced.removed += 1;
            }
        }
        if synced.added + synced.replaced > 0 {
            self.queued.notify_waiters();
        }
        Ok(synced)
    }

    /// Brings one file's document in step with it; `Ok(Err(reason))` for a file refused.
    async fn sync_file(
        &self, operator: &Admin, collection: &Collection, current: Option<Document>,
        file: &FolderFile, allowance: u64,
    ) -> Result<Result<Change, String>, CoreError> {
        let head = &file.bytes[..file.bytes.len().min(4096)];
        let format = match Format::detect(&file.path, head) {
            Ok(format) => format,
            Err(refusal) => return Ok(Err(refusal.to_string())),
        };
        let max = self.limits.max_file_bytes;
        if file.bytes.len() as u64 > max {
            return Ok(Err(format!("the file is larger than {max} bytes")));
        }
        let sha256 = hex::encode(Sha256::digest(&file.bytes));
        let now = self.clock.now();
        let (next, audit, change) = match current {
            Some(d) if d.sha256 == sha256 && d.status != DocumentStatus::Uploading => {
                return Ok(Ok(Change::Unchanged));
            }
            Some(d) => {
                let next = Document {
                    format,
                    bytes: file.bytes.len() as u64,
                    sha256,
                    status: DocumentStatus::Queued,
                    reason: None,
                    generation: d.generation + 1,
                    passages: 0,
                    attempts: 0,
                    lease_until: None,
                    ..d.next(now)
                };
                let audit = operator.audit(now, AuditAction::DocumentReplaced, d.id.as_str());
                (next, audit, (Change::Replaced, Some(d)))
            }
            None => {
                let next = Document {
                    org: collection.org.clone(),
                    collection: collection.id.clone(),
                    id: DocumentId::generate(),
                    name: file.path.clone(),
                    format,
                    bytes: file.bytes.len() as u64,
                    sha256,
                    status: DocumentStatus::Queued,
                    reason: None,
                    generation: 1,
                    passages: 0,
                    attempts: 0,
                    lease_until: None,
                    version: 1,
                    by: None,
                    created_at: now,
                    updated_at: now,
                };
                let audit = operator.audit(now, AuditAction::DocumentAdded, next.id.as_str());
                (next, audit, (Change::Added, None))
            }
        };
        let audit = audit.target_named(Some(&next.name));
        (self.originals)
            .put(&next.org, &next.id, next.generation, file.bytes.clone())
            .await
            .map_err(CoreError::internal)?;
        let written = match &change.1 {
            Some(previous) => {
                (self.stores.documents)
                    .update_document(previous, &next, allowance, Some(&audit))
                    .await
            }
            None => {
                (self.stores.documents)
                    .create_document(&next, allowance, &audit)
                    .await
            }
        };
        match written {
            Ok(()) => {
                if next.generation > 1 {
                    let _ = (self.originals)
                        .delete_older(&next.org, &next.id, next.generation)
                        .await;
                }
                Ok(Ok(change.0))
            }
            Err(StoreError::Full) => {
                if change.1.is_none() {
                    let _ = self.originals.delete(&next.org, &next.id).await;
                }
                Ok(Err(format!(
                    "the organisation's storage allowance of {allowance} bytes is used up"
                )))
            }
            Err(StoreError::Conflict | StoreError::Gone) => Ok(Err(
                "the document changed during the sync; the next sync retries".into(),
            )),
            Err(e) => Err(e.into()),
        }
    }
}

/// What a file's sync did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Change {
    Added,
    Replaced,
    Unchanged,
}
