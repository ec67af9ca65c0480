//! Real PDFs, written with lopdf as a PDF writer would: the approach of `lib/ingest`'s test
//! files (one standard font in the page tree's resources, each page's text drawn with it),
//! with many lines a page, so that the text layer reads as a page of prose.

use lopdf::content::{Content, Operation};
use lopdf::{Document, Object, Stream, dictionary};

use crate::corpus::{Rng, Words};

/// Lines of a page and characters of a line: a dense page of 10-point text.
pub const LINES: usize = 56;
pub const CHARS: usize = 95;

/// A PDF of `pages` pages of prose about one topic; its content streams compressed (Flate)
/// when `compress`, as most writers do.
pub fn pdf(words: &Words, seed: u64, pages: usize, compress: bool) -> Vec<u8> {
    let mut rng = Rng::new(seed);
    let mut doc = Document::with_version("1.5");
    let pages_id = doc.new_object_id();
    let font = doc.add_object(dictionary! {
        "Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Helvetica",
    });
    let resources = doc.add_object(dictionary! { "Font" => dictionary! { "F1" => font } });
    let mut kids = Vec::with_capacity(pages);
    for _ in 0..pages {
        let mut operations = vec![
            Operation::new("BT", vec![]),
            Operation::new("Tf", vec!["F1".into(), 10.into()]),
            Operation::new("TL", vec![12.into()]),
            Operation::new("Td", vec![56.into(), 740.into()]),
        ];
        for line in words.lines(&mut rng, seed, LINES, CHARS) {
            operations.push(Operation::new("Tj", vec![Object::string_literal(line)]));
            operations.push(Operation::new("T*", vec![]));
        }
        operations.push(Operation::new("ET", vec![]));
        let content = Content { operations }.encode().expect("a page's content");
        let stream = doc.add_object(Stream::new(dictionary! {}, content));
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
    if compress {
        doc.compress();
    }
    let mut out = Vec::new();
    doc.save_to(&mut out).expect("a PDF in memory");
    out
}

/// The most pages of prose that fit in `bytes` uncompressed, measured on a sample.
pub fn pages_for(words: &Words, bytes: usize) -> usize {
    let ten = pdf(words, 1, 10, false).len();
    bytes * 10 / ten
}
