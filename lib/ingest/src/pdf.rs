//! A PDF's passages: the text layer of each page, in order, each passage on one page. An
//! encrypted PDF that opens without a password (an owner password only) is read; one that needs
//! a password is refused, and so is one without any text (a scan: no OCR here).

use lopdf::Document;

use crate::passages::{Passage, Splitter, plain_blocks};
use crate::{Bounds, Clock, Refusal};

pub(crate) fn passages(
    bytes: &[u8], bounds: &Bounds, clock: &Clock,
) -> Result<Vec<Passage>, Refusal> {
    let mut document = Document::load_mem(bytes)
        .map_err(|e| Refusal::Malformed(format!("not a readable PDF ({e})")))?;
    if document.is_encrypted() && document.decrypt("").is_err() {
        return Err(Refusal::Encrypted);
    }
    let pages = document.get_pages();
    if pages.len() > bounds.max_pages {
        return Err(Refusal::TooManyPages(bounds.max_pages));
    }
    let mut splitter = Splitter::new(bounds);
    let mut any_text = false;
    for &number in pages.keys() {
        clock.check()?;
        let mut text = String::new();
        let mut output = pdf_extract::PlainTextOutput::new(&mut text);
        pdf_extract::output_doc_page(&document, &mut output, number)
            .map_err(|e| Refusal::Malformed(format!("page {number}: {e}")))?;
        any_text |= text.chars().any(char::is_alphanumeric);
        splitter.page(number)?;
        plain_blocks(&mut splitter, &text)?;
    }
    if !any_text {
        return Err(Refusal::NoTextLayer);
    }
    splitter.finish()
}
