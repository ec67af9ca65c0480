//! The organisation's documents in the local service: originals under the data directory
//! (`documents/`), the passages' index on disk beside them (`index/`), and the workers that
//! index queued documents in the process.

use std::path::Path;
use std::sync::Arc;

use knowledge_assembly::DocumentParts;
use knowledge_core::documents::{DocumentLimits, Workers};
use knowledge_ingest::Ingest;
use knowledge_search::{PassageIndex, TantivyIndex};

use crate::FolderOriginals;

/// Workers indexing documents at once, by default: parsing is CPU-bound, and the machine the
/// local service runs on also answers its requests.
pub const WORKERS: usize = 2;

/// Where the documents of the service over `data_dir` are kept, with `limits`.
pub fn parts(data_dir: &Path, limits: DocumentLimits) -> DocumentParts {
    DocumentParts {
        originals: Arc::new(FolderOriginals::in_data_dir(data_dir)),
        index: Arc::new(TantivyIndex::new(Arc::new(PassageIndex::on_disk(
            data_dir.join("index"),
        )))),
        limits,
    }
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
