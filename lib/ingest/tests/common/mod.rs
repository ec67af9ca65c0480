//! Real files for the ingest tests, made by the tools that make them: lopdf writes the PDFs,
//! docx-rs the DOCX files.

#![allow(dead_code)] // Each test file uses some of them.

use std::io::Cursor;

use lopdf::content::{Content, Operation};
use lopdf::{Document, Object, Stream, dictionary};

/// A PDF of one page per text, each drawn with a standard font.
pub fn pdf(pages: &[&str]) -> Document {
    let mut doc = Document::with_version("1.5");
    let pages_id = doc.new_object_id();
    let font = doc.add_object(dictionary! {
        "Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Helvetica",
    });
    let resources = doc.add_object(dictionary! { "Font" => dictionary! { "F1" => font } });
    let mut kids = Vec::new();
    for text in pages {
        let mut operations = vec![
            Operation::new("BT", vec![]),
            Operation::new("Tf", vec!["F1".into(), 12.into()]),
            Operation::new("Td", vec![72.into(), 720.into()]),
        ];
        if !text.is_empty() {
            operations.push(Operation::new("Tj", vec![Object::string_literal(*text)]));
        }
        operations.push(Operation::new("ET", vec![]));
        let content = Content { operations };
        let stream = doc.add_object(Stream::new(dictionary! {}, content.encode().unwrap()));
        let page = doc.add_object(dictionary! {
            "Type" => "Page", "Parent" => pages_id, "Contents" => stream,
        });
        kids.push(page.into());
    }
    let count = kids.len() as i64;
    doc.objects.insert(
        pages_id,
        Object::Dictionary(dictionary! {
            "Type" => "Pages", "Kids" => kids, "Count" => count, "Resources" => resources,
            "MediaBox" => vec![0.into(), 0.into(), 612.into(), 792.into()],
        }),
    );
    let catalog = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
    doc.trailer.set("Root", catalog);
    doc
}

pub fn bytes(mut doc: Document) -> Vec<u8> {
    let mut out = Vec::new();
    doc.save_to(&mut out).unwrap();
    out
}

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
