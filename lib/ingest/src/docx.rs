//! DOCX's passages: the paragraphs of `word/document.xml`, with the outline level of their style
//! (`heading 1`, … in `word/styles.xml`, or a style id `Heading1`, …) as headings. A DOCX is a
//! zip archive: each part is read with its output bounded, so a zip bomb stops at the bound,
//! and its XML is read without a DTD, so no external entity is ever resolved.

use std::collections::HashMap;
use std::io::{Cursor, Read};

use quick_xml::Reader;
use quick_xml::events::{BytesStart, Event};

use crate::passages::{Passage, Splitter};
use crate::{Bounds, Clock, Refusal};

/// Events between two checks of the clock.
const CHECK_EVERY: u32 = 4096;

pub(crate) fn passages(
    bytes: &[u8], bounds: &Bounds, clock: &Clock,
) -> Result<Vec<Passage>, Refusal> {
    let mut archive = zip::ZipArchive::new(Cursor::new(bytes))
        .map_err(|e| Refusal::Malformed(format!("not a zip archive ({e})")))?;
    let mut budget = bounds.max_expanded_bytes;
    let document = part(&mut archive, "word/document.xml", &mut budget)?
        .ok_or_else(|| Refusal::Malformed("no word/document.xml: not a Word document".into()))?;
    let styles = match part(&mut archive, "word/styles.xml", &mut budget)? {
        Some(xml) => heading_styles(&xml)?,
        None => HashMap::new(),
    };
    paragraphs(&document, &styles, bounds, clock)
}

/// A part of the archive as text, `None` if it has none by that name. What every part read
/// expands to counts against `budget`.
fn part(
    archive: &mut zip::ZipArchive<Cursor<&[u8]>>, name: &str, budget: &mut usize,
) -> Result<Option<String>, Refusal> {
    let bound = *budget;
    let entry = match archive.by_name(name) {
        Ok(entry) => entry,
        Err(zip::result::ZipError::FileNotFound) => return Ok(None),
        Err(e) => return Err(Refusal::Malformed(format!("{name}: {e}"))),
    };
    // The size the archive declares may lie: the read itself is bounded too.
    if usize::try_from(entry.size()).map_or(true, |size| size > bound) {
        return Err(Refusal::ExpandsTooMuch(bound));
    }
    let mut bytes = Vec::new();
    entry
        .take(bound as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Refusal::Malformed(format!("{name}: {e}")))?;
    if bytes.len() > bound {
        return Err(Refusal::ExpandsTooMuch(bound));
    }
    *budget -= bytes.len();
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| Refusal::Malformed(format!("{name} is not UTF-8")))
}

/// The value of an attribute named `w:<local>`.
fn attribute(e: &BytesStart<'_>, local: &str) -> Option<String> {
    e.attributes()
        .with_checks(false)
        .flatten()
        .find(|a| a.key.local_name().as_ref() == local)
        .and_then(|a| {
            a.normalized_value(quick_xml::XmlVersion::Implicit1_0)
                .ok()
                .map(|v| v.into_owned())
        })
}

/// The outline level of each heading style, by style id.
fn heading_styles(xml: &str) -> Result<HashMap<String, u8>, Refusal> {
    let mut reader = Reader::from_str(xml);
    let mut levels = HashMap::new();
    let mut style = None;
    loop {
        match reader.read_event() {
            Ok(Event::Start(e)) if e.local_name().as_ref() == "style" => {
                style = attribute(&e, "styleId");
            }
            Ok(Event::Empty(e)) if e.local_name().as_ref() == "name" => {
                let name = attribute(&e, "val")
                    .unwrap_or_default()
                    .to_ascii_lowercase();
                let level = name
                    .strip_prefix("heading ")
                    .and_then(|n| n.parse::<u8>().ok());
                if let (Some(id), Some(level)) = (&style, level.or((name == "title").then_some(1)))
                {
                    levels.insert(id.clone(), level);
                }
            }
            Ok(Event::Eof) => return Ok(levels),
            Err(e) => return Err(Refusal::Malformed(format!("word/styles.xml: {e}"))),
            _ => {}
        }
    }
}

/// The level of a paragraph style: from styles.xml, or Word's own ids (`Heading2`, `Title`).
fn level(style: &str, styles: &HashMap<String, u8>) -> Option<u8> {
    styles.get(style).copied().or_else(|| {
        let lower = style.to_ascii_lowercase();
        match lower.strip_prefix("heading") {
            Some(n) => n.parse().ok(),
            None => (lower == "title").then_some(1),
        }
    })
}

fn paragraphs(
    xml: &str, styles: &HashMap<String, u8>, bounds: &Bounds, clock: &Clock,
) -> Result<Vec<Passage>, Refusal> {
    let mut reader = Reader::from_str(xml);
    let mut splitter = Splitter::new(bounds);
    let mut text = String::new();
    let mut heading: Option<u8> = None;
    let mut in_text = false;
    let mut events = 0u32;
    loop {
        events = events.wrapping_add(1);
        if events.is_multiple_of(CHECK_EVERY) {
            clock.check()?;
        }
        let event = reader
            .read_event()
            .map_err(|e| Refusal::Malformed(format!("word/document.xml: {e}")))?;
        match event {
            Event::Start(e) if e.local_name().as_ref() == "t" => in_text = true,
            Event::Start(e) if e.local_name().as_ref() == "p" => {
                text.clear();
                heading = None;
            }
            Event::Empty(e) | Event::Start(e) => match e.local_name().as_ref() {
                "pStyle" => heading = attribute(&e, "val").and_then(|s| level(&s, styles)),
                "tab" | "br" | "cr" => text.push(' '),
                _ => {}
            },
            Event::Text(t) if in_text => text.push_str(&t.xml10_content()),
            Event::GeneralRef(r) if in_text => {
                if let Ok(Some(c)) = r.resolve_char_ref() {
                    text.push(c);
                } else if let Some(s) =
                    quick_xml::escape::resolve_predefined_entity(&r.xml10_content())
                {
                    text.push_str(s);
                }
            }
            Event::End(e) => match e.local_name().as_ref() {
                "t" => in_text = false,
                "p" => {
                    match heading.take() {
                        Some(level) => splitter.heading(level, &text)?,
                        None => splitter.block(&text)?,
                    }
                    text.clear();
                }
                _ => {}
            },
            Event::Eof => break,
            _ => {}
        }
    }
    splitter.finish()
}
