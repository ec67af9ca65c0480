//! Each format, from real files made by the tools that make them (docx-rs writes the DOCX files,
//! lopdf the PDFs), into passages with their headings or pages; and every bound, broken on
//! purpose, refused with its reason.

use std::io::{Cursor, Write};
use std::time::{Duration, Instant};

mod common;

use common::{bytes, docx, pdf};
use knowledge_ingest::{Bounds, Format, Passage, Refusal, parse};
use lopdf::{EncryptionState, EncryptionVersion, Object, Permissions};

fn texts(passages: &[Passage]) -> Vec<&str> {
    passages.iter().map(|p| p.text.as_str()).collect()
}

#[test]
fn markdown_passages_sit_under_their_headings_and_raw_html_is_dropped() {
    let text = "# Handbook\n\nWelcome.\n\n## Leave\n\nTwenty-five days.\n\n<script>alert(1)</script>\n\n- one\n- two\n";
    let passages = parse(Format::Markdown, text.as_bytes(), &Bounds::DEFAULT).unwrap();
    assert_eq!(
        texts(&passages),
        [
            "Handbook\n\nWelcome.",
            "Leave\n\nTwenty-five days.\n\none\n\ntwo"
        ]
    );
    assert_eq!(passages[1].headings, ["Handbook", "Leave"]);
    assert!(passages.iter().all(|p| !p.text.contains("alert")));
}

#[test]
fn html_passages_keep_headings_and_drop_scripts_styles_and_markup() {
    let html = r#"<!doctype html><html><head><title>T</title><style>p{}</style></head><body>
        <h1>Policies</h1><p>Read <a href="https://evil.example/">this</a> first.</p>
        <script>document.write("<p>injected</p>")</script>
        <h2>Security</h2><div>Lock your <b>screen</b>.</div></body></html>"#;
    let passages = parse(Format::Html, html.as_bytes(), &Bounds::DEFAULT).unwrap();
    assert_eq!(
        texts(&passages),
        [
            "Policies\n\nRead this first.",
            "Security\n\nLock your screen."
        ]
    );
    assert_eq!(passages[1].headings, ["Policies", "Security"]);
}

#[test]
fn html_nested_a_hundred_thousand_deep_is_read_without_exhausting_the_stack() {
    let depth = 100_000;
    let html = format!(
        "{}deep text{}",
        "<div>".repeat(depth),
        "</div>".repeat(depth)
    );
    let started = Instant::now();
    let passages = parse(Format::Html, html.as_bytes(), &Bounds::DEFAULT).unwrap();
    assert_eq!(texts(&passages), ["deep text"]);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn docx_passages_follow_its_heading_styles() {
    let passages = parse(Format::Docx, &docx(), &Bounds::DEFAULT).unwrap();
    assert_eq!(
        texts(&passages),
        [
            "Expenses\n\nReceipts are kept for seven years & filed monthly.",
            "Travel\n\nTrains are booked in second class."
        ]
    );
    assert_eq!(passages[1].headings, ["Expenses", "Travel"]);
}

#[test]
fn a_docx_that_expands_past_the_bound_is_refused_as_a_zip_bomb() {
    // A document.xml of 64 MiB of spaces compresses to a few kilobytes.
    let mut out = Cursor::new(Vec::new());
    let mut zip = zip::ZipWriter::new(&mut out);
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    zip.start_file("word/document.xml", options).unwrap();
    let chunk = vec![b' '; 1 << 20];
    for _ in 0..64 {
        zip.write_all(&chunk).unwrap();
    }
    zip.finish().unwrap();
    let bomb = out.into_inner();
    assert!(bomb.len() < 1 << 20, "{} bytes", bomb.len());
    let bounds = Bounds {
        max_expanded_bytes: 8 << 20,
        ..Bounds::DEFAULT
    };
    assert_eq!(
        parse(Format::Docx, &bomb, &bounds),
        Err(Refusal::ExpandsTooMuch(8 << 20))
    );
}

#[test]
fn pdf_passages_keep_their_page_numbers() {
    let file = bytes(pdf(&["Quarterly revenue grew.", "Costs fell in March."]));
    let passages = parse(Format::Pdf, &file, &Bounds::DEFAULT).unwrap();
    let pages: Vec<Option<u32>> = passages.iter().map(|p| p.page).collect();
    assert_eq!(pages, [Some(1), Some(2)]);
    assert!(
        passages[0].text.contains("Quarterly revenue grew."),
        "{passages:?}"
    );
    assert!(
        passages[1].text.contains("Costs fell in March."),
        "{passages:?}"
    );
}

#[test]
fn a_pdf_without_a_text_layer_is_refused_as_such() {
    let file = bytes(pdf(&["", ""]));
    assert_eq!(
        parse(Format::Pdf, &file, &Bounds::DEFAULT),
        Err(Refusal::NoTextLayer)
    );
}

#[test]
fn a_pdf_that_needs_a_password_is_refused_as_encrypted() {
    let mut doc = pdf(&["Secret plans."]);
    doc.trailer.set(
        "ID",
        vec![
            Object::string_literal("0123456789abcdef"),
            Object::string_literal("0123456789abcdef"),
        ],
    );
    let version = EncryptionVersion::V1 {
        document: &doc,
        owner_password: "owner",
        user_password: "user",
        permissions: Permissions::all(),
    };
    let state = EncryptionState::try_from(version).unwrap();
    doc.encrypt(&state).unwrap();
    assert_eq!(
        parse(Format::Pdf, &bytes(doc), &Bounds::DEFAULT),
        Err(Refusal::Encrypted)
    );
}

#[test]
fn a_pdf_with_more_pages_than_the_bound_is_refused_before_its_text_is_read() {
    let file = bytes(pdf(&["page"; 11]));
    let bounds = Bounds {
        max_pages: 10,
        ..Bounds::DEFAULT
    };
    assert_eq!(
        parse(Format::Pdf, &file, &bounds),
        Err(Refusal::TooManyPages(10))
    );
}

#[test]
fn a_file_over_the_size_bound_is_refused_before_it_is_read() {
    let bounds = Bounds {
        max_bytes: 10,
        ..Bounds::DEFAULT
    };
    let refused = parse(Format::Text, b"eleven bytes", &bounds);
    assert_eq!(refused, Err(Refusal::TooLarge(10)));
    assert_eq!(
        refused.unwrap_err().to_string(),
        "the file is larger than 10 bytes"
    );
}

/// The format as the core detects it, its refusal as ingest words it.
fn detect(name: &str, head: &[u8]) -> Result<Format, Refusal> {
    Format::detect(name, head).map_err(Refusal::from)
}

#[test]
fn a_format_is_told_by_its_name_and_its_content_must_agree() {
    assert_eq!(detect("Handbook.MD", b"# Hi"), Ok(Format::Markdown));
    assert_eq!(detect("report.pdf", b"%PDF-1.7"), Ok(Format::Pdf));
    assert_eq!(detect("notes.docx", b"PK\x03\x04"), Ok(Format::Docx));
    assert_eq!(detect("tool.exe", b"MZ"), Err(Refusal::Unsupported));
    assert_eq!(
        detect("fake.pdf", b"<html>"),
        Err(Refusal::NotWhatItSays(Format::Pdf))
    );
    assert_eq!(
        detect("bin.txt", b"a\0b"),
        Err(Refusal::NotWhatItSays(Format::Text))
    );
    // A character cut at the end of the head is still text.
    assert_eq!(
        detect("e.txt", "café".as_bytes()[..4].as_ref()),
        Ok(Format::Text)
    );
    // The refusal's words are the core's.
    let refused = Format::detect("fake.pdf", b"<html>").unwrap_err();
    assert_eq!(Refusal::from(refused).to_string(), refused.to_string());
}

#[test]
fn garbage_in_any_format_is_a_refusal_never_a_panic() {
    let garbage: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    for &format in Format::ALL {
        let mut file = match format {
            Format::Pdf => b"%PDF-1.4\n".to_vec(),
            Format::Docx => b"PK\x03\x04".to_vec(),
            _ => Vec::new(),
        };
        file.extend_from_slice(&garbage);
        assert!(
            parse(format, &file, &Bounds::DEFAULT).is_err(),
            "{format:?}"
        );
    }
}
