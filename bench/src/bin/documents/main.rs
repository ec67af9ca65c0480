//! The organisation's documents (issue 41): search latency on an organisation of 10,000
//! documents, what a cold start adds, indexing throughput, and the memory held while indexing
//! a 25 MiB PDF. Figures go to `docs/performance.md`, which has the commands.
//!
//! ```sh
//! cargo build --release -p knowledge-bench --bin document-bench
//! target/release/document-bench build /tmp/org10k --docs 10000   # the organisation, once
//! target/release/document-bench search /tmp/org10k --rounds 10   # warm latency, with HTTP
//! target/release/document-bench cold /tmp/org10k --runs 20       # fresh processes
//! target/release/document-bench throughput --markdown 1000 --pdfs 300
//! cp -a /tmp/org10k /tmp/org10k-add && target/release/document-bench add /tmp/org10k-add --docs 500
//! target/release/document-bench memory --mib 25
//! target/release/document-bench scale --docs 100000             # the index alone, larger
//! ```

mod cold;
mod corpus;
mod memory;
mod org;
mod pdf;
mod scale;
mod search;
mod stats;
mod throughput;

use std::path::{Path, PathBuf};

/// The seed of every generated word, document and query.
pub const SEED: u64 = 41;
/// Queries a search run asks, a third of each kind.
pub const QUERIES: usize = 60;

/// The value after `--name` among `args`, or `default`.
fn option<T: std::str::FromStr>(args: &[String], name: &str, default: T) -> T {
    match args.iter().position(|a| a == name) {
        Some(at) => args
            .get(at + 1)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| usage()),
        None => default,
    }
}

fn usage() -> ! {
    eprintln!(
        "usage: document-bench build DIR [--docs N] | search DIR [--rounds N] [--no-http] | \
         cold DIR [--runs N] | throughput [--markdown N] [--pdfs N] | \
         add COPY-OF-DIR [--docs N] [--settle] | scale [--docs N] [--rounds N] | memory [--mib N]"
    );
    std::process::exit(2)
}

fn dir(args: &[String]) -> PathBuf {
    PathBuf::from(args.get(1).unwrap_or_else(|| usage()))
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    match args.first().map(String::as_str) {
        Some("build") => runtime.block_on(build(&dir(&args), option(&args, "--docs", 10_000))),
        Some("search") => runtime.block_on(search::run(
            &dir(&args),
            option(&args, "--rounds", 10),
            !args.iter().any(|a| a == "--no-http"),
        )),
        Some("cold") => cold::run(&dir(&args), option(&args, "--runs", 20)),
        Some("cold-child") => runtime.block_on(cold::child(&dir(&args), &args[2..])),
        Some("throughput") => runtime.block_on(throughput::run(
            option(&args, "--markdown", 1_000),
            option(&args, "--pdfs", 300),
        )),
        Some("add") => runtime.block_on(throughput::add(
            &dir(&args),
            option(&args, "--docs", 500),
            args.iter().any(|a| a == "--settle"),
        )),
        Some("scale") => scale::run(
            option(&args, "--docs", 100_000),
            option(&args, "--rounds", 5),
        ),
        Some("memory") => runtime.block_on(memory::run(option(&args, "--mib", 25))),
        Some("memory-child") => runtime.block_on(memory::child(&dir(&args), &args[2..])),
        _ => usage(),
    }
}

/// Builds the organisation of `docs` generated Markdown documents in `dir`, which must not
/// exist yet, and prints what it took and how large it is.
async fn build(dir: &Path, docs: usize) {
    assert!(!dir.exists(), "{} exists: give a new folder", dir.display());
    std::fs::create_dir_all(dir).unwrap();
    let service = org::Service::open(dir, "http://127.0.0.1");
    let mut people = org::people(&service, dir).await;
    let words = corpus::Words::new(SEED);
    let files = (0..docs).map(|n| (format!("doc-{n:05}.md"), words.markdown(SEED, n)));
    let built = org::fill(&service, &people, files, 2).await;
    people.documents = built.documents;
    people.write(dir);
    let (index_bytes, index_files) = org::size_of(&dir.join("index").join(people.org.as_str()));
    let (originals, _) = org::size_of(&dir.join("documents"));
    let passages: u64 = {
        let by = knowledge_core::admin::Admin::operator(people.org.clone());
        let mut all = 0;
        for c in &people.collections {
            for d in service.documents.documents(&by, c).await.unwrap() {
                all += u64::from(d.passages);
            }
        }
        all
    };
    let mb = |b: u64| b as f64 / 1e6;
    println!("documents            {}", built.documents);
    println!("markdown             {:.1} MB", mb(built.bytes));
    println!("passages             {passages}");
    println!("originals on disk    {:.1} MB", mb(originals));
    println!(
        "index on disk        {:.1} MB in {index_files} files",
        mb(index_bytes)
    );
    println!("upload, one at a time {:.1} s", built.upload.as_secs_f64());
    println!(
        "index, 2 workers     {:.1} s ({:.0} documents/s)",
        built.index.as_secs_f64(),
        built.documents as f64 / built.index.as_secs_f64()
    );
    println!(
        "index, CPU time      {:.1} s ({:.1} ms a document)",
        built.index_cpu.as_secs_f64(),
        built.index_cpu.as_secs_f64() * 1000.0 / built.documents as f64
    );
    println!("merges settled       {:.1} s", built.settle.as_secs_f64());
}
