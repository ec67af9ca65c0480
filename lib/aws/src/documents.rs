//! The organisations' documents on AWS, as each function's row uses them
//! (`DocumentsUse`): the originals and the indexes in the documents' bucket (`knowledge-s3`),
//! and the indexer's queue. The admin function pre-signs uploads and sends the indexer what is
//! to be removed (passages, originals): the indexer is the bucket's one writer besides the
//! browsers' uploads, and the admin function links no S3 client.

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use aws_config::SdkConfig;
use bytes::Bytes;
use knowledge_assembly::DocumentParts;
use knowledge_core::documents::DocumentLimits;
use knowledge_core::domain::{Document, FoundPassage, Passage};
use knowledge_core::ids::{CollectionId, DocumentId, OrgId};
use knowledge_core::ports::{
    BackendError, IndexError, Originals, OriginalsError, Parser, PassageIndex, UploadTarget,
};
use knowledge_dynamo::RequestCounter;
use knowledge_embed::SentenceModel;
use knowledge_s3::{PresignedUploads, S3Index, S3Originals};
use knowledge_search::Embedder;
use serde::{Deserialize, Serialize};

use crate::config::{self, ConfigError, Env};

/// Where a function keeps its copies of the organisations' indexes when the environment does
/// not say: the function's own `/tmp`.
pub const INDEX_ROOT: &str = "/tmp/knowledge-index";

/// A message of the admin function to the indexer: what to remove after the store removed a
/// document or collection (so that searches stopped finding it at once: the index is a cache):
/// passages from an organisation's index, or a document's originals from the bucket.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "remove",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum Removal {
    /// A document's passages.
    Document { org: OrgId, document: DocumentId },
    /// A collection's passages.
    Collection {
        org: OrgId,
        collection: CollectionId,
    },
    /// Every generation of a document's original.
    Originals { org: OrgId, document: DocumentId },
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

/// The embedding model in the folder `EMBEDDING_MODEL_DIR` names, loaded at the cold start;
/// `None` (logged with its cause) when it is not set or does not load: the function then
/// searches and indexes by words alone, as the local service does without its model.
fn embedder(env: &Env) -> Option<Arc<dyn Embedder>> {
    let models = env.embedding_models.as_ref()?;
    let started = std::time::Instant::now();
    match SentenceModel::load(&models.join(knowledge_embed::fetch::FOLDER)) {
        Ok(model) => {
            tracing::info!(
                model = model.model(),
                ms = started.elapsed().as_millis() as u64,
                "hybrid search: the embedding model is loaded"
            );
            Some(Arc::new(model))
        }
        Err(error) => {
            tracing::warn!(
                error = %knowledge_core::error::Chain(&error),
                "the embedding model could not be loaded: documents are searched by their words alone (BM25)"
            );
            None
        }
    }
}

/// For the functions that read: the originals, and the indexes copied from the bucket,
/// searched by meaning too where the model is.
pub(crate) fn read(
    function: &str, shared: &SdkConfig, env: &Env, counter: &RequestCounter,
) -> Result<DocumentParts, ConfigError> {
    let (client, bucket) = (s3(shared, counter), bucket(env)?);
    let mut index = S3Index::new(client.clone(), bucket.clone(), index_root(env, function));
    if let Some(embedder) = embedder(env) {
        index = index.with_embedder(embedder);
    }
    Ok(DocumentParts {
        originals: Arc::new(S3Originals::new(client, &bucket)),
        index: Arc::new(index),
        limits: DocumentLimits::DEFAULT,
    })
}

/// For the indexer: the same, written.
pub(crate) fn index(
    function: &str, shared: &SdkConfig, env: &Env, counter: &RequestCounter,
) -> Result<DocumentParts, ConfigError> {
    read(function, shared, env, counter)
}

/// For the admin function: uploads pre-signed, and the removals of originals and passages
/// sent to the indexer's queue.
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
    let queue = Arc::new(Queue { sqs, queue });
    let uploads = PresignedUploads::new(shared, &bucket(env)?)
        .map_err(|e| ConfigError::Invalid(config::DOCUMENTS_BUCKET_ENV, e.to_string()))?;
    Ok(DocumentParts {
        originals: Arc::new(AdminOriginals {
            uploads,
            queue: queue.clone(),
        }),
        index: Arc::new(QueuedRemovals(queue)),
        limits: DocumentLimits::DEFAULT,
    })
}

/// The address space the indexer's parser child may use: half the function's gigabyte, the
/// rest being the indexer's own (the file, the passages, tantivy's writer).
pub const PARSE_MEMORY: u64 = 512 << 20;

/// The indexer's parser: a child of the function's own binary per file, within the default
/// bounds and [`PARSE_MEMORY`] (the binary's main serves it, `Parts::first`). Should the
/// binary's path be unknown, which Linux always tells, files are read in process (logged).
pub(crate) fn parser() -> Arc<dyn Parser> {
    match std::env::current_exe() {
        Ok(program) => Arc::new(knowledge_ingest::Isolated::new(
            program,
            Vec::new(),
            knowledge_ingest::Bounds::DEFAULT,
            PARSE_MEMORY,
        )),
        Err(e) => {
            tracing::error!(error = %e, "the binary's path is unknown: files are read in process");
            Arc::new(knowledge_ingest::Ingest::default())
        }
    }
}

/// The indexer's queue, as the admin function sends to it.
struct Queue {
    sqs: aws_sdk_sqs::Client,
    queue: String,
}

impl Queue {
    async fn send(&self, removal: Removal) -> Result<(), BackendError> {
        let body = serde_json::to_string(&removal)?;
        (self.sqs.send_message())
            .queue_url(&self.queue)
            .message_body(body)
            .send()
            .await?;
        Ok(())
    }
}

/// The originals as the admin function reaches them: uploads pre-signed, and their removal
/// sent to the indexer. It neither reads nor writes an original (a file comes from the
/// browser straight to the bucket; `Documents::receive` refuses one sent to the service).
struct AdminOriginals {
    uploads: PresignedUploads,
    queue: Arc<Queue>,
}

fn not_read_here() -> OriginalsError {
    OriginalsError("the admin function neither reads nor writes originals".into())
}

#[async_trait]
impl Originals for AdminOriginals {
    async fn put(&self, _: &OrgId, _: &DocumentId, _: u64, _: Bytes) -> Result<(), OriginalsError> {
        Err(not_read_here())
    }

    async fn get(
        &self, _: &OrgId, _: &DocumentId, _: u64,
    ) -> Result<Option<Bytes>, OriginalsError> {
        Err(not_read_here())
    }

    /// Sent to the indexer, which deletes them (idempotent, as the port asks).
    async fn delete(&self, org: &OrgId, document: &DocumentId) -> Result<(), OriginalsError> {
        let removal = Removal::Originals {
            org: org.clone(),
            document: document.clone(),
        };
        self.queue.send(removal).await.map_err(OriginalsError)
    }

    /// Only where a generation is stored, which the admin function never does.
    async fn delete_older(&self, _: &OrgId, _: &DocumentId, _: u64) -> Result<(), OriginalsError> {
        Err(not_read_here())
    }

    async fn upload_target(
        &self, document: &Document,
    ) -> Result<Option<UploadTarget>, OriginalsError> {
        let target = self.uploads.target(document).await;
        Ok(Some(target.map_err(OriginalsError)?))
    }
}

/// The index as the admin function reaches it: its removals, sent to the indexer's queue.
/// Nothing here reads or writes passages.
struct QueuedRemovals(Arc<Queue>);

impl QueuedRemovals {
    async fn send(&self, removal: Removal) -> Result<(), IndexError> {
        self.0.send(removal).await.map_err(IndexError)
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
