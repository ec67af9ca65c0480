//! The baseline of the same run: the abstracts made into passages by `knowledge_ingest` as an
//! uploaded Markdown document would be, indexed in memory by `knowledge_search` with BM25 alone
//! (commits of 256 documents, as an indexer draining its queue), each claim searched there.

use std::time::Instant;

use knowledge_ingest::{Bounds, Format, parse};
use knowledge_search::{DocumentKey, NewPassage, PassageIndex};

use crate::{Benchmark, Scores};

const ORG: &str = "org_scifact";
const COLLECTION: &str = "scifact";
/// Documents committed together.
const BATCH: usize = 256;

/// The index's ranking of documents for `query`: enough passages for `depth` documents.
pub fn ranked(
    index: &PassageIndex, org: &str, collections: &[&str], query: &str, depth: usize,
) -> Vec<String> {
    let hits = index
        .search(org, query, collections, depth * 4)
        .expect("searched");
    hits.into_iter().map(|h| h.document).collect()
}

pub fn run(bench: &Benchmark) -> Scores {
    let index = PassageIndex::in_memory();
    let parsed: Vec<(String, Vec<_>)> = (bench.corpus.iter())
        .map(|(id, title, text)| {
            let markdown = Benchmark::markdown(title, text);
            let passages = parse(Format::Markdown, markdown.as_bytes(), &Bounds::DEFAULT);
            (id.clone(), passages.expect("parsed"))
        })
        .collect();
    for batch in parsed.chunks(BATCH) {
        let new: Vec<Vec<NewPassage<'_>>> = (batch.iter())
            .map(|(_, passages)| {
                (passages.iter())
                    .map(|p| NewPassage {
                        headings: &p.headings,
                        page: p.page,
                        text: &p.text,
                    })
                    .collect()
            })
            .collect();
        let documents: Vec<(DocumentKey<'_>, &[NewPassage<'_>])> = (batch.iter())
            .zip(&new)
            .map(|((document, _), new)| {
                let key = DocumentKey {
                    collection: COLLECTION,
                    document,
                    generation: 1,
                };
                (key, &new[..])
            })
            .collect();
        index.replace_many(ORG, &documents).expect("indexed");
    }
    let mut scores = Scores::default();
    for (id, text) in &bench.queries {
        let asked = Instant::now();
        let ranked = ranked(&index, ORG, &[COLLECTION], text, 100);
        scores.took(asked.elapsed());
        scores.add(bench, id, &ranked, 100);
    }
    scores
}
