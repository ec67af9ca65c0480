//! What a cold start adds to a search: a fresh process opens the organisation's index from
//! disk (`PassageIndex::on_disk`, or the whole local service over the store and the index) and
//! searches once, then searches the same query again, warm, in the same process: the baseline.
//! Each run is a new process and a new query. With the page cache warm, the index's files are
//! in memory, as they are just after a function copies them to `/tmp`; evicted (`dd
//! iflag=nocache` on each file first), they are read from disk.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use knowledge_core::documents::SearchRequest;
use knowledge_search::PassageIndex;

use crate::corpus::{self, Words};
use crate::org::{People, Service};
use crate::stats::Latencies;
use crate::{QUERIES, SEED};

/// Drops every file under `dir` from the page cache, but the originals (not read by a search).
fn evict(dir: &Path) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if entry.file_type().unwrap().is_dir() {
            if entry.file_name() != "documents" {
                evict(&path);
            }
            continue;
        }
        let done = Command::new("dd")
            .arg(format!("if={}", path.display()))
            .args(["iflag=nocache", "count=0", "status=none"])
            .status()
            .expect("dd");
        assert!(done.success());
    }
}

pub fn run(dir: &Path, runs: usize) {
    let people = People::read(dir);
    let folder = dir.join("index").join(people.org.as_str());
    let (bytes, files) = crate::org::size_of(&folder);
    println!(
        "index: {:.1} MB in {files} files; {runs} fresh processes per row, the member's search\n",
        bytes as f64 / 1e6
    );
    println!(
        "| | process, start to exit (ms, p50) | open + first search (ms, p50 / max) | same search again, warm (ms, p50) |"
    );
    println!("|---|---:|---:|---:|");
    for (what, label) in [
        ("index", "`PassageIndex::on_disk`"),
        ("core", "the service"),
    ] {
        for evicted in [false, true] {
            let mut process = Latencies::default();
            let (mut first, mut second) = (Latencies::default(), Latencies::default());
            for run in 0..runs {
                if evicted {
                    evict(dir);
                }
                let started = Instant::now();
                let out = Command::new(std::env::current_exe().unwrap())
                    .arg("cold-child")
                    .arg(dir)
                    .args([what, &run.to_string()])
                    .output()
                    .expect("a child");
                let took = started.elapsed();
                assert!(
                    out.status.success(),
                    "{}",
                    String::from_utf8_lossy(&out.stderr)
                );
                let text = String::from_utf8(out.stdout).unwrap();
                let ms: Vec<f64> = text
                    .split_whitespace()
                    .map(|v| v.parse().unwrap())
                    .collect();
                process.push(took);
                first.push_ms(ms[0]);
                second.push_ms(ms[1]);
            }
            let cache = if evicted { "evicted" } else { "warm" };
            println!(
                "| {label}, page cache {cache} | {:.1} | {:.1} / {:.1} | {:.2} |",
                process.ms(0.5),
                first.ms(0.5),
                first.ms(1.0),
                second.ms(0.5)
            );
        }
    }
}

/// In a fresh process: open `what` (`index` or `core`), search the member's query number
/// `args[1]` twice; print both times in milliseconds, the first counted from before the open.
pub async fn child(dir: &Path, args: &[String]) {
    let what = args[0].as_str();
    let n: usize = args[1].parse().unwrap();
    let started = Instant::now();
    let people = People::read(dir);
    let words = Words::new(SEED);
    let queries = corpus::queries(&words, SEED, people.documents, QUERIES);
    let query = &queries[n % queries.len()].text;
    let made = started.elapsed();
    let started = Instant::now();
    let mut times = Vec::new();
    match what {
        "index" => {
            let index = PassageIndex::on_disk(dir.join("index"));
            let open = people.members();
            let open: Vec<&str> = open.iter().map(|c| c.as_str()).collect();
            for _ in 0..2 {
                let found = index.search(people.org.as_str(), query, &open, 20);
                assert!(!found.expect("searched").is_empty());
                times.push(started.elapsed());
            }
        }
        _ => {
            let service = Service::open(dir, "http://127.0.0.1");
            let request = SearchRequest {
                query: query.clone(),
                collection: None,
                limit: 10,
            };
            for _ in 0..2 {
                let found = service.documents.search(&people.member, &request).await;
                assert!(!found.expect("searched").is_empty());
                times.push(started.elapsed());
            }
        }
    }
    let second = times[1] - times[0];
    eprintln!("queries made in {made:?}");
    println!(
        "{} {}",
        times[0].as_secs_f64() * 1000.0,
        second.as_secs_f64() * 1000.0
    );
}
