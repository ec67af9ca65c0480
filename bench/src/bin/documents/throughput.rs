//! Indexing throughput for Markdown and for PDFs: parsing alone (`knowledge_ingest::parse`
//! on one thread, then on two), and the workers' whole job on the local service (take the
//! document with its lease, read the original, parse, replace its passages in the index in
//! one commit, mark it `indexed`) with one worker and with two, each on a fresh data
//! directory into which the same files were uploaded first (not timed).

use std::path::Path;
use std::time::{Duration, Instant};

use knowledge_ingest::{Bounds, Format, parse};

use crate::corpus::{Rng, Words};
use crate::org::{self, People, Service};
use crate::stats::{cpu, mb_per_s};
use crate::{SEED, pdf};

struct Files {
    label: &'static str,
    format: Format,
    extension: &'static str,
    files: Vec<Vec<u8>>,
}

impl Files {
    fn bytes(&self) -> u64 {
        self.files.iter().map(|f| f.len() as u64).sum()
    }
}

/// Parses `files` on `threads` threads, each taking every `threads`-th file; answers the
/// time and the passages made.
fn parse_all(files: &Files, threads: usize) -> (Duration, usize) {
    let started = Instant::now();
    let passages = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                scope.spawn(move || {
                    (files.files.iter().skip(t).step_by(threads))
                        .map(|f| {
                            parse(files.format, f, &Bounds::DEFAULT)
                                .expect("parsed")
                                .len()
                        })
                        .sum::<usize>()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).sum()
    });
    (started.elapsed(), passages)
}

/// What indexing a set of files took.
#[derive(Default)]
pub struct Indexed {
    took: Duration,
    /// The process's CPU time, user and system.
    cpu: Duration,
    /// Where the index was settled after each document, as the indexer on AWS publishes every
    /// commit: the segment files each commit added (uploaded then), their bytes, and the files
    /// it retired (deleted then).
    added: usize,
    added_bytes: u64,
    retired: usize,
}

/// Uploads `files` (name, bytes) round the collections, queued for the workers.
async fn upload(
    service: &Service, people: &People, files: impl Iterator<Item = (String, Vec<u8>)>,
) {
    let by = knowledge_core::admin::Admin::operator(people.org.clone());
    for (n, (name, file)) in files.enumerate() {
        let collection = &people.collections[n % people.collections.len()];
        let upload = knowledge_core::documents::Upload {
            name,
            bytes: bytes::Bytes::from(file),
        };
        (service.documents.upload(&by, collection, upload).await).expect("uploaded");
    }
}

/// Indexes the `count` queued documents with `workers` workers; with `settle_each`, one
/// worker that settles the index after each document (the writer ended once its merges are
/// done), as `knowledge-s3`'s writer does before it uploads a commit.
async fn measure(
    service: &Service, people: &People, folder: &Path, count: usize, workers: usize,
    settle_each: bool,
) -> Indexed {
    let settle = || {
        let (index, org) = (service.index.clone(), people.org.as_str().to_owned());
        async move {
            let committed = tokio::task::spawn_blocking(move || index.settle(&org));
            committed.await.unwrap().expect("settled").files
        }
    };
    let mut held = match settle_each {
        true => settle().await,
        false => Default::default(),
    };
    let (started, cpu) = (Instant::now(), cpu());
    let mut run = Indexed::default();
    if settle_each {
        while service
            .workers
            .index_next()
            .await
            .expect("indexed")
            .is_some()
        {
            let files = settle().await;
            for added in files.difference(&held) {
                run.added += 1;
                run.added_bytes += std::fs::metadata(folder.join(added)).unwrap().len();
            }
            run.retired += held.difference(&files).count();
            held = files;
        }
    } else {
        assert_eq!(service.drain(workers).await, count);
    }
    run.took = started.elapsed();
    run.cpu = crate::stats::cpu() - cpu;
    run
}

/// Uploads `files` into a fresh organisation, then indexes them (not timed: the upload).
async fn index_all(files: &Files, workers: usize, settle_each: bool) -> Indexed {
    let dir = tempfile::tempdir().unwrap();
    let service = Service::open(dir.path(), "http://127.0.0.1");
    let people = org::people(&service, dir.path()).await;
    let named = (files.files.iter().enumerate())
        .map(|(n, f)| (format!("file-{n:04}.{}", files.extension), f.clone()));
    upload(&service, &people, named).await;
    let folder = dir.path().join("index").join(people.org.as_str());
    measure(
        &service,
        &people,
        &folder,
        files.files.len(),
        workers,
        settle_each,
    )
    .await
}

/// Indexes `docs` more generated Markdown documents into the organisation built in `dir`,
/// with one worker, settling after each document when `settle_each`: what a commit costs in
/// an organisation that large. Changes `dir`: run it on a copy.
pub async fn add(dir: &Path, docs: usize, settle_each: bool) {
    let service = Service::open(dir, "http://127.0.0.1");
    let people = People::read(dir);
    let words = Words::new(SEED);
    let first = people.documents;
    let files: Vec<(String, Vec<u8>)> = (first..first + docs)
        .map(|n| {
            (
                format!("doc-{n:05}.md"),
                words.markdown(SEED, n).into_bytes(),
            )
        })
        .collect();
    let bytes: u64 = files.iter().map(|(_, f)| f.len() as u64).sum();
    upload(&service, &people, files.into_iter()).await;
    let folder = dir.join("index").join(people.org.as_str());
    let run = measure(&service, &people, &folder, docs, 1, settle_each).await;
    println!(
        "{docs} documents ({:.1} MB) into an organisation of {first}, one worker{}: {:.1} documents/s, {:.1} CPU ms a document",
        bytes as f64 / 1e6,
        if settle_each {
            ", settled after each"
        } else {
            ""
        },
        docs as f64 / run.took.as_secs_f64(),
        run.cpu.as_secs_f64() * 1000.0 / docs as f64
    );
    if settle_each {
        print_settled(&run, docs);
    }
}

fn print_settled(run: &Indexed, count: usize) {
    println!(
        "settled after each document: {:.1} files added ({:.1} kB) and {:.1} retired a document",
        run.added as f64 / count as f64,
        run.added_bytes as f64 / 1e3 / count as f64,
        run.retired as f64 / count as f64
    );
}

pub async fn run(markdown: usize, pdfs: usize) {
    let words = Words::new(SEED);
    let mut rng = Rng::new(SEED ^ 0xFDF);
    let sets = [
        Files {
            label: "Markdown",
            format: Format::Markdown,
            extension: "md",
            files: (0..markdown)
                .map(|n| words.markdown(SEED ^ 0x3D, n).into_bytes())
                .collect(),
        },
        Files {
            label: "PDF",
            format: Format::Pdf,
            extension: "pdf",
            files: (0..pdfs)
                .map(|n| pdf::pdf(&words, SEED ^ n as u64, rng.range(3, 12), true))
                .collect(),
        },
    ];
    for set in &sets {
        let (count, bytes) = (set.files.len(), set.bytes());
        let (_, passages) = parse_all(set, 1);
        println!(
            "\n{}: {count} files, {:.1} MB, {:.1} kB on average, {passages} passages\n",
            set.label,
            bytes as f64 / 1e6,
            bytes as f64 / 1e3 / count as f64
        );
        println!("| | documents/s | MB/s | seconds | CPU ms a document |");
        println!("|---|---:|---:|---:|---:|");
        let row = |what: &str, took: Duration, cpu: Option<Duration>| {
            let cpu = cpu.map_or(String::new(), |c| {
                format!("{:.1}", c.as_secs_f64() * 1000.0 / count as f64)
            });
            println!(
                "| {what} | {:.0} | {:.2} | {:.2} | {cpu} |",
                count as f64 / took.as_secs_f64(),
                mb_per_s(bytes, took),
                took.as_secs_f64()
            );
        };
        for threads in [1, 2] {
            let (started, took) = (cpu(), parse_all(set, threads).0);
            let what = format!("parse alone, {threads} thread(s)");
            row(&what, took, Some(cpu() - started));
        }
        for workers in [1, 2] {
            let run = index_all(set, workers, false).await;
            let what = format!("parse + index + mark indexed, {workers} worker(s)");
            row(&what, run.took, Some(run.cpu));
        }
        let run = index_all(set, 1, true).await;
        let what = "the same, 1 worker, the index settled after each document";
        row(what, run.took, Some(run.cpu));
        println!();
        print_settled(&run, count);
    }
}
