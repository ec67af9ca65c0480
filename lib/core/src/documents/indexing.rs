//! The durable indexing job. A worker takes a queued document with a lease (a conditional
//! write), parses its original, replaces its passages in the index in one commit, and marks it
//! `indexed` at that generation, conditional on the document not having moved. A worker that
//! dies leaves a lease that expires, and the next worker takes the document again; after
//! [`INDEX_ATTEMPTS`] takes the document ends `failed`, and so does one whose last attempt
//! fails with an error. A file the parser refuses ends `failed` at once with the parser's
//! reason. The local workers find documents to take in the store's queue
//! ([`Workers::index_next`]); on AWS the queue tells the indexer which one
//! ([`Workers::index_document`]).

use std::sync::Arc;
use std::time::Duration;

use crate::CoreError;
use crate::clock::Timestamp;
use crate::domain::{Document, DocumentStatus, INDEX_ATTEMPTS};
use crate::ids::{CollectionId, DocumentId, OrgId};
use crate::ports::{Parser, StoreError};
use crate::telemetry::{self, IndexingOutcome};

use super::Documents;
use super::turns::{Turn, Turns};

/// How long a worker holds a document: longer than parsing's own bound (a minute) and a
/// commit.
const LEASE_MS: i64 = 5 * 60_000;
/// How often idle workers look for leases that expired (a worker that died).
const IDLE_POLL: Duration = Duration::from_secs(5);

/// What a worker did with the document it took.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IndexOutcome {
    /// Its passages are searchable.
    Indexed(Document),
    /// It ended `failed`, with the reason.
    Failed(Document),
    /// It was replaced or deleted while the worker parsed it: its work was dropped.
    Superseded,
}

/// What [`Workers::index_document`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IndexAttempt {
    /// It took the document, and this came of it.
    Done(Box<IndexOutcome>),
    /// Another worker holds the document until then: ask again after.
    Held(Timestamp),
    /// The document is not queued (uploading, indexed, failed, or gone): nothing to do.
    Idle,
}

/// Heads of organisations' queues a worker chooses among.
const CANDIDATES: usize = 32;

/// The workers of one process: each takes one document at a time, the organisations taking
/// turns ([`super::turns`]). Clones share the turns.
#[derive(Clone)]
pub struct Workers {
    documents: Documents,
    parser: Arc<dyn Parser>,
    turns: Turns,
}

impl Workers {
    pub(super) fn new(documents: Documents, parser: Arc<dyn Parser>) -> Self {
        Self {
            documents,
            parser,
            turns: Turns::default(),
        }
    }

    /// Runs one worker until the process ends: indexes every document it can take, then waits
    /// to be told of a new one (or [`IDLE_POLL`], for expired leases). Errors are logged and
    /// the document is left to its lease.
    pub async fn run(self) {
        loop {
            let queued = self.documents.queued.clone();
            let told = queued.notified();
            tokio::pin!(told);
            told.as_mut().enable();
            match self.index_next().await {
                Ok(Some(_)) => continue,
                Ok(None) => {}
                Err(e) => {
                    tracing::error!(error = ?e, "indexing a document failed; it is retried when its lease ends")
                }
            }
            let _ = tokio::time::timeout(IDLE_POLL, told).await;
        }
    }

    /// Takes one document a worker may take and indexes it; `None` when there is none.
    ///
    /// # Errors
    /// The store, the originals or the index failed: the document keeps its lease and is taken
    /// again when it ends.
    pub async fn index_next(&self) -> Result<Option<IndexOutcome>, CoreError> {
        let Some((taken, _turn)) = self.take().await? else {
            return Ok(None);
        };
        let outcome = self.index(taken).await?;
        Ok(Some(outcome))
    }

    /// Takes the document `id` when a worker may ([`Document::claimable`]) and indexes it, as
    /// [`Self::index_next`] does with the one it finds: for the indexer that a queue's message
    /// names (on AWS), delivered at least once.
    ///
    /// # Errors
    /// As [`Self::index_next`].
    pub async fn index_document(
        &self, org: &OrgId, collection: &CollectionId, id: &DocumentId,
    ) -> Result<IndexAttempt, CoreError> {
        let store = &self.documents.stores.documents;
        loop {
            let now = self.documents.clock.now();
            let Some(candidate) = store.get_document(org, collection, id).await? else {
                return Ok(IndexAttempt::Idle);
            };
            if candidate.status != DocumentStatus::Queued {
                return Ok(IndexAttempt::Idle);
            }
            if let Some(until) = candidate.lease_until.filter(|t| *t > now) {
                return Ok(IndexAttempt::Held(until));
            }
            if let Some(taken) = self.lease(&candidate).await? {
                return Ok(IndexAttempt::Done(Box::new(self.index(taken).await?)));
            }
        }
    }

    /// Leases the head of the queue of the organisation whose turn it is, and takes that
    /// turn.
    async fn take(&self) -> Result<Option<(Document, Turn)>, CoreError> {
        let store = &self.documents.stores.documents;
        let now = self.documents.clock.now();
        let heads = store.claimable_documents(now, CANDIDATES).await?;
        for candidate in self.turns.order(heads) {
            if let Some(taken) = self.lease(&candidate).await? {
                let turn = self.turns.take(&taken.org);
                return Ok(Some((taken, turn)));
            }
        }
        Ok(None)
    }

    /// Leases `candidate`, counting an attempt; `None` when it moved meanwhile.
    async fn lease(&self, candidate: &Document) -> Result<Option<Document>, CoreError> {
        let store = &self.documents.stores.documents;
        let now = self.documents.clock.now();
        let taken = Document {
            lease_until: Some(now.plus_millis(LEASE_MS)),
            attempts: candidate.attempts + 1,
            ..candidate.next(now)
        };
        match store
            .update_document(candidate, &taken, u64::MAX, None)
            .await
        {
            Ok(()) => Ok(Some(taken)),
            Err(StoreError::Conflict | StoreError::Gone) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Indexes `taken`. An attempt that fails with an error leaves the document to its lease,
    /// unless it was the last one: then it ends `failed` (and the error is logged).
    async fn index(&self, taken: Document) -> Result<IndexOutcome, CoreError> {
        if taken.attempts > INDEX_ATTEMPTS {
            let reason = format!(
                "indexing stopped {INDEX_ATTEMPTS} times without finishing: the file may be too large or complex to read; try a smaller file"
            );
            return self.finish(taken, Err(reason)).await;
        }
        let last = taken.attempts == INDEX_ATTEMPTS;
        let attempt = self.attempt(taken.clone()).await;
        telemetry::indexing_job(match &attempt {
            Ok(IndexOutcome::Failed(_)) => IndexingOutcome::Failed,
            Ok(_) => IndexingOutcome::Indexed,
            Err(_) if last => IndexingOutcome::Failed,
            Err(_) => IndexingOutcome::Retried,
        });
        match attempt {
            Err(e) if last => {
                tracing::error!(error = ?e, document = %taken.id, "the last attempt at indexing a document failed");
                let reason = format!(
                    "indexing failed {INDEX_ATTEMPTS} times: upload the file again, or ask the operator if it keeps failing"
                );
                self.finish(taken, Err(reason)).await.map_err(|_| e)
            }
            done => done,
        }
    }

    async fn attempt(&self, taken: Document) -> Result<IndexOutcome, CoreError> {
        let d = &self.documents;
        let original = d
            .originals
            .get(&taken.org, &taken.id, taken.generation)
            .await
            .map_err(CoreError::internal)?;
        let Some(original) = original else {
            let reason = "the uploaded file was not stored: upload it again".to_owned();
            return self.finish(taken, Err(reason)).await;
        };
        let passages = match self.parser.parse(taken.format, original).await {
            Ok(passages) => passages,
            Err(reason) => return self.finish(taken, Err(reason)).await,
        };
        crate::fault::point("index", "parsed").await;
        let count = u32::try_from(passages.len()).unwrap_or(u32::MAX);
        d.index
            .replace(
                &taken.org,
                &taken.collection,
                &taken.id,
                taken.generation,
                passages,
            )
            .await
            .map_err(CoreError::internal)?;
        crate::fault::point("index", "committed").await;
        self.finish(taken, Ok(count)).await
    }

    /// Records the outcome of `taken`'s generation, unless it was replaced or deleted
    /// meanwhile.
    async fn finish(
        &self, taken: Document, outcome: Result<u32, String>,
    ) -> Result<IndexOutcome, CoreError> {
        let store = &self.documents.stores.documents;
        let mut current = taken;
        loop {
            let now = self.documents.clock.now();
            let (status, passages, reason) = match &outcome {
                Ok(n) => (DocumentStatus::Indexed, *n, None),
                Err(reason) => (DocumentStatus::Failed, 0, Some(reason.clone())),
            };
            let done = Document {
                status,
                passages,
                reason,
                lease_until: None,
                ..current.next(now)
            };
            match store.update_document(&current, &done, u64::MAX, None).await {
                Ok(()) if outcome.is_ok() => return Ok(IndexOutcome::Indexed(done)),
                Ok(()) => return Ok(IndexOutcome::Failed(done)),
                Err(StoreError::Conflict) => {}
                Err(StoreError::Gone) => return self.dropped(&current).await,
                Err(e) => return Err(e.into()),
            }
            let again = store
                .get_document(&current.org, &current.collection, &current.id)
                .await?;
            match again {
                Some(d)
                    if d.generation == current.generation && d.status == DocumentStatus::Queued =>
                {
                    current = d;
                }
                Some(_) => return Ok(IndexOutcome::Superseded),
                None => return self.dropped(&current).await,
            }
        }
    }

    /// A document deleted while it was being indexed: the passages this worker may have
    /// committed after the deletion removed the others go too.
    async fn dropped(&self, gone: &Document) -> Result<IndexOutcome, CoreError> {
        (self.documents.index)
            .remove(&gone.org, &gone.id)
            .await
            .map_err(CoreError::internal)?;
        Ok(IndexOutcome::Superseded)
    }
}
