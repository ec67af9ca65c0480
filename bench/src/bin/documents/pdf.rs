//! Real PDFs, written with lopdf as a PDF writer would, by `lib/ingest`'s sample maker (one
//! standard font in the page tree's resources, each page's text drawn with it), with many
//! lines a page, so that the text layer reads as a page of prose.

use lopdf::Object;
use lopdf::content::Operation;

use crate::corpus::{Rng, Words};

/// Lines of a page and characters of a line: a dense page of 10-point text.
pub const LINES: usize = 56;
pub const CHARS: usize = 95;

/// A PDF of `pages` pages of prose about one topic; its content streams compressed (Flate)
/// when `compress`, as most writers do.
pub fn pdf(words: &Words, seed: u64, pages: usize, compress: bool) -> Vec<u8> {
    let mut rng = Rng::new(seed);
    let pages = (0..pages).map(|_| {
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
        operations
    });
    let mut doc = knowledge_ingest::samples::pdf_of(pages.collect::<Vec<_>>());
    if compress {
        doc.compress();
    }
    knowledge_ingest::samples::bytes(doc)
}

/// The most pages of prose that fit in `bytes` uncompressed, measured on a sample.
pub fn pages_for(words: &Words, bytes: usize) -> usize {
    let ten = pdf(words, 1, 10, false).len();
    bytes * 10 / ten
}
