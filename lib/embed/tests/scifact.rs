//! A guard on retrieval quality, not its measurement (that is `bench/src/bin/retrieval`, whose
//! figures are in `docs/performance.md`): on a fixed slice of BEIR SciFact (the first 50 test
//! claims, the abstracts judged for them and the first 400 others), made into passages and
//! indexed as the service does, hybrid search must stay above its floor and above BM25 alone.
//! The data is read from `../shared/retrieval/scifact` beside the repository (evaluation data:
//! never copied into it); without it, or without the model, the test says so and passes,
//! unless `KNOWLEDGE_TEST_REQUIRE_MODEL` is set, as `scripts/test` sets it.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

use knowledge_embed::{SentenceModel, fetch};
use knowledge_ingest::{Bounds, Format, parse};
use knowledge_search::{DocumentKey, NewPassage, PassageIndex};
use serde_json::Value;

const CLAIMS: usize = 50;
const OTHERS: usize = 400;
/// The floors: on this slice (451 abstracts, 50 claims) hybrid search scored 0.9298 and BM25
/// alone 0.8976 when this guard was written; the floors leave room for arithmetic that differs
/// between machines, not for a change that loses a claim's relevant abstract (about 0.02).
const HYBRID_FLOOR: f64 = 0.92;
const MARGIN_OVER_BM25: f64 = 0.02;

struct Slice {
    documents: Vec<(String, String)>,
    claims: Vec<(String, String)>,
    judged: HashMap<String, HashMap<String, f64>>,
}

fn slice() -> Option<Slice> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/retrieval/scifact");
    let required = std::env::var_os("KNOWLEDGE_TEST_REQUIRE_MODEL").is_some();
    if !dir.join("corpus.jsonl").is_file() {
        assert!(!required, "no SciFact at {}", dir.display());
        eprintln!("no SciFact at {}: skipped", dir.display());
        return None;
    }
    let lines = |name: &str| -> Vec<Value> {
        let text = std::fs::read_to_string(dir.join(name)).unwrap();
        text.lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let mut judged: HashMap<String, HashMap<String, f64>> = HashMap::new();
    let mut order = Vec::new();
    for line in std::fs::read_to_string(dir.join("test.tsv"))
        .unwrap()
        .lines()
        .skip(1)
    {
        let cols: Vec<&str> = line.split('\t').collect();
        if !judged.contains_key(cols[0]) {
            order.push(cols[0].to_owned());
        }
        (judged.entry(cols[0].to_owned()).or_default())
            .insert(cols[1].to_owned(), cols[2].parse().unwrap());
    }
    order.truncate(CLAIMS);
    judged.retain(|q, _| order.contains(q));
    let relevant: HashSet<&String> = judged.values().flat_map(|d| d.keys()).collect();
    let text = |v: &Value, key: &str| v[key].as_str().unwrap_or_default().to_owned();
    let mut others = 0;
    let documents = (lines("corpus.jsonl").iter())
        .filter(|d| {
            let id = text(d, "_id");
            let keep = relevant.contains(&id) || others < OTHERS;
            if !relevant.contains(&id) && keep {
                others += 1;
            }
            keep
        })
        .map(|d| {
            let markdown = format!("# {}\n\n{}\n", text(d, "title"), text(d, "text"));
            (text(d, "_id"), markdown)
        })
        .collect();
    let claims = (lines("queries.jsonl").iter())
        .map(|q| (text(q, "_id"), text(q, "text")))
        .filter(|(id, _)| judged.contains_key(id))
        .collect();
    Some(Slice {
        documents,
        claims,
        judged,
    })
}

/// nDCG@10 of `index` on the slice.
fn ndcg(index: &PassageIndex, slice: &Slice) -> f64 {
    let mut total = 0.0;
    for (id, claim) in &slice.claims {
        let relevant = &slice.judged[id];
        let hits = index.search("org", claim, &["c"], 40).unwrap();
        let mut seen = HashSet::new();
        let ranked: Vec<String> = (hits.into_iter().map(|h| h.document))
            .filter(|d| seen.insert(d.clone()))
            .take(10)
            .collect();
        let dcg: f64 = (ranked.iter().enumerate())
            .map(|(i, d)| relevant.get(d).copied().unwrap_or(0.0) / (i as f64 + 2.0).log2())
            .sum();
        let mut ideal: Vec<f64> = relevant.values().copied().collect();
        ideal.sort_by(|a, b| b.total_cmp(a));
        let idcg: f64 = (ideal.iter().take(10).enumerate())
            .map(|(i, g)| g / (i as f64 + 2.0).log2())
            .sum();
        total += dcg / idcg;
    }
    total / slice.claims.len() as f64
}

fn indexed(index: &PassageIndex, slice: &Slice) {
    let parsed: Vec<_> = (slice.documents.iter())
        .map(|(_, md)| parse(Format::Markdown, md.as_bytes(), &Bounds::DEFAULT).unwrap())
        .collect();
    let new: Vec<Vec<NewPassage<'_>>> = (parsed.iter())
        .map(|passages| {
            (passages.iter())
                .map(|p| NewPassage {
                    headings: &p.headings,
                    page: p.page,
                    text: &p.text,
                })
                .collect()
        })
        .collect();
    let documents: Vec<(DocumentKey<'_>, &[NewPassage<'_>])> = (slice.documents.iter())
        .zip(&new)
        .map(|((id, _), new)| {
            let key = DocumentKey {
                collection: "c",
                document: id,
                generation: 1,
            };
            (key, &new[..])
        })
        .collect();
    index.replace_many("org", &documents).unwrap();
}

#[test]
fn hybrid_search_on_a_slice_of_scifact_stays_above_its_floor_and_above_bm25_alone() {
    let Some(models) = std::env::var_os("KNOWLEDGE_TEST_MODELS") else {
        assert!(std::env::var_os("KNOWLEDGE_TEST_REQUIRE_MODEL").is_none());
        eprintln!("KNOWLEDGE_TEST_MODELS is not set: skipped");
        return;
    };
    let Some(slice) = slice() else { return };
    let python = std::env::var("KNOWLEDGE_PYTHON").unwrap_or_else(|_| "python3".into());
    let folder = fetch::ensure(&PathBuf::from(models), &python).unwrap();
    let model = SentenceModel::load(&folder).unwrap();

    let words = PassageIndex::in_memory();
    indexed(&words, &slice);
    let bm25 = ndcg(&words, &slice);
    let both = PassageIndex::in_memory().with_embedder(Arc::new(model));
    indexed(&both, &slice);
    let hybrid = ndcg(&both, &slice);
    eprintln!(
        "{} documents, {} claims: nDCG@10 BM25 {bm25:.4}, hybrid {hybrid:.4}",
        slice.documents.len(),
        slice.claims.len()
    );
    assert!(
        hybrid >= HYBRID_FLOOR,
        "hybrid {hybrid:.4} fell under {HYBRID_FLOOR}"
    );
    assert!(
        hybrid >= bm25 + MARGIN_OVER_BM25,
        "hybrid {hybrid:.4} is not {MARGIN_OVER_BM25} over BM25's {bm25:.4}"
    );
}
