//! `FolderOriginals`: the core's `Originals` port on the local file system, a file per
//! generation of each document under the data directory's `documents` folder.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use bytes::Bytes;
use knowledge_core::ids::{DocumentId, OrgId};
use knowledge_core::ports::{Originals, OriginalsError};
use tokio::io::AsyncWriteExt;

/// The folder of the data directory that holds the originals.
pub const ORIGINALS_FOLDER: &str = "documents";

/// What a file being written is named after its generation, until it is renamed into place.
const PARTIAL: &str = ".partial-";

/// Tells apart the partial files of concurrent writes of one process.
static WRITES: AtomicU64 = AtomicU64::new(0);

/// The originals as files: `<root>/<org>/<document>/<generation>`.
///
/// Every path is made of the ids' text and a generation's digits: an [`OrgId`] is letters,
/// digits, `_` and `-`, a [`DocumentId`] `doc_` and hex digits, so no path can name `..`, a
/// separator or anything outside `root`. On a file system that ignores case, two
/// organisations whose ids differ only in case share a folder; their documents' ids, random,
/// still keep their files apart.
#[derive(Clone, Debug)]
pub struct FolderOriginals {
    root: PathBuf,
}

impl FolderOriginals {
    /// The originals under `root`, created as needed.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// The local service's originals: `<data_dir>/documents`.
    pub fn in_data_dir(data_dir: &Path) -> Self {
        Self::new(data_dir.join(ORIGINALS_FOLDER))
    }

    /// Where the originals are.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn folder(&self, org: &OrgId, document: &DocumentId) -> PathBuf {
        self.root.join(org.as_str()).join(document.as_str())
    }
}

#[async_trait]
impl Originals for FolderOriginals {
    /// Writes `bytes` under a name of its own in the document's folder, syncs it, renames it
    /// over the generation's file and syncs the folders: a reader sees the whole previous file
    /// or the whole new one, and after a crash there is the one or the other, never a torn one.
    /// A partial file a crash left is removed by the next [`Originals::delete_older`] or
    /// [`Originals::delete`]. A put racing a delete of the same document may be undone by it.
    async fn put(
        &self, org: &OrgId, document: &DocumentId, generation: u64, bytes: Bytes,
    ) -> Result<(), OriginalsError> {
        let folder = self.folder(org, document);
        tokio::fs::create_dir_all(&folder)
            .await
            .map_err(failed(&folder))?;
        let write = WRITES.fetch_add(1, Ordering::Relaxed);
        let partial = folder.join(format!(
            "{generation}{PARTIAL}{}-{write}",
            std::process::id()
        ));
        let path = folder.join(generation.to_string());
        let written = async {
            write_synced(&partial, &bytes).await?;
            tokio::fs::rename(&partial, &path).await
        }
        .await;
        if let Err(error) = written {
            let _ = tokio::fs::remove_file(&partial).await;
            return Err(failed(&path)(error));
        }
        sync_folder(&folder).await.map_err(failed(&folder))?;
        if let Some(org_folder) = folder.parent() {
            sync_folder(org_folder).await.map_err(failed(org_folder))?;
        }
        Ok(())
    }

    async fn get(
        &self, org: &OrgId, document: &DocumentId, generation: u64,
    ) -> Result<Option<Bytes>, OriginalsError> {
        let path = self.folder(org, document).join(generation.to_string());
        match tokio::fs::read(&path).await {
            Ok(bytes) => Ok(Some(Bytes::from(bytes))),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(failed(&path)(e)),
        }
    }

    /// Removes the document's folder; none is fine.
    async fn delete(&self, org: &OrgId, document: &DocumentId) -> Result<(), OriginalsError> {
        let folder = self.folder(org, document);
        match tokio::fs::remove_dir_all(&folder).await {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(failed(&folder)(e)),
            _ => Ok(()),
        }
    }

    /// Removes the files of generations before `generation`, a crash's partial ones with them;
    /// files this adapter did not name are left.
    async fn delete_older(
        &self, org: &OrgId, document: &DocumentId, generation: u64,
    ) -> Result<(), OriginalsError> {
        let folder = self.folder(org, document);
        let mut entries = match tokio::fs::read_dir(&folder).await {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(failed(&folder)(e)),
        };
        while let Some(entry) = entries.next_entry().await.map_err(failed(&folder))? {
            let name = entry.file_name();
            let Some(older) = name.to_str().and_then(generation_of) else {
                continue;
            };
            if older >= generation {
                continue;
            }
            let path = entry.path();
            match tokio::fs::remove_file(&path).await {
                Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(failed(&path)(e)),
                _ => {}
            }
        }
        Ok(())
    }
}

/// The generation a file of a document's folder holds (`7`), or was being written for
/// (`7.partial-…`).
fn generation_of(name: &str) -> Option<u64> {
    let digits = name.split_once(PARTIAL).map_or(name, |(digits, _)| digits);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Writes `bytes` to a new file at `path` (readable by its owner only) and syncs it.
async fn write_synced(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut options = tokio::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    options.mode(0o600);
    let mut file = options.open(path).await?;
    file.write_all(bytes).await?;
    file.sync_all().await
}

/// Syncs a folder's entries, so that a file renamed into it survives a crash.
async fn sync_folder(folder: &Path) -> io::Result<()> {
    #[cfg(unix)]
    tokio::fs::File::open(folder).await?.sync_all().await?;
    #[cfg(not(unix))]
    let _ = folder;
    Ok(())
}

/// An I/O error on `path` as the port's error.
fn failed(path: &Path) -> impl Fn(io::Error) -> OriginalsError + '_ {
    move |source| {
        OriginalsError(Box::new(FileError {
            path: path.to_owned(),
            source,
        }))
    }
}

/// The originals' file or folder that failed.
#[derive(Debug, thiserror::Error)]
#[error("the originals' file {path}")]
struct FileError {
    path: PathBuf,
    #[source]
    source: io::Error,
}
