//! The organisation's documents in the local service: originals under the data directory
//! (`documents/`), the passages' index on disk beside them (`index/`), the workers that
//! index queued documents in the process, and a folder kept in step with a collection.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use knowledge_assembly::DocumentParts;
use knowledge_core::documents::{DocumentLimits, Documents, FolderFile, Synced, Workers};
use knowledge_core::domain::Format;
use knowledge_core::error::Chain;
use knowledge_core::ids::OrgId;
use knowledge_ingest::Ingest;
use knowledge_search::{Embedder, PassageIndex, TantivyIndex};

use crate::{FolderOriginals, LocalError};

/// Workers indexing documents at once, by default: parsing is CPU-bound, and the machine the
/// local service runs on also answers its requests.
pub const WORKERS: usize = 2;

/// Where the documents of the service over `data_dir` are kept, with `limits`; searched by
/// meaning as well as by words when `embedder` is given.
pub fn parts(
    data_dir: &Path, limits: DocumentLimits, embedder: Option<Arc<dyn Embedder>>,
) -> DocumentParts {
    parts_on(data_dir, limits, index(data_dir, embedder))
}

/// The passages' index in the data directory, with `embedder` when given.
pub fn index(data_dir: &Path, embedder: Option<Arc<dyn Embedder>>) -> Arc<PassageIndex> {
    let mut index = PassageIndex::on_disk(data_dir.join("index"));
    if let Some(embedder) = embedder {
        index = index.with_embedder(embedder);
    }
    Arc::new(index)
}

/// The documents' parts with `index` as their index.
pub fn parts_on(
    data_dir: &Path, limits: DocumentLimits, index: Arc<PassageIndex>,
) -> DocumentParts {
    DocumentParts {
        originals: Arc::new(FolderOriginals::in_data_dir(data_dir)),
        index: Arc::new(TantivyIndex::new(index)),
        limits,
    }
}

/// Why an organisation's documents were queued to be indexed again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stale {
    /// Its index was of another schema (an older version of the service) and was made anew.
    Schema,
    /// This many of its passages had no vector of the model searches now use.
    Model(u64),
}

/// Queues again every document of each organisation whose index is stale: made anew because
/// it was of another schema, or holding passages without a vector of the model `index`
/// searches with (written with hybrid search off, before the model was brought, or by another
/// model). The workers then write them again: the durable job of `knowledge documents
/// reindex`, started by the service itself. Answers the organisations queued and why.
///
/// # Errors
/// The index or the store failed; the next start tries again.
pub async fn requeue_stale(
    index: &Arc<PassageIndex>, documents: &Documents,
) -> Result<Vec<(OrgId, Stale)>, LocalError> {
    let counted = index.clone();
    let outdated = tokio::task::spawn_blocking(move || {
        let mut outdated = Vec::new();
        for org in counted.orgs()? {
            if counted.was_reset(&org)? {
                outdated.push((org, Stale::Schema));
                continue;
            }
            let lacking = match counted.model() {
                Some(_) => counted.without_model(&org)?,
                None => 0,
            };
            if lacking > 0 {
                outdated.push((org, Stale::Model(lacking)));
            }
        }
        Ok::<_, knowledge_search::SearchError>(outdated)
    })
    .await
    .map_err(std::io::Error::other)?
    .map_err(std::io::Error::other)?;
    let mut queued = Vec::new();
    for (org, why) in outdated {
        let Ok(org) = OrgId::parse(&org) else {
            continue;
        };
        documents
            .reindex(&knowledge_core::admin::Admin::operator(org.clone()))
            .await?;
        if why == Stale::Schema {
            let marked = index.clone();
            let id = org.as_str().to_owned();
            tokio::task::spawn_blocking(move || marked.requeued(&id))
                .await
                .map_err(std::io::Error::other)?
                .map_err(std::io::Error::other)?;
        }
        queued.push((org, why));
    }
    Ok(queued)
}

/// The parser the workers read files with: the default bounds.
pub fn parser() -> Arc<Ingest> {
    Arc::new(Ingest::default())
}

/// Runs `count` workers until the process ends.
pub fn spawn(workers: &Workers, count: usize) -> Vec<tokio::task::JoinHandle<()>> {
    (0..count)
        .map(|_| tokio::spawn(workers.clone().run()))
        .collect()
}

/// Files of a folder read at most: a folder of more is a mistake (a home directory, say).
pub const FOLDER_FILES_MAX: usize = 10_000;

/// A folder the local service keeps a collection of the organisation `org` in step with
/// (`serve --docs DIR`): at start, and again every [`RESCAN_EVERY`] while it serves.
#[derive(Clone, Debug)]
pub struct Folder {
    pub dir: PathBuf,
    pub org: OrgId,
}

/// How often a synced folder is read again.
pub const RESCAN_EVERY: Duration = Duration::from_secs(60);

impl Folder {
    /// The collection's name: the folder's own.
    pub fn name(&self) -> String {
        let name = self
            .dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned());
        name.filter(|n| !n.is_empty())
            .unwrap_or_else(|| "docs".to_owned())
    }

    /// Brings the folder's collection in step with the files now in it.
    ///
    /// # Errors
    /// The folder cannot be read, or the store or the originals failed.
    pub async fn sync(&self, documents: &Documents) -> Result<Synced, LocalError> {
        let collection = documents.folder_collection(&self.org, &self.name()).await?;
        let (dir, max) = (self.dir.clone(), documents.limits().max_file_bytes);
        let (files, too_large) = tokio::task::spawn_blocking(move || read_files(&dir, max))
            .await
            .map_err(std::io::Error::other)??;
        let mut synced = documents.sync_folder(&collection, files).await?;
        let reason = format!("the file is larger than {max} bytes");
        (synced.refused).extend(too_large.into_iter().map(|path| (path, reason.clone())));
        Ok(synced)
    }

    /// Syncs every [`RESCAN_EVERY`] until aborted; a failed sync is logged and the next tries
    /// again.
    pub async fn rescan(self, documents: Documents) {
        let mut ticks = tokio::time::interval(RESCAN_EVERY);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        ticks.tick().await;
        loop {
            ticks.tick().await;
            match self.sync(&documents).await {
                Ok(synced)
                    if synced
                        != Synced {
                            unchanged: synced.unchanged,
                            ..Synced::default()
                        } =>
                {
                    tracing::info!(?synced, dir = %self.dir.display(), "the docs folder changed");
                }
                Ok(_) => {}
                Err(e) => {
                    tracing::error!(error = %Chain(&e), dir = %self.dir.display(), "could not sync the docs folder")
                }
            }
        }
    }
}

/// The files under `dir` in a format the service reads, by path, and the paths of those
/// larger than `max_bytes` (not read): hidden entries and links are skipped, and at most
/// [`FOLDER_FILES_MAX`] files are read.
fn read_files(dir: &Path, max_bytes: u64) -> std::io::Result<(Vec<FolderFile>, Vec<String>)> {
    let (mut files, mut too_large) = (Vec::new(), Vec::new());
    let mut pending = vec![dir.to_owned()];
    while let Some(at) = pending.pop() {
        let mut entries: Vec<_> = std::fs::read_dir(&at)?.collect::<Result<_, _>>()?;
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            let name = entry.file_name().to_string_lossy().into_owned();
            let kind = entry.file_type()?;
            if name.starts_with('.') || kind.is_symlink() {
                continue;
            }
            if kind.is_dir() {
                pending.push(entry.path());
                continue;
            }
            if !kind.is_file() || Format::of_name(&name).is_err() {
                continue;
            }
            let relative = entry.path();
            let relative = relative.strip_prefix(dir).unwrap_or(&relative);
            let path = (relative.components())
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/");
            if entry.metadata()?.len() > max_bytes {
                too_large.push(path);
                continue;
            }
            let bytes = Bytes::from(std::fs::read(entry.path())?);
            files.push(FolderFile { path, bytes });
            if files.len() == FOLDER_FILES_MAX {
                return Ok((files, too_large));
            }
        }
    }
    Ok((files, too_large))
}
