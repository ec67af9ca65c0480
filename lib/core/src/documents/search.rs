//! What a member reads: search over the collections they may open, a document and its
//! original. A search is answered in two steps: the index's candidates, filtered to the
//! collections the member may open now, then checked against the documents as stored (in one
//! batched read): a candidate whose document is gone, not indexed, or at another generation is
//! dropped. So the index may lag; access and existence never do.

use std::collections::{BTreeSet, HashMap};

use bytes::Bytes;

use crate::CoreError;
use crate::domain::{Collection, Document, DocumentStatus, FoundPassage};
use crate::ids::{CollectionId, DocumentId};
use crate::service::Principal;

use super::Documents;

/// Passages a search answers at most.
pub const SEARCH_LIMIT_MAX: usize = 50;
/// Passages of a document one read answers at most.
pub const PASSAGE_WINDOW_MAX: usize = 200;
/// Characters of a query at most.
pub const QUERY_MAX_CHARS: usize = 1_000;

/// A search as asked.
#[derive(Debug, Clone)]
pub struct SearchRequest {
    pub query: String,
    /// Within this collection only; all the reader may open when `None`.
    pub collection: Option<CollectionId>,
    /// 1 to [`SEARCH_LIMIT_MAX`].
    pub limit: usize,
}

/// A passage found, with what a reader needs to cite it.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchHit {
    pub passage: FoundPassage,
    pub document_name: String,
    pub collection_name: String,
}

impl Documents {
    /// The best passages for the request among what `reader` may open now, best first.
    /// Errors: 400 for an empty or too long query or a limit out of range; `NotFound` for a
    /// collection the reader may not open (or that does not exist).
    pub async fn search(
        &self, reader: &Principal, request: &SearchRequest,
    ) -> Result<Vec<SearchHit>, CoreError> {
        let query = request.query.trim();
        if query.is_empty() {
            return Err(CoreError::invalid("empty_field", "q must not be empty"));
        }
        if query.chars().count() > QUERY_MAX_CHARS {
            return Err(CoreError::invalid(
                "too_long",
                format!("q must be at most {QUERY_MAX_CHARS} characters"),
            ));
        }
        if !(1..=SEARCH_LIMIT_MAX).contains(&request.limit) {
            return Err(CoreError::invalid(
                "invalid_field",
                format!("limit must be from 1 to {SEARCH_LIMIT_MAX}"),
            ));
        }
        let mut open = self.openable(reader).await?;
        if let Some(only) = &request.collection {
            open.retain(|c| c.id == *only);
            if open.is_empty() {
                return Err(CoreError::NotFound("collection"));
            }
        }
        if open.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<CollectionId> = open.iter().map(|c| c.id.clone()).collect();
        let candidates = (self.index)
            .search(&reader.org, query, &ids, request.limit * 2)
            .await
            .map_err(CoreError::internal)?;
        self.checked_hits(reader, &open, candidates, request.limit)
            .await
    }

    /// Step 2: the candidates whose documents, as stored now, are indexed at the passage's
    /// generation in a collection the reader may open.
    async fn checked_hits(
        &self, reader: &Principal, open: &[Collection], candidates: Vec<FoundPassage>, limit: usize,
    ) -> Result<Vec<SearchHit>, CoreError> {
        let keys: BTreeSet<(CollectionId, DocumentId)> = candidates
            .iter()
            .map(|p| (p.collection.clone(), p.document.clone()))
            .collect();
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let keys: Vec<_> = keys.into_iter().collect();
        let stored = (self.stores.documents)
            .get_documents(&reader.org, &keys)
            .await?;
        let by_key: HashMap<(&CollectionId, &DocumentId), &Document> =
            stored.iter().map(|d| ((&d.collection, &d.id), d)).collect();
        let names: HashMap<&CollectionId, &str> =
            open.iter().map(|c| (&c.id, c.name.as_str())).collect();
        let mut hits = Vec::new();
        for passage in candidates {
            let Some(collection_name) = names.get(&passage.collection) else {
                continue;
            };
            let Some(document) = by_key.get(&(&passage.collection, &passage.document)) else {
                continue;
            };
            let current = document.status == DocumentStatus::Indexed
                && document.generation == passage.generation;
            if current {
                hits.push(SearchHit {
                    document_name: document.name.clone(),
                    collection_name: (*collection_name).to_owned(),
                    passage,
                });
            }
            if hits.len() == limit {
                break;
            }
        }
        Ok(hits)
    }

    /// A document `reader` may open, with its collection. Errors: `NotFound` for one that does
    /// not exist or that they may not open: the same answer, so that a closed collection's
    /// documents cannot be told from missing ones.
    pub async fn open_document(
        &self, reader: &Principal, collection: &CollectionId, id: &DocumentId,
    ) -> Result<(Collection, Document), CoreError> {
        let open = self.openable(reader).await?;
        let collection = (open.into_iter().find(|c| c.id == *collection))
            .ok_or(CoreError::NotFound("document"))?;
        let document = (self.stores.documents)
            .get_document(&reader.org, &collection.id, id)
            .await?
            .ok_or(CoreError::NotFound("document"))?;
        Ok((collection, document))
    }

    /// A window of a document `reader` may open: its passages at places `from` to
    /// `from + limit - 1` (at most [`PASSAGE_WINDOW_MAX`]), in order; none while it is not
    /// indexed. Errors: as [`Self::open_document`]; 400 for a limit out of range.
    pub async fn passages(
        &self, reader: &Principal, collection: &CollectionId, id: &DocumentId, from: u32,
        limit: usize,
    ) -> Result<(Collection, Document, Vec<FoundPassage>), CoreError> {
        if !(1..=PASSAGE_WINDOW_MAX).contains(&limit) {
            return Err(CoreError::invalid(
                "invalid_field",
                format!("limit must be from 1 to {PASSAGE_WINDOW_MAX}"),
            ));
        }
        let (collection, document) = self.open_document(reader, collection, id).await?;
        if document.status != DocumentStatus::Indexed {
            return Ok((collection, document, Vec::new()));
        }
        let passages = (self.index)
            .passages(&reader.org, id, document.generation, from, limit)
            .await
            .map_err(CoreError::internal)?;
        Ok((collection, document, passages))
    }

    /// A document's original as uploaded, for a reader who may open it: a link to fetch it
    /// from where the originals' store serves downloads, else its bytes. Errors: as
    /// [`Self::open_document`]; `NotFound` too while its generation is being uploaded (the
    /// original it names is not stored yet).
    pub async fn original(
        &self, reader: &Principal, collection: &CollectionId, id: &DocumentId,
    ) -> Result<(Document, Original), CoreError> {
        let (_, document) = self.open_document(reader, collection, id).await?;
        if document.status == DocumentStatus::Uploading {
            return Err(CoreError::NotFound("document"));
        }
        let link = (self.originals.download_link(&document).await).map_err(CoreError::internal)?;
        if let Some(url) = link {
            return Ok((document, Original::Link(url)));
        }
        let bytes = (self.originals)
            .get(&reader.org, id, document.generation)
            .await
            .map_err(CoreError::internal)?
            .ok_or(CoreError::NotFound("document"))?;
        Ok((document, Original::Bytes(bytes)))
    }
}

/// A document's original for a reader: its bytes, or where their browser fetches it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Original {
    Bytes(Bytes),
    /// An absolute URL, valid for minutes.
    Link(String),
}
