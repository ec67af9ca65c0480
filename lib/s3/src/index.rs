//! `S3Index`: each organisation's tantivy index kept in the bucket and copied to local disk.
//!
//! In the bucket, under `index/<org>/`: the index's files, each written once under a name
//! tantivy never reuses for other content, and `manifest.json`, which names the files of the
//! committed index and holds its `meta.json`. The manifest is the index: a reader that has its
//! files has the index it describes, and a writer publishes a commit by replacing it.
//!
//! - **Reading** (the search and documents functions): before each search, one conditional
//!   `GET` of the manifest (`If-None-Match` its ETag: a 304 when nothing changed), and on a
//!   change the files the local copy lacks, then the search runs on the local copy.
//! - **Writing** (the indexer alone): bring the local copy up to date, write with tantivy,
//!   commit, let the merges end, upload the new files (each `If-None-Match: *`, so a file of a
//!   rival commit is never overwritten), then the manifest on condition that it is still the
//!   one the copy was made from (`If-Match` its ETag; the first `If-None-Match: *`). A refused
//!   condition (412, or 409 for a conditional write in flight) means another writer published
//!   first: the commit's files are deleted, the copy is brought up to date again and the
//!   change made again on top, up to [`WRITE_TRIES`] times. Files the new manifest no longer
//!   names are deleted; a reader that was fetching one starts again from the new manifest.

mod files;

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use aws_sdk_s3::Client;
use knowledge_core::domain::{FoundPassage, Passage};
use knowledge_core::ids::{CollectionId, DocumentId, OrgId};
use knowledge_core::ports::{self, BackendError, IndexError};
use knowledge_search::{Committed, Embedder, PassageIndex, SearchError, TantivyIndex};

use files::{Fetched, Manifest, Published};

/// The prefix of every organisation's index in the bucket.
pub const INDEX_PREFIX: &str = "index/";
/// The name of an organisation's manifest under its prefix.
pub const MANIFEST: &str = "manifest.json";
/// Times a writer makes its change again after another writer published first.
const WRITE_TRIES: usize = 5;
/// Times a reader starts again when a file its manifest named was deleted meanwhile.
const READ_TRIES: usize = 3;

/// What this process holds of one organisation's index.
#[derive(Debug, Default)]
struct Copy {
    /// Whether the local folder is the index the manifest below describes.
    current: bool,
    /// The manifest's ETag; `None` while there is no manifest.
    etag: Option<String>,
    /// The files the local folder holds as the bucket holds them.
    files: BTreeSet<String>,
}

/// [`ports::PassageIndex`] on the bucket, with a local copy of each organisation's index in
/// folders under a root (the function's `/tmp`). Calls for one organisation are made one at a
/// time; a function instance serves one request at a time anyway.
pub struct S3Index {
    client: Client,
    bucket: String,
    /// Where the local copies are.
    root: PathBuf,
    local: TantivyIndex,
    copies: Mutex<HashMap<String, Arc<tokio::sync::Mutex<Copy>>>>,
}

impl S3Index {
    /// The indexes of `bucket`, copied under `root`.
    pub fn new(client: Client, bucket: impl Into<String>, root: impl Into<PathBuf>) -> Self {
        let root = root.into();
        Self {
            client,
            bucket: bucket.into(),
            local: TantivyIndex::new(Arc::new(PassageIndex::on_disk(root.clone()))),
            root,
            copies: Mutex::default(),
        }
    }

    /// The same indexes searched by meaning as well as by words, as
    /// [`PassageIndex::with_embedder`] says: the writer stores each passage's vector in the
    /// index's files, so that the copies of every reader have them.
    pub fn with_embedder(mut self, embedder: Arc<dyn Embedder>) -> Self {
        let index = PassageIndex::on_disk(self.root.clone()).with_embedder(embedder);
        self.local = TantivyIndex::new(Arc::new(index));
        self
    }

    fn copy(&self, org: &OrgId) -> Arc<tokio::sync::Mutex<Copy>> {
        let mut copies = self.copies.lock().unwrap_or_else(|p| p.into_inner());
        copies.entry(org.as_str().to_owned()).or_default().clone()
    }

    fn index(&self) -> Arc<PassageIndex> {
        self.local.index().clone()
    }

    /// `org`'s local folder.
    fn folder(&self, org: &OrgId) -> Result<PathBuf, IndexError> {
        (self.index().folder(org.as_str()).map_err(failed)?)
            .ok_or_else(|| failed("the index is kept in memory"))
    }

    /// Brings `org`'s local copy up to the manifest in the bucket: one conditional `GET` when
    /// the copy is current, the files it lacks when the manifest changed.
    async fn refresh(&self, org: &OrgId, copy: &mut Copy) -> Result<(), IndexError> {
        let folder = self.folder(org)?;
        for _ in 0..READ_TRIES {
            let known = copy.etag.as_deref().filter(|_| copy.current);
            let manifest = match files::fetch_manifest(&self.client, &self.bucket, org, known)
                .await
                .map_err(failed)?
            {
                Fetched::Unchanged => return Ok(()),
                Fetched::Missing => (None, Manifest::default()),
                Fetched::Found { etag, manifest } => (Some(etag), manifest),
            };
            copy.current = false;
            let (etag, manifest) = manifest;
            let downloaded =
                files::download_missing(&self.client, &self.bucket, org, &folder, copy, &manifest)
                    .await
                    .map_err(failed)?;
            if !downloaded {
                // A file the manifest names is gone: a newer manifest replaced it.
                continue;
            }
            let index = self.index();
            let (org_name, meta, keep) = (
                org.as_str().to_owned(),
                manifest.meta.clone(),
                manifest.files.clone(),
            );
            blocking(move || {
                index.close(&org_name);
                files::settle_folder(&folder, meta.as_deref(), &keep)
            })
            .await?;
            *copy = Copy {
                current: true,
                etag,
                files: manifest.files,
            };
            return Ok(());
        }
        Err(failed(
            "the index's files kept changing while they were fetched",
        ))
    }

    /// Makes `change` on `org`'s index and publishes the commit, again on top of another
    /// writer's until it is published first.
    async fn write<F, Fut>(&self, org: &OrgId, change: F) -> Result<(), IndexError>
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = Result<(), IndexError>>,
    {
        let copy = self.copy(org);
        let mut copy = copy.lock().await;
        for _ in 0..WRITE_TRIES {
            self.refresh(org, &mut copy).await?;
            let written = self.commit(org, &mut copy, &change).await;
            match written {
                Ok(Published::Yes | Published::Nothing) => return Ok(()),
                Ok(Published::Lost) => {
                    tracing::info!(org = %org, "another writer published the index first: writing again on top");
                }
                Err(e) => {
                    copy.current = false;
                    return Err(e);
                }
            }
        }
        Err(failed(
            "other writers kept publishing the index first; the change is left to a retry",
        ))
    }

    /// One try of [`Self::write`] on a current copy.
    async fn commit<F, Fut>(
        &self, org: &OrgId, copy: &mut Copy, change: &F,
    ) -> Result<Published, IndexError>
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = Result<(), IndexError>>,
    {
        copy.current = false;
        change().await?;
        let index = self.index();
        let name = org.as_str().to_owned();
        let committed: Committed = blocking(move || index.settle(&name)).await?;
        if committed.files == copy.files {
            // No segment and no deletion changed (a removal of what was not there): the
            // bucket's index is this one already, whatever its meta's operation stamp.
            copy.current = true;
            return Ok(Published::Nothing);
        }
        let folder = self.folder(org)?;
        let published = files::publish(&self.client, &self.bucket, org, &folder, copy, &committed)
            .await
            .map_err(failed)?;
        let Some(etag) = published else {
            return Ok(Published::Lost);
        };
        let retired: Vec<String> = copy.files.difference(&committed.files).cloned().collect();
        *copy = Copy {
            current: true,
            etag: Some(etag),
            files: committed.files,
        };
        files::delete(&self.client, &self.bucket, org, &retired).await;
        Ok(Published::Yes)
    }

    /// Brings `org`'s copy up to date and answers `read` of it.
    async fn read<T, F, Fut>(&self, org: &OrgId, read: F) -> Result<T, IndexError>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = Result<T, IndexError>>,
    {
        let copy = self.copy(org);
        let mut copy = copy.lock().await;
        self.refresh(org, &mut copy).await?;
        read().await
    }
}

#[async_trait]
impl ports::PassageIndex for S3Index {
    async fn replace(
        &self, org: &OrgId, collection: &CollectionId, document: &DocumentId, generation: u64,
        passages: Vec<Passage>,
    ) -> Result<(), IndexError> {
        self.write(org, || {
            let passages = passages.clone();
            self.local
                .replace(org, collection, document, generation, passages)
        })
        .await
    }

    async fn remove(&self, org: &OrgId, document: &DocumentId) -> Result<(), IndexError> {
        self.write(org, || self.local.remove(org, document)).await
    }

    async fn remove_collection(
        &self, org: &OrgId, collection: &CollectionId,
    ) -> Result<(), IndexError> {
        self.write(org, || self.local.remove_collection(org, collection))
            .await
    }

    async fn search(
        &self, org: &OrgId, query: &str, collections: &[CollectionId], limit: usize,
    ) -> Result<Vec<FoundPassage>, IndexError> {
        self.read(org, || self.local.search(org, query, collections, limit))
            .await
    }

    async fn passages(
        &self, org: &OrgId, document: &DocumentId, generation: u64, from: u32, limit: usize,
    ) -> Result<Vec<FoundPassage>, IndexError> {
        self.read(org, || {
            self.local.passages(org, document, generation, from, limit)
        })
        .await
    }
}

/// `call` on the blocking pool.
async fn blocking<T: Send + 'static>(
    call: impl FnOnce() -> Result<T, SearchError> + Send + 'static,
) -> Result<T, IndexError> {
    tokio::task::spawn_blocking(call)
        .await
        .map_err(failed)?
        .map_err(failed)
}

fn failed(error: impl Into<BackendError>) -> IndexError {
    IndexError(error.into())
}
