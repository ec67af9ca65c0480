//! `RecordingIndex`: the `PassageIndex` port as a record of what it was told, for the
//! use-case tests: the replacements and removals it took, and a switch that makes it fail.
//! It finds nothing.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;

use crate::domain::{FoundPassage, Passage};
use crate::ids::{CollectionId, DocumentId, OrgId};
use crate::ports::{BackendError, IndexError, PassageIndex};

/// An index that records, and searches nothing.
#[derive(Default)]
pub struct RecordingIndex {
    replaced: Mutex<Vec<(DocumentId, u64, usize)>>,
    removed: Mutex<Vec<DocumentId>>,
    failing: AtomicBool,
}

impl RecordingIndex {
    /// Each replacement taken so far: the document, its generation and how many passages.
    pub fn replaced(&self) -> Vec<(DocumentId, u64, usize)> {
        self.replaced.lock().expect("index lock").clone()
    }

    /// Each document whose passages it was told to remove, in order.
    pub fn removed(&self) -> Vec<DocumentId> {
        self.removed.lock().expect("index lock").clone()
    }

    /// From now on (`true`) or no longer, a replacement fails as an index that is down.
    pub fn fail(&self, failing: bool) {
        self.failing.store(failing, Ordering::SeqCst);
    }
}

#[async_trait]
impl PassageIndex for RecordingIndex {
    async fn replace(
        &self, _: &OrgId, _: &CollectionId, document: &DocumentId, generation: u64,
        passages: Vec<Passage>,
    ) -> Result<(), IndexError> {
        if self.failing.load(Ordering::SeqCst) {
            return Err(IndexError(BackendError::from("the index is down")));
        }
        let entry = (document.clone(), generation, passages.len());
        self.replaced.lock().expect("index lock").push(entry);
        Ok(())
    }
    async fn remove(&self, _: &OrgId, document: &DocumentId) -> Result<(), IndexError> {
        self.removed
            .lock()
            .expect("index lock")
            .push(document.clone());
        Ok(())
    }
    async fn remove_collection(&self, _: &OrgId, _: &CollectionId) -> Result<(), IndexError> {
        Ok(())
    }
    async fn search(
        &self, _: &OrgId, _: &str, _: &[CollectionId], _: usize,
    ) -> Result<Vec<FoundPassage>, IndexError> {
        Ok(Vec::new())
    }
    async fn passages(
        &self, _: &OrgId, _: &DocumentId, _: u64, _: u32, _: usize,
    ) -> Result<Vec<FoundPassage>, IndexError> {
        Ok(Vec::new())
    }
}
