//! Parsing in a child process (`Isolated`), whose memory and time the kernel bounds: the same
//! passages as in process; a PDF stream that expands past the child's memory, and a child
//! past its time, end as refusals a person can act on, and the next file is read as ever.

use std::time::{Duration, Instant};

use bytes::Bytes;
use knowledge_core::domain::Format;
use knowledge_core::ports::Parser;
use knowledge_ingest::{Bounds, Ingest, Isolated, samples};

/// Children of this crate's own parser binary, within `memory` bytes and the default bounds.
fn children(memory: u64) -> Isolated {
    let program = env!("CARGO_BIN_EXE_knowledge-parse").into();
    Isolated::new(program, Vec::new(), Bounds::DEFAULT, memory)
}

#[tokio::test]
async fn a_child_reads_a_file_into_the_same_passages_as_the_process_itself() {
    let markdown = Bytes::from("# Handbook\n\nWelcome.\n\n## Leave\n\nTwenty-five days.\n");
    let pdf = Bytes::from(samples::pdf_file(&["Page one.", "Page two says more."]));
    for (format, file) in [(Format::Markdown, markdown), (Format::Pdf, pdf)] {
        let here = Ingest::default().parse(format, file.clone()).await;
        let there = children(512 << 20).parse(format, file).await;
        assert!(here.is_ok(), "{here:?}");
        assert_eq!(there, here, "{format:?}");
    }
    let refused = children(512 << 20)
        .parse(Format::Pdf, Bytes::from_static(b"%PDF-1.7 not really"))
        .await;
    let reason = refused.unwrap_err();
    assert!(reason.starts_with("the file could not be read"), "{reason}");
}

#[test]
fn the_bomb_expands_to_what_it_says() {
    let pdf = samples::flate_bomb_pdf(1 << 20);
    let doc = lopdf::Document::load_mem(&pdf).unwrap();
    let page = doc.get_pages()[&1];
    let contents = doc.get_dictionary(page).unwrap().get(b"Contents").unwrap();
    let stream = doc.get_object(contents.as_reference().unwrap()).unwrap();
    let content = stream.as_stream().unwrap().decompressed_content().unwrap();
    assert_eq!(content.len(), 1 + (((1 << 20) - 1) / 258) * 258);
    assert!(content.iter().all(|&b| b == b' '));
    assert!(pdf.len() < (1 << 20) / 100, "{} bytes", pdf.len());
}

#[tokio::test]
async fn a_pdf_that_expands_past_the_childs_memory_is_refused_and_the_next_file_is_read() {
    let parser = children(384 << 20);
    // 6.5 MB that expand to a gibibyte: read in the service's own process, it would hold it.
    let bomb = Bytes::from(samples::flate_bomb_pdf(1 << 30));
    let reason = parser.parse(Format::Pdf, bomb).await.unwrap_err();
    assert_eq!(
        reason,
        "reading the file needed more than 384 MiB of memory"
    );
    let next = Bytes::from(samples::pdf_file(&["Still reading."]));
    let passages = parser.parse(Format::Pdf, next).await.unwrap();
    assert_eq!(passages[0].text, "Still reading.");
}

#[tokio::test]
async fn a_child_past_its_time_is_killed_and_the_file_refused_as_too_slow() {
    // A child that never answers: a shell that sleeps, whatever it is asked.
    let bounds = Bounds {
        max_time: Duration::from_secs(1),
        ..Bounds::DEFAULT
    };
    let args = vec!["-c".into(), "sleep 30".into(), "sh".into()];
    let parser = Isolated::new("/bin/sh".into(), args, bounds, 512 << 20);
    let started = Instant::now();
    let reason = (parser.parse(Format::Markdown, Bytes::from_static(b"# Hi")))
        .await
        .unwrap_err();
    assert_eq!(reason, "reading the file took longer than 1 s");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}
