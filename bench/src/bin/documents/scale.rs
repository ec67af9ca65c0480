//! The index alone at a larger size: `--docs` generated documents (the same corpus and
//! collections' shape as `build`) made into passages and written straight into a
//! `PassageIndex` on disk, 256 documents a commit (as an indexer draining a queue would; the
//! store and the workers are left out, so that 100,000 documents take minutes, not hours),
//! then the bare search of the same queries, as `search` measures it.

use std::time::Instant;

use knowledge_ingest::{Bounds, Format, parse};
use knowledge_search::{DocumentKey, NewPassage, PassageIndex};

use crate::corpus::{self, Words};
use crate::org::{COLLECTIONS, size_of};
use crate::stats::Latencies;
use crate::{QUERIES, SEED};

const ORG: &str = "org_scale";
const BATCH: usize = 256;

/// Measures at a tenth of `docs` and again at `docs`, in the same run: the tenth is the
/// baseline the larger index is compared with.
pub fn run(docs: usize, rounds: usize) {
    let dir = tempfile::tempdir().unwrap();
    let index = PassageIndex::on_disk(dir.path());
    let words = Words::new(SEED);
    let collections: Vec<String> = (0..COLLECTIONS).map(|c| format!("col_{c:02}")).collect();
    // The same queries at both sizes: about documents of the first tenth.
    let queries = corpus::queries(&words, SEED, docs / 10, QUERIES);
    let (mut passages, mut bytes) = (0, 0);
    let started = Instant::now();
    for (from, to) in [(0, docs / 10), (docs / 10, docs)] {
        write(
            &index,
            &words,
            &collections,
            from..to,
            &mut passages,
            &mut bytes,
        );
        index.settle(ORG).expect("settled");
        let built = started.elapsed();
        let (size, files) = size_of(&dir.path().join(ORG));
        println!(
            "\n{to} documents ({:.0} MB of Markdown, {passages} passages) indexed in {:.0} s; index {:.0} MB in {files} files\n",
            bytes as f64 / 1e6,
            built.as_secs_f64(),
            size as f64 / 1e6
        );
        measure(&index, &queries, &collections, rounds);
    }
}

/// Writes documents `range` into the index, [`BATCH`] a commit.
fn write(
    index: &PassageIndex, words: &Words, collections: &[String], range: std::ops::Range<usize>,
    passages: &mut usize, bytes: &mut usize,
) {
    let (docs, started) = (range.end, Instant::now());
    for first in range.step_by(BATCH) {
        let batch: Vec<(String, Vec<knowledge_ingest::Passage>)> = (first..docs.min(first + BATCH))
            .map(|n| {
                let text = words.markdown(SEED, n);
                *bytes += text.len();
                let parsed = parse(Format::Markdown, text.as_bytes(), &Bounds::DEFAULT);
                (format!("doc_{n:08}"), parsed.expect("parsed"))
            })
            .collect();
        let new: Vec<Vec<NewPassage<'_>>> = (batch.iter())
            .map(|(_, parsed)| {
                (parsed.iter())
                    .map(|p| NewPassage {
                        headings: &p.headings,
                        page: p.page,
                        text: &p.text,
                    })
                    .collect()
            })
            .collect();
        let documents: Vec<(DocumentKey<'_>, &[NewPassage<'_>])> = (batch.iter().zip(&new))
            .enumerate()
            .map(|(i, ((document, _), new))| {
                let key = DocumentKey {
                    collection: &collections[(first + i) % COLLECTIONS],
                    document,
                    generation: 1,
                };
                (key, &new[..])
            })
            .collect();
        *passages += new.iter().map(Vec::len).sum::<usize>();
        index.replace_many(ORG, &documents).expect("indexed");
        if (first / BATCH) % 40 == 39 {
            eprintln!("{} documents in {:.0?}", first + BATCH, started.elapsed());
        }
    }
}

/// The bare search of `queries`, for the admin's 20 collections and the member's 10.
fn measure(index: &PassageIndex, queries: &[corpus::Query], collections: &[String], rounds: usize) {
    let all: Vec<&str> = collections.iter().map(String::as_str).collect();
    let members: Vec<&str> = all.iter().step_by(2).copied().collect();
    let mut measured = [
        ("tantivy alone, 20 collections", &all, Latencies::default()),
        (
            "tantivy alone, 10 collections",
            &members,
            Latencies::default(),
        ),
    ];
    let mut common: [Latencies; 2] = Default::default();
    for round in 0..=rounds {
        for query in queries {
            for (at, (_, open, latencies)) in measured.iter_mut().enumerate() {
                let started = Instant::now();
                index.search(ORG, &query.text, open, 20).expect("searched");
                let took = started.elapsed();
                if round > 0 {
                    latencies.push(took);
                    if query.kind == corpus::Kind::Common {
                        common[at].push(took);
                    }
                }
            }
        }
    }
    println!("| | p50 (ms) | p95 (ms) | p99 (ms) | common words, p50 (ms) |");
    println!("|---|---:|---:|---:|---:|");
    for ((name, _, l), c) in measured.iter().zip(&common) {
        println!(
            "| {name} | {:.2} | {:.2} | {:.2} | {:.2} |",
            l.ms(0.5),
            l.ms(0.95),
            l.ms(0.99),
            c.ms(0.5)
        );
    }
}
