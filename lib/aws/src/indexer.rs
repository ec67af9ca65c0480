//! The indexer function: the messages of the indexer's queue, one per invocation, each
//! handled by the core's use cases and reported failed alone (`ReportBatchItemFailures`), so
//! that SQS delivers it again after its visibility timeout and moves it to the dead-letter
//! queue after three receives.
//!
//! - The bucket's event of an original created under `org/` (an `ObjectCreated` record, as S3
//!   sends it, in the message's body): the document's arrival (`Documents::arrived`: checked
//!   against its announcement, queued), then its indexing (`Workers::index_document`: a lease,
//!   the parser, the index published to the bucket). A document another invocation holds is a
//!   failure, to be delivered again once its lease has run out.
//! - The admin function's removals ([`Removal`]): passages removed from the index, or a
//!   document's originals from the bucket.
//! - S3's test event, sent when the notification is configured: nothing to do.
//!
//! Every quarter of an hour its schedule invokes it with an event of no queue (no records):
//! its sweep. The uploads cut short are settled (`Documents::sweep`: queued when their
//! original is stored, else deleted), then the documents waiting queued are indexed
//! (`Workers::index_next`), those just settled and any whose bucket's event was lost or spent
//! its deliveries, while the invocation has time left.
//!
//! A message the indexer cannot read (not JSON, an object key of no original) fails every
//! time, and so ends in the dead-letter queue, where a person can look at it.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use knowledge_core::CoreError;
use knowledge_core::clock::{Clock, SystemClock};
use knowledge_core::documents::{Arrival, Documents, IndexAttempt, Workers};
use knowledge_core::ports::{IndexError, Originals, OriginalsError, PassageIndex};
use lambda_runtime::LambdaEvent;
use serde_json::{Value, json};

use crate::documents::Removal;

/// Why a message was not handled; logged, and the message reported failed.
#[derive(Debug, thiserror::Error)]
enum Failure {
    #[error("the message is not one the indexer reads: {0}")]
    Unreadable(String),
    #[error("another invocation holds the document until {0}")]
    Held(String),
    #[error(transparent)]
    Core(#[from] CoreError),
    #[error(transparent)]
    Index(#[from] IndexError),
    #[error(transparent)]
    Originals(#[from] OriginalsError),
}

/// The time a sweep leaves before its invocation's deadline when it takes another document:
/// a 25 MiB PDF's indexing, with room to spare.
pub const SWEEP_MARGIN: Duration = Duration::from_secs(60);

/// The indexer of one cold start.
#[derive(Clone)]
pub struct IndexerFunction {
    documents: Documents,
    workers: Workers,
    index: Arc<dyn PassageIndex>,
    originals: Arc<dyn Originals>,
    /// The documents' bucket: an event of another bucket is refused.
    bucket: String,
}

impl IndexerFunction {
    pub fn new(
        documents: Documents, workers: Workers, parts: &knowledge_assembly::DocumentParts,
        bucket: impl Into<String>,
    ) -> Self {
        Self {
            documents,
            workers,
            index: parts.index.clone(),
            originals: parts.originals.clone(),
            bucket: bucket.into(),
        }
    }

    /// Handles an SQS event: each record's message, answering the ones that failed
    /// (`{"batchItemFailures": [{"itemIdentifier": <messageId>}]}`).
    ///
    /// # Errors
    /// Never: a failure is a message's, reported in the answer.
    pub async fn handle(&self, event: LambdaEvent<Value>) -> Result<Value, lambda_runtime::Error> {
        let Some(records) = event.payload["Records"].as_array().cloned() else {
            return self.sweep(event.context.deadline()).await;
        };
        let mut failures = Vec::new();
        for record in records {
            let id = record["messageId"].as_str().unwrap_or_default().to_owned();
            let body = record["body"].as_str().unwrap_or_default();
            if let Err(e) = self.message(body).await {
                let receives = record["attributes"]["ApproximateReceiveCount"].as_str();
                tracing::error!(
                    error = %knowledge_core::error::Chain(&e),
                    message = %id,
                    receives = receives.unwrap_or("?"),
                    "a message of the indexer's queue failed; it is delivered again, and after its third receive kept in the dead-letter queue"
                );
                failures.push(json!({ "itemIdentifier": id }));
            }
        }
        Ok(json!({ "batchItemFailures": failures }))
    }

    /// The schedule's sweep: settles the uploads cut short, then indexes queued documents one
    /// at a time until none is left or fewer than [`SWEEP_MARGIN`] remain before `deadline`.
    /// Answers `{"queued", "failed", "deleted", "indexed"}`.
    ///
    /// # Errors
    /// The store's indexes of uploads or of queued documents could not be read: the next
    /// schedule sweeps again.
    async fn sweep(&self, deadline: SystemTime) -> Result<Value, lambda_runtime::Error> {
        let swept = self.documents.sweep(SystemClock.now()).await?;
        let mut indexed = 0;
        while deadline
            .duration_since(SystemTime::now())
            .unwrap_or_default()
            > SWEEP_MARGIN
        {
            match self.workers.index_next().await? {
                Some(_) => indexed += 1,
                None => break,
            }
        }
        if indexed > 0 {
            tracing::info!(indexed, "the sweep indexed documents left queued");
        }
        Ok(json!({
            "queued": swept.queued, "failed": swept.failed, "deleted": swept.deleted,
            "indexed": indexed,
        }))
    }

    async fn message(&self, body: &str) -> Result<(), Failure> {
        let value: Value =
            serde_json::from_str(body).map_err(|e| Failure::Unreadable(e.to_string()))?;
        if value["Event"] == "s3:TestEvent" {
            return Ok(());
        }
        if let Some(records) = value["Records"].as_array() {
            for record in records {
                self.created(record).await?;
            }
            return Ok(());
        }
        let removal: Removal =
            serde_json::from_value(value).map_err(|e| Failure::Unreadable(e.to_string()))?;
        match removal {
            Removal::Document { org, document } => self.index.remove(&org, &document).await?,
            Removal::Collection { org, collection } => {
                self.index.remove_collection(&org, &collection).await?;
            }
            Removal::Originals { org, document } => {
                self.originals.delete(&org, &document).await?;
            }
        }
        Ok(())
    }

    /// An S3 event record: an original created.
    async fn created(&self, record: &Value) -> Result<(), Failure> {
        let event = record["eventName"].as_str().unwrap_or_default();
        if !event.starts_with("ObjectCreated:") {
            return Err(Failure::Unreadable(format!("an event {event:?}")));
        }
        let bucket = record["s3"]["bucket"]["name"].as_str().unwrap_or_default();
        if bucket != self.bucket {
            return Err(Failure::Unreadable(format!(
                "an object of bucket {bucket:?}"
            )));
        }
        // S3 URL-encodes the key; an original's key has nothing to encode.
        let key = record["s3"]["object"]["key"].as_str().unwrap_or_default();
        let (org, id, generation) = knowledge_s3::parse_original_key(key)
            .ok_or_else(|| Failure::Unreadable(format!("the key {key:?}")))?;
        let arrival = self.documents.arrived(&org, &id, generation).await?;
        let Arrival::Queued(queued) = arrival else {
            return Ok(());
        };
        let attempt = (self.workers)
            .index_document(&org, &queued.collection, &id)
            .await?;
        match attempt {
            IndexAttempt::Held(until) => Err(Failure::Held(until.to_iso8601())),
            IndexAttempt::Done(_) | IndexAttempt::Idle => Ok(()),
        }
    }
}
