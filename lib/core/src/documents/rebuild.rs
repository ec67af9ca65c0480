//! Rebuilding an organisation's passages from its originals: every document that is indexed or
//! failed is queued again at its generation, and the workers index it as if it had just been
//! uploaded. The index is derived, so it can be dropped and rebuilt this way at any time; a
//! search meanwhile finds a document once it is indexed again.

use crate::CoreError;
use crate::admin::Admin;
use crate::domain::{Document, DocumentStatus};
use crate::ports::StoreError;

use super::Documents;

impl Documents {
    /// Queues every indexed or failed document of the admin's organisation again, answering
    /// how many; documents uploading or queued already are left as they are. Idempotent.
    ///
    /// # Errors
    /// The store failed; calling again finishes what a failed call left.
    pub async fn reindex(&self, admin: &Admin) -> Result<usize, CoreError> {
        let store = &self.stores.documents;
        let mut queued = 0;
        for collection in store.list_collections(&admin.org).await? {
            for document in store.list_documents(&admin.org, &collection.id).await? {
                if self.requeue(document).await? {
                    queued += 1;
                }
            }
        }
        if queued > 0 {
            self.queued.notify_waiters();
        }
        Ok(queued)
    }

    /// Queues `document` again at its generation, retrying when a worker moved it meanwhile.
    async fn requeue(&self, mut document: Document) -> Result<bool, CoreError> {
        let store = &self.stores.documents;
        loop {
            let done = matches!(
                document.status,
                DocumentStatus::Indexed | DocumentStatus::Failed
            );
            if !done {
                return Ok(false);
            }
            let again = Document {
                status: DocumentStatus::Queued,
                reason: None,
                attempts: 0,
                lease_until: None,
                ..document.next(self.clock.now())
            };
            match store
                .update_document(&document, &again, u64::MAX, None)
                .await
            {
                Ok(()) => return Ok(true),
                Err(StoreError::Gone) => return Ok(false),
                Err(StoreError::Conflict) => {}
                Err(e) => return Err(e.into()),
            }
            let stored =
                (store.get_document(&document.org, &document.collection, &document.id)).await?;
            match stored {
                Some(d) => document = d,
                None => return Ok(false),
            }
        }
    }
}
