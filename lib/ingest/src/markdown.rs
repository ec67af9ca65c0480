//! Markdown's passages: headings open sections, and paragraphs, list items, code blocks and
//! table cells are blocks. Raw HTML inside Markdown is dropped, never interpreted.

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

use crate::passages::{Passage, Splitter};
use crate::{Bounds, Refusal};

pub(crate) fn passages(text: &str, bounds: &Bounds) -> Result<Vec<Passage>, Refusal> {
    let mut splitter = Splitter::new(bounds);
    let mut current = String::new();
    for event in Parser::new_ext(text, Options::ENABLE_TABLES) {
        match event {
            Event::Start(Tag::Heading { .. }) => {
                splitter.block(&current)?;
                current.clear();
            }
            Event::End(TagEnd::Heading(level)) => {
                splitter.heading(level as u8, &current)?;
                current.clear();
            }
            Event::End(
                TagEnd::Paragraph
                | TagEnd::Item
                | TagEnd::CodeBlock
                | TagEnd::TableCell
                | TagEnd::BlockQuote(_),
            ) => {
                splitter.block(&current)?;
                current.clear();
            }
            Event::Text(text) | Event::Code(text) => current.push_str(&text),
            Event::SoftBreak | Event::HardBreak => current.push(' '),
            _ => {}
        }
    }
    splitter.block(&current)?;
    splitter.finish()
}
