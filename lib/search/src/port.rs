//! The core's `PassageIndex` port on this crate's tantivy index: each call on the blocking
//! pool, the core's ids in, its passages out.

use std::sync::Arc;

use async_trait::async_trait;
use knowledge_core::domain::{FoundPassage, Passage};
use knowledge_core::ids::{CollectionId, DocumentId, OrgId};
use knowledge_core::ports::{self, IndexError};

use crate::{DocumentKey, Hit, NewPassage, PassageIndex, SearchError};

/// [`ports::PassageIndex`] on a shared [`PassageIndex`]. Cloning shares the index. Every id the
/// core types is one [`PassageIndex`] takes (letters, digits, `_` and `-`), so none is refused
/// as [`SearchError::BadId`].
#[derive(Clone)]
pub struct TantivyIndex(Arc<PassageIndex>);

impl TantivyIndex {
    /// The port on `index`, which callers may keep using directly (the benchmarks, a rebuild).
    pub fn new(index: Arc<PassageIndex>) -> Self {
        Self(index)
    }

    /// The index this port writes and searches.
    pub fn index(&self) -> &Arc<PassageIndex> {
        &self.0
    }

    /// `call` on the index, on the blocking pool.
    async fn blocking<T, F>(&self, call: F) -> Result<T, IndexError>
    where
        T: Send + 'static,
        F: FnOnce(&PassageIndex) -> Result<T, SearchError> + Send + 'static,
    {
        let index = self.0.clone();
        tokio::task::spawn_blocking(move || call(&index))
            .await
            .map_err(|e| IndexError(e.into()))?
            .map_err(|e| IndexError(e.into()))
    }
}

#[async_trait]
impl ports::PassageIndex for TantivyIndex {
    /// As [`PassageIndex::replace`]: in one commit, and never over a newer generation (then
    /// `Ok` with nothing changed).
    async fn replace(
        &self, org: &OrgId, collection: &CollectionId, document: &DocumentId, generation: u64,
        passages: Vec<Passage>,
    ) -> Result<(), IndexError> {
        let (org, collection, document) = (org.clone(), collection.clone(), document.clone());
        let written = self
            .blocking(move |index| {
                let key = DocumentKey {
                    collection: collection.as_str(),
                    document: document.as_str(),
                    generation,
                };
                let passages: Vec<NewPassage<'_>> = passages
                    .iter()
                    .map(|p| NewPassage {
                        headings: &p.headings,
                        page: p.page,
                        text: &p.text,
                    })
                    .collect();
                index.replace(org.as_str(), key, &passages)
            })
            .await?;
        if !written {
            tracing::debug!(
                generation,
                "the index holds a newer generation of the document: left as it is"
            );
        }
        Ok(())
    }

    async fn remove(&self, org: &OrgId, document: &DocumentId) -> Result<(), IndexError> {
        let (org, document) = (org.clone(), document.clone());
        self.blocking(move |index| index.remove(org.as_str(), document.as_str()))
            .await
    }

    async fn remove_collection(
        &self, org: &OrgId, collection: &CollectionId,
    ) -> Result<(), IndexError> {
        let (org, collection) = (org.clone(), collection.clone());
        self.blocking(move |index| index.remove_collection(org.as_str(), collection.as_str()))
            .await
    }

    /// As [`PassageIndex::search`]; a hit whose ids are not the core's (written by something
    /// else than this port) is left out with a warning.
    async fn search(
        &self, org: &OrgId, query: &str, collections: &[CollectionId], limit: usize,
    ) -> Result<Vec<FoundPassage>, IndexError> {
        let org = org.clone();
        let query = query.to_owned();
        let collections: Vec<String> = collections.iter().map(|c| c.as_str().to_owned()).collect();
        let hits = self
            .blocking(move |index| {
                let collections: Vec<&str> = collections.iter().map(String::as_str).collect();
                index.search(org.as_str(), &query, &collections, limit)
            })
            .await?;
        Ok(hits.into_iter().filter_map(found).collect())
    }

    async fn passages(
        &self, org: &OrgId, document: &DocumentId, generation: u64, from: u32, limit: usize,
    ) -> Result<Vec<FoundPassage>, IndexError> {
        self.window(org, document, generation, from, limit).await
    }
}

impl TantivyIndex {
    /// As [`PassageIndex::passages`].
    async fn window(
        &self, org: &OrgId, document: &DocumentId, generation: u64, from: u32, limit: usize,
    ) -> Result<Vec<FoundPassage>, IndexError> {
        let (org, document) = (org.clone(), document.clone());
        let hits = self
            .blocking(move |index| {
                index.passages(org.as_str(), document.as_str(), generation, from, limit)
            })
            .await?;
        Ok(hits.into_iter().filter_map(found).collect())
    }
}

/// A hit as the core's passage; `None`, with a warning, when its ids do not parse.
fn found(hit: Hit) -> Option<FoundPassage> {
    let (Ok(collection), Ok(document)) = (
        CollectionId::parse(&hit.collection),
        DocumentId::parse(&hit.document),
    ) else {
        tracing::warn!(
            collection = %hit.collection,
            document = %hit.document,
            "a passage of the index whose ids are not the core's is left out"
        );
        return None;
    };
    Some(FoundPassage {
        collection,
        document,
        generation: hit.generation,
        ordinal: hit.ordinal,
        headings: hit.headings,
        page: hit.page,
        text: hit.text,
        score: hit.score,
    })
}
