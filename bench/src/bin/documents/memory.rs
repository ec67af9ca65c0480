//! The memory a process holds while it indexes one large text PDF (about `--mib` MiB, as
//! many dense pages of prose as fit, content streams uncompressed): the file is made and
//! uploaded (queued) by this process, then a fresh process opens the local service over the
//! same data directory, reads its `VmRSS` and `VmHWM` (`/proc/self/status`), indexes the
//! document with one worker as the service would, and reads them again. A second fresh
//! process only parses the file, for the parser's share.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use knowledge_core::admin::Admin;
use knowledge_ingest::{Bounds, Format, parse};

use crate::corpus::Words;
use crate::org::{self, People, Service};
use crate::stats::rss;
use crate::{SEED, pdf};

pub async fn run(mib: usize) {
    let words = Words::new(SEED);
    // A little under the size, so that the file passes the 25 MiB bound.
    let target = (mib << 20) - (256 << 10);
    let pages = pdf::pages_for(&words, target);
    let file = pdf::pdf(&words, SEED, pages, false);
    let dir = tempfile::tempdir().unwrap();
    {
        let service = Service::open(dir.path(), "http://127.0.0.1");
        let people = org::people(&service, dir.path()).await;
        let upload = knowledge_core::documents::Upload {
            name: "large.pdf".into(),
            bytes: bytes::Bytes::from(file.clone()),
        };
        let by = Admin::operator(people.org.clone());
        (service
            .documents
            .upload(&by, &people.collections[0], upload)
            .await)
            .expect("uploaded");
    }
    let path = dir.path().join("large.pdf");
    std::fs::write(&path, &file).unwrap();
    println!(
        "PDF: {} bytes ({:.2} MiB), {pages} pages\n",
        file.len(),
        file.len() as f64 / (1 << 20) as f64
    );
    drop(file);
    for what in ["index", "parse"] {
        let out = Command::new(std::env::current_exe().unwrap())
            .arg("memory-child")
            .arg(dir.path())
            .arg(what)
            .output()
            .expect("a child");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        print!("{}", String::from_utf8_lossy(&out.stdout));
    }
}

/// In a fresh process: index the queued document of `dir` (`index`) or parse its PDF alone
/// (`parse`), with the memory before and after.
pub async fn child(dir: &Path, args: &[String]) {
    match args[0].as_str() {
        "index" => {
            let service = Service::open(dir, "http://127.0.0.1");
            let people = People::read(dir);
            let (before, _) = rss();
            let started = Instant::now();
            assert_eq!(service.drain(1).await, 1);
            let took = started.elapsed();
            let (after, peak) = rss();
            let by = Admin::operator(people.org.clone());
            let documents = service.documents.documents(&by, &people.collections[0]);
            let document = documents.await.unwrap().remove(0);
            let (root, org) = (service.index.clone(), people.org.as_str().to_owned());
            let settled = std::thread::spawn(move || root.settle(&org))
                .join()
                .unwrap();
            settled.expect("settled");
            let (_, peak_settled) = rss();
            let (index, _) = org::size_of(&dir.join("index"));
            println!(
                "indexed with one worker in {:.1} s: {} passages; index {:.1} MB",
                took.as_secs_f64(),
                document.passages,
                index as f64 / 1e6
            );
            println!(
                "RSS before {before:.0} MiB, peak {peak:.0} MiB (+{:.0}), after {after:.0} MiB; peak once merges settled {peak_settled:.0} MiB",
                peak - before
            );
        }
        _ => {
            let file = std::fs::read(dir.join("large.pdf")).unwrap();
            let (before, _) = rss();
            let started = Instant::now();
            let passages = parse(Format::Pdf, &file, &Bounds::DEFAULT).expect("parsed");
            let took = started.elapsed();
            let (_, peak) = rss();
            println!(
                "parsed alone in {:.1} s: {} passages; RSS with the file read {before:.0} MiB, peak {peak:.0} MiB (+{:.0})",
                took.as_secs_f64(),
                passages.len(),
                peak - before
            );
        }
    }
}
