//! Real files for the ingest tests, made by the tools that make them: lopdf writes the PDFs
//! (`knowledge_ingest::samples`, shared with other crates' tests), docx-rs the DOCX files.

#![allow(dead_code)] // Each test file uses some of them.

use std::io::Cursor;

pub use knowledge_ingest::samples::{bytes, pdf};

/// A DOCX with a title, two headings and their paragraphs, written by docx-rs.
pub fn docx() -> Vec<u8> {
    use docx_rs::{Docx, Paragraph, Run};
    let p = |style: Option<&str>, text: &str| {
        let p = Paragraph::new().add_run(Run::new().add_text(text));
        match style {
            Some(style) => p.style(style),
            None => p,
        }
    };
    let mut out = Cursor::new(Vec::new());
    Docx::new()
        .add_paragraph(p(Some("Heading1"), "Expenses"))
        .add_paragraph(p(
            None,
            "Receipts are kept for seven years & filed monthly.",
        ))
        .add_paragraph(p(Some("Heading2"), "Travel"))
        .add_paragraph(p(None, "Trains are booked in second class."))
        .build()
        .pack(&mut out)
        .unwrap();
    out.into_inner()
}
