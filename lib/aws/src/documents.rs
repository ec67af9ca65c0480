//! The organisations' documents on AWS, as each function's row uses them
//! (`DocumentsUse`): the originals and the indexes in the documents' bucket (`knowledge-s3`),
//! and the indexer's queue, to which the admin function sends the index's removals so that
//! the indexer stays the index's one writer.

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use aws_config::SdkConfig;
use knowledge_assembly::DocumentParts;
use knowledge_core::documents::DocumentLimits;
use knowledge_core::domain::{FoundPassage, Passage};
use knowledge_core::ids::{CollectionId, DocumentId, OrgId};
use knowledge_core::ports::{IndexError, Parser, PassageIndex};
use knowledge_dynamo::RequestCounter;
use knowledge_s3::{S3Index, S3Originals};
use serde::{Deserialize, Serialize};

use crate::config::{self, ConfigError, Env};

/// Where a function keeps its copies of the organisations' indexes when the environment does
/// not say: the function's own `/tmp`.
pub const INDEX_ROOT: &str = "/tmp/knowledge-index";

/// A message of the admin function to the indexer: passages to remove from an organisation's
/// index, after the store removed their document or collection (so that searches stopped
/// finding them at once: the index is a cache).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "remove",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum Removal {
    Document {
        org: OrgId,
        document: DocumentId,
    },
    Collection {
        org: OrgId,
        collection: CollectionId,
    },
}

/// The documents' bucket's client, counting its requests in `counter`.
fn s3(shared: &SdkConfig, counter: &RequestCounter) -> aws_sdk_s3::Client {
    aws_sdk_s3::Client::from_conf(
        knowledge_s3::config(shared)
            .interceptor(counter.clone())
            .build(),
    )
}

fn bucket(env: &Env) -> Result<String, ConfigError> {
    (env.documents_bucket.clone()).ok_or(ConfigError::Missing(config::DOCUMENTS_BUCKET_ENV))
}

/// The folder of `function`'s index copies.
fn index_root(env: &Env, function: &str) -> PathBuf {
    let root = env.index_root.clone();
    root.unwrap_or_else(|| PathBuf::from(INDEX_ROOT))
        .join(function)
}

/// For the functions that read: the originals, and the indexes copied from the bucket.
pub(crate) fn read(
    function: &str, shared: &SdkConfig, env: &Env, counter: &RequestCounter,
) -> Result<DocumentParts, ConfigError> {
    let (client, bucket) = (s3(shared, counter), bucket(env)?);
    Ok(DocumentParts {
        originals: Arc::new(S3Originals::new(client.clone(), &bucket)),
        index: Arc::new(S3Index::new(client, bucket, index_root(env, function))),
        limits: DocumentLimits::DEFAULT,
    })
}

/// For the indexer: the same, written.
pub(crate) fn index(
    function: &str, shared: &SdkConfig, env: &Env, counter: &RequestCounter,
) -> Result<DocumentParts, ConfigError> {
    read(function, shared, env, counter)
}

/// For the admin function: the originals (pre-signed uploads, deletions), and the index's
/// removals sent to the indexer's queue.
pub(crate) fn manage(
    _function: &str, shared: &SdkConfig, env: &Env, counter: &RequestCounter,
) -> Result<DocumentParts, ConfigError> {
    let queue =
        (env.indexer_queue_url.clone()).ok_or(ConfigError::Missing(config::INDEXER_QUEUE_ENV))?;
    let sqs = aws_sdk_sqs::Client::from_conf(
        aws_sdk_sqs::config::Builder::from(shared)
            .interceptor(counter.clone())
            .build(),
    );
    Ok(DocumentParts {
        originals: Arc::new(S3Originals::new(s3(shared, counter), bucket(env)?)),
        index: Arc::new(QueuedRemovals { sqs, queue }),
        limits: DocumentLimits::DEFAULT,
    })
}

/// The indexer's parser: the default bounds.
pub(crate) fn parser() -> Arc<dyn Parser> {
    Arc::new(knowledge_ingest::Ingest::default())
}

/// The index as the admin function reaches it: its removals, sent to the indexer's queue.
/// Nothing here reads or writes passages.
struct QueuedRemovals {
    sqs: aws_sdk_sqs::Client,
    queue: String,
}

impl QueuedRemovals {
    async fn send(&self, removal: Removal) -> Result<(), IndexError> {
        let body = serde_json::to_string(&removal).map_err(|e| IndexError(e.into()))?;
        (self.sqs.send_message())
            .queue_url(&self.queue)
            .message_body(body)
            .send()
            .await
            .map_err(|e| IndexError(e.into()))?;
        Ok(())
    }
}

fn not_here() -> IndexError {
    IndexError("the admin function neither reads nor writes passages".into())
}

#[async_trait]
impl PassageIndex for QueuedRemovals {
    async fn replace(
        &self, _: &OrgId, _: &CollectionId, _: &DocumentId, _: u64, _: Vec<Passage>,
    ) -> Result<(), IndexError> {
        Err(not_here())
    }

    async fn remove(&self, org: &OrgId, document: &DocumentId) -> Result<(), IndexError> {
        self.send(Removal::Document {
            org: org.clone(),
            document: document.clone(),
        })
        .await
    }

    async fn remove_collection(
        &self, org: &OrgId, collection: &CollectionId,
    ) -> Result<(), IndexError> {
        self.send(Removal::Collection {
            org: org.clone(),
            collection: collection.clone(),
        })
        .await
    }

    async fn search(
        &self, _: &OrgId, _: &str, _: &[CollectionId], _: usize,
    ) -> Result<Vec<FoundPassage>, IndexError> {
        Err(not_here())
    }

    async fn passages(
        &self, _: &OrgId, _: &DocumentId, _: u64, _: u32, _: usize,
    ) -> Result<Vec<FoundPassage>, IndexError> {
        Err(not_here())
    }
}
