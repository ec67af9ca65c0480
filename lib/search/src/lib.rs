//! The passages' full-text index. One tantivy index per organisation (a folder of its own under
//! the index's root, or in memory), so that one organisation's index is never opened for
//! another's request and can be copied or rebuilt alone.
//!
//! A document's passages are replaced in one commit ([`PassageIndex::replace`]): a search sees
//! all of a document's new passages or none of them, never half, and never an older
//! generation's over a newer one's (a slower worker's). Each passage carries its document's
//! generation, so that whoever reads a hit can check it against the document as stored now:
//! the index may lag behind the store (a copy on another machine, a replace still being
//! committed), and the caller's check of each hit's document and access is what a member is
//! shown (`docs/design/documents.md`, "the index is a cache; the store is the truth").
//! [`TantivyIndex`] is the core's `PassageIndex` port on it.

mod analyzer;
mod dense;
mod embedder;
mod org;
mod port;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

pub use analyzer::{ANALYZER, analyzer, words};
pub use embedder::{EmbedError, Embedder};
pub use port::TantivyIndex;

use crate::org::OrgIndex;

/// Why the index could not answer.
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    /// An id that cannot name a folder (only letters, digits, `_` and `-` can).
    #[error("{0:?} is not an id the index takes")]
    BadId(String),
    #[error("the index folder {path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the index")]
    Index(#[from] tantivy::TantivyError),
    #[error("the passages' vectors")]
    Embed(#[from] EmbedError),
}

/// A document as the index knows it.
#[derive(Clone, Copy, Debug)]
pub struct DocumentKey<'a> {
    pub collection: &'a str,
    pub document: &'a str,
    /// Which upload of the document its passages came from.
    pub generation: u64,
}

/// A passage to index: its place in the document, the headings it sits under, its page.
#[derive(Clone, Debug)]
pub struct NewPassage<'a> {
    pub headings: &'a [String],
    pub page: Option<u32>,
    pub text: &'a str,
}

/// A passage a search found.
#[derive(Clone, Debug, PartialEq)]
pub struct Hit {
    pub collection: String,
    pub document: String,
    pub generation: u64,
    /// Its place among its document's passages, from 0.
    pub ordinal: u32,
    pub headings: Vec<String>,
    pub page: Option<u32>,
    pub text: String,
    /// Higher is better, comparable within one search only: BM25, or with a model the fused
    /// score of the two rankings (reciprocal rank).
    pub score: f32,
}

/// An organisation's index as committed on disk: what a copy elsewhere needs to open it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Committed {
    /// The text of its `meta.json`, which names its segments.
    pub meta: String,
    /// The files of its segments, by name, in its folder: each written once and never changed
    /// (a segment's deletions are a new file).
    pub files: std::collections::BTreeSet<String>,
}

/// Every organisation's index.
pub struct PassageIndex {
    /// Where each organisation's folder is; `None` keeps every index in memory.
    root: Option<PathBuf>,
    orgs: Mutex<HashMap<String, Arc<OrgIndex>>>,
    /// The model that makes passages' and queries' vectors; without one, words alone.
    embedder: Option<Arc<dyn Embedder>>,
}

impl PassageIndex {
    /// The indexes under `root`, one folder per organisation, created as needed.
    pub fn on_disk(root: impl Into<PathBuf>) -> Self {
        Self {
            root: Some(root.into()),
            orgs: Mutex::default(),
            embedder: None,
        }
    }

    /// Indexes kept in memory only, for tests.
    pub fn in_memory() -> Self {
        Self {
            root: None,
            orgs: Mutex::default(),
            embedder: None,
        }
    }

    /// The same indexes, searched by meaning as well as by words: every passage written from now
    /// on gets `embedder`'s vector, and every search fuses the two rankings. Passages written
    /// without a vector, or with another model's, are found by their words alone until they
    /// are written again (`knowledge documents reindex`).
    pub fn with_embedder(mut self, embedder: Arc<dyn Embedder>) -> Self {
        self.embedder = Some(embedder);
        self
    }

    /// The name of the model searches use, if any.
    pub fn model(&self) -> Option<&str> {
        self.embedder.as_deref().map(Embedder::model)
    }

    /// The organisations whose index is on disk under the root, by id. Blocking.
    ///
    /// # Errors
    /// The root cannot be read (a missing root has none).
    pub fn orgs(&self) -> Result<Vec<String>, SearchError> {
        let Some(root) = &self.root else {
            return Ok(Vec::new());
        };
        let entries = match std::fs::read_dir(root) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => {
                return Err(SearchError::Io {
                    path: root.clone(),
                    source,
                });
            }
        };
        let mut orgs: Vec<String> = (entries.filter_map(Result::ok))
            .filter(|e| e.path().is_dir())
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|name| checked(name).is_ok())
            .collect();
        orgs.sort();
        Ok(orgs)
    }

    /// Whether `org`'s folder held an index of another schema (a version of the service
    /// before this one), made anew when this or an earlier process opened it, and its documents
    /// are not yet queued again ([`Self::requeued`]). Blocking.
    ///
    /// # Errors
    /// The index cannot be opened.
    pub fn was_reset(&self, org: &str) -> Result<bool, SearchError> {
        Ok(self.org(org)?.reset)
    }

    /// Records that `org`'s documents were queued again after its index was made anew, so that
    /// [`Self::was_reset`] answers `false` from the next start on. Idempotent. Blocking.
    ///
    /// # Errors
    /// The mark cannot be removed.
    pub fn requeued(&self, org: &str) -> Result<(), SearchError> {
        let Some(folder) = self.folder(org)? else {
            return Ok(());
        };
        let mark = folder.join(org::RESET_MARK);
        match std::fs::remove_file(&mark) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(source) => Err(SearchError::Io { path: mark, source }),
        }
    }

    /// How many of `org`'s passages have no vector of the model searches use (all of them
    /// without a model): those found by their words alone until written again. Blocking.
    ///
    /// # Errors
    /// The index cannot be opened or read.
    pub fn without_model(&self, org: &str) -> Result<u64, SearchError> {
        self.org(org)?.without_model(self.model())
    }

    /// `org`'s folder, for an index on disk.
    ///
    /// # Errors
    /// An organisation id that cannot name a folder.
    pub fn folder(&self, org: &str) -> Result<Option<PathBuf>, SearchError> {
        checked(org)?;
        Ok(self.root.as_ref().map(|root| root.join(org)))
    }

    /// Drops `org`'s open index, its reader and any writer (whose uncommitted changes are
    /// lost), so that the next call opens its folder again: for a copy whose folder is
    /// brought up to date from elsewhere (`knowledge-s3`). Blocking: call it off the async
    /// workers.
    pub fn close(&self, org: &str) {
        let closed = (self.orgs.lock().unwrap_or_else(|p| p.into_inner())).remove(org);
        drop(closed);
    }

    /// Ends `org`'s writer once its merges are done and answers its index as committed on
    /// disk, for a copy elsewhere. Blocking: call it off the async workers.
    ///
    /// # Errors
    /// The index is in memory, or cannot be read.
    pub fn settle(&self, org: &str) -> Result<Committed, SearchError> {
        self.org(org)?.settle()
    }

    /// `org`'s index, opened (or created) once.
    fn org(&self, org: &str) -> Result<Arc<OrgIndex>, SearchError> {
        checked(org)?;
        let mut orgs = self.orgs.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(index) = orgs.get(org) {
            return Ok(index.clone());
        }
        let folder = self.root.as_ref().map(|root| root.join(org));
        let index = Arc::new(OrgIndex::open(folder.as_deref())?);
        orgs.insert(org.to_owned(), index.clone());
        Ok(index)
    }

    /// Replaces `document`'s passages with `passages`, in one commit: a search sees the old
    /// ones or the new ones, never a mix and never half. With no passages, removes them.
    /// Never goes back: when the index holds passages of the document of a generation after
    /// `document.generation` (a slower worker's older upload), nothing changes and the answer
    /// is `false`. The check and the write are made under the organisation's one writer, so no
    /// other replace of this process comes between them. The same or a later generation
    /// replaces. Blocking: call it off the async workers.
    ///
    /// # Errors
    /// The index cannot be opened or written; nothing is changed then.
    pub fn replace(
        &self, org: &str, document: DocumentKey<'_>, passages: &[NewPassage<'_>],
    ) -> Result<bool, SearchError> {
        Ok(self.replace_many(org, &[(document, passages)])? == 1)
    }

    /// Replaces several documents' passages in one commit, each as [`Self::replace`] would
    /// (one whose index holds a newer generation is left as it is), answering how many were
    /// written: for an indexer that has several documents ready, a commit costs far more than
    /// a passage.
    ///
    /// With a model, the passages' vectors are made first, outside the writer's lock.
    ///
    /// # Errors
    /// As [`Self::replace`], and the model failing; no document is changed then.
    pub fn replace_many(
        &self, org: &str, documents: &[(DocumentKey<'_>, &[NewPassage<'_>])],
    ) -> Result<usize, SearchError> {
        for (key, _) in documents {
            checked(key.collection)?;
            checked(key.document)?;
        }
        let index = self.org(org)?;
        let vectors = self.vectors(documents)?;
        let written: Vec<org::Written<'_>> = (documents.iter())
            .zip(&vectors)
            .map(|(&(key, passages), vectors)| (key, passages, &vectors[..]))
            .collect();
        index.replace(&written, self.model())
    }

    /// One vector per passage of each document, by the model (none without one). A passage is
    /// embedded as its headings, then its text: a heading says what the passage is about.
    fn vectors(
        &self, documents: &[(DocumentKey<'_>, &[NewPassage<'_>])],
    ) -> Result<Vec<Vec<Vec<f32>>>, SearchError> {
        let Some(embedder) = &self.embedder else {
            return Ok(vec![Vec::new(); documents.len()]);
        };
        let texts: Vec<String> = (documents.iter())
            .flat_map(|(_, passages)| passages.iter())
            .map(|p| {
                let mut text = p.headings.join("\n");
                if !text.is_empty() {
                    text.push('\n');
                }
                text.push_str(p.text);
                text
            })
            .collect();
        let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
        let mut made = embedder.embed(&texts)?.into_iter();
        Ok((documents.iter())
            .map(|(_, passages)| made.by_ref().take(passages.len()).collect())
            .collect())
    }

    /// Removes every passage of `document`, in one commit. Idempotent.
    ///
    /// # Errors
    /// As [`Self::replace`].
    pub fn remove(&self, org: &str, document: &str) -> Result<(), SearchError> {
        checked(document)?;
        self.org(org)?.remove(document)
    }

    /// Removes every passage of every document of `collection`, in one commit. Idempotent.
    ///
    /// # Errors
    /// As [`Self::replace`].
    pub fn remove_collection(&self, org: &str, collection: &str) -> Result<(), SearchError> {
        checked(collection)?;
        self.org(org)?.remove_collection(collection)
    }

    /// The best passages for `query` among the documents of `collections`, best first, at most
    /// `limit`. No collection, no hit. Blocking: call it off the async workers.
    ///
    /// # Errors
    /// The index cannot be opened or read.
    pub fn search(
        &self, org: &str, query: &str, collections: &[&str], limit: usize,
    ) -> Result<Vec<Hit>, SearchError> {
        if collections.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let index = self.org(org)?;
        let meaning = self.embedder.as_ref().and_then(|embedder| {
            match embedder.embed(&[query]) {
                Ok(mut vectors) => vectors.pop().map(|v| (embedder.model(), Arc::from(v))),
                Err(error) => {
                    tracing::warn!(error = %error, "the query could not be embedded: searched by its words alone");
                    None
                }
            }
        });
        index.search(query, meaning, collections, limit)
    }
}

impl PassageIndex {
    /// The passages of `document`'s `generation` at places `from` to `from + limit - 1`, in
    /// order: a window of the document for a reader. Blocking: call it off the async workers.
    ///
    /// # Errors
    /// The index cannot be opened or read.
    pub fn passages(
        &self, org: &str, document: &str, generation: u64, from: u32, limit: usize,
    ) -> Result<Vec<Hit>, SearchError> {
        checked(document)?;
        if limit == 0 {
            return Ok(Vec::new());
        }
        self.org(org)?.passages(document, generation, from, limit)
    }
}

/// `id` if it can name a folder and a term: letters, digits, `_` and `-`, 1 to 128 of them.
fn checked(id: &str) -> Result<&str, SearchError> {
    let fine = (1..=128).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if fine {
        Ok(id)
    } else {
        Err(SearchError::BadId(id.to_owned()))
    }
}
