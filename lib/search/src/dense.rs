//! The dense half of a search and the fusion of the two halves. Each passage's vector is kept
//! in its stored document, beside the name of the model that made it; a warmer reads a
//! segment's vectors into memory once, when a reload first sees the segment (segments never
//! change), so that a query costs one dot product per passage of the collections searched and
//! no read of the store. The two rankings are fused by reciprocal rank.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use tantivy::index::SegmentId;
use tantivy::schema::{Field, Value as _};
use tantivy::{
    DocAddress, DocId, Searcher, SearcherGeneration, SegmentReader, TantivyDocument, Warmer,
};

/// RRF's constant: a passage at rank `r` of a ranking adds `1 / (K + r)`. 60 is the value of the
/// method's paper (Cormack et al., 2009), kept by every engine that offers it; it was not tuned.
const RRF_K: f32 = 60.0;

/// A vector as stored: its numbers as little-endian `f32`s.
pub(crate) fn to_bytes(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// One segment's vectors, by document id; a document without one (indexed while no model was
/// loaded) has `None`.
struct SegmentVectors {
    rows: Vec<Option<Box<[f32]>>>,
}

impl SegmentVectors {
    fn read(segment: &SegmentReader, field: Field) -> tantivy::Result<Self> {
        let store = segment.get_store_reader(1)?;
        let mut rows = Vec::with_capacity(segment.max_doc() as usize);
        for doc in 0..segment.max_doc() {
            let stored: TantivyDocument = store.get(doc)?;
            let row = (stored.get_first(field).and_then(|v| v.as_bytes())).map(|bytes| {
                bytes
                    .chunks_exact(4)
                    .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                    .collect()
            });
            rows.push(row);
        }
        Ok(Self { rows })
    }

    /// The cosine of `doc`'s vector and `query` (both of unit length); `-inf` for none or one
    /// of other dimensions.
    fn score(&self, doc: DocId, query: &[f32]) -> f32 {
        match self.rows.get(doc as usize) {
            Some(Some(row)) if row.len() == query.len() => {
                row.iter().zip(query).map(|(a, b)| a * b).sum()
            }
            _ => f32::NEG_INFINITY,
        }
    }
}

/// The vectors of every live segment of one organisation's index.
pub(crate) struct Vectors {
    field: Field,
    segments: RwLock<HashMap<SegmentId, Arc<SegmentVectors>>>,
}

impl Vectors {
    pub(crate) fn new(field: Field) -> Self {
        Self {
            field,
            segments: RwLock::default(),
        }
    }

    /// `segment`'s vectors, read now if no warmer has.
    fn of(&self, segment: &SegmentReader) -> tantivy::Result<Arc<SegmentVectors>> {
        let id = segment.segment_id();
        if let Some(found) = (self.segments.read().unwrap_or_else(|p| p.into_inner())).get(&id) {
            return Ok(found.clone());
        }
        let read = Arc::new(SegmentVectors::read(segment, self.field)?);
        let mut segments = self.segments.write().unwrap_or_else(|p| p.into_inner());
        Ok(segments.entry(id).or_insert(read).clone())
    }

    /// The passages `filter` finds, best first by their vector's cosine with `query`, at most
    /// `depth`.
    pub(crate) fn rank(
        self: &Arc<Self>, searcher: &Searcher, filter: &dyn tantivy::query::Query,
        query: Arc<[f32]>, depth: usize,
    ) -> tantivy::Result<Vec<DocAddress>> {
        let vectors = self.clone();
        let collector = tantivy::collector::TopDocs::with_limit(depth).tweak_score(
            move |segment: &SegmentReader| {
                let query = query.clone();
                let read = vectors.of(segment);
                if let Err(error) = &read {
                    tracing::warn!(error = %error, "a segment's vectors could not be read: it is searched by its words alone");
                }
                move |doc: DocId, _: f32| match &read {
                    Ok(segment) => segment.score(doc, &query),
                    Err(_) => f32::NEG_INFINITY,
                }
            },
        );
        let found = searcher.search(filter, &collector)?;
        Ok((found.into_iter())
            .filter(|(score, _)| score.is_finite())
            .map(|(_, address)| address)
            .collect())
    }
}

impl Warmer for Vectors {
    fn warm(&self, searcher: &Searcher) -> tantivy::Result<()> {
        for segment in searcher.segment_readers() {
            self.of(segment)?;
        }
        Ok(())
    }

    fn garbage_collect(&self, live: &[&SearcherGeneration]) {
        let mut segments = self.segments.write().unwrap_or_else(|p| p.into_inner());
        segments.retain(|id, _| live.iter().any(|g| g.segments().contains_key(id)));
    }
}

/// The rankings fused by reciprocal rank, best first, at most `limit`, with their fused scores.
/// Ties keep the order of the first ranking that holds them.
pub(crate) fn fuse(rankings: &[&[DocAddress]], limit: usize) -> Vec<(f32, DocAddress)> {
    let mut scores: HashMap<DocAddress, (f32, usize)> = HashMap::new();
    let mut seen = 0;
    for ranking in rankings {
        for (rank, address) in ranking.iter().enumerate() {
            let entry = scores.entry(*address).or_insert_with(|| {
                seen += 1;
                (0.0, seen)
            });
            entry.0 += 1.0 / (RRF_K + rank as f32 + 1.0);
        }
    }
    let mut fused: Vec<(f32, usize, DocAddress)> = scores
        .into_iter()
        .map(|(a, (s, first))| (s, first, a))
        .collect();
    fused.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    fused.truncate(limit);
    fused.into_iter().map(|(s, _, a)| (s, a)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(doc: DocId) -> DocAddress {
        DocAddress::new(0, doc)
    }

    #[test]
    fn a_passage_both_rankings_hold_comes_before_one_only_the_first_holds() {
        let words = [at(1), at(2), at(3)];
        let meaning = [at(3), at(4)];
        let fused = fuse(&[&words, &meaning], 10);
        let order: Vec<DocAddress> = fused.iter().map(|(_, a)| *a).collect();
        assert_eq!(order, [at(3), at(1), at(2), at(4)]);
        assert!(fused[0].0 > fused[1].0);
    }

    #[test]
    fn fusion_answers_at_most_the_limit() {
        let words = [at(1), at(2), at(3)];
        assert_eq!(fuse(&[&words], 2).len(), 2);
    }

    #[test]
    fn a_vector_of_other_dimensions_never_matches() {
        let segment = SegmentVectors {
            rows: vec![Some(vec![1.0, 0.0].into()), None, Some(vec![1.0].into())],
        };
        assert_eq!(segment.score(0, &[1.0, 0.0]), 1.0);
        assert_eq!(segment.score(1, &[1.0, 0.0]), f32::NEG_INFINITY);
        assert_eq!(segment.score(2, &[1.0, 0.0]), f32::NEG_INFINITY);
        assert_eq!(segment.score(9, &[1.0, 0.0]), f32::NEG_INFINITY);
    }
}
