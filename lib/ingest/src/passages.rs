//! Passages: a document's blocks of text gathered into pieces of about [`TARGET_WORDS`] words,
//! never across a heading or a page, each with the headings it sits under or its page.

use crate::{Bounds, Refusal};

/// The words a passage gathers before it closes at the next block.
pub const TARGET_WORDS: usize = 250;
/// The most words of a passage: a longer block is cut between words.
const MAX_WORDS: usize = 400;

/// A piece of a document a search can return and an answer can cite.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Passage {
    /// The headings it sits under, outermost first (empty before the first heading).
    pub headings: Vec<String>,
    /// Its page, counted from 1, in a format that has pages (PDF).
    pub page: Option<u32>,
    /// Its text: blocks separated by a blank line, spaces within a block collapsed.
    pub text: String,
}

/// Gathers blocks into passages, in document order.
pub(crate) struct Splitter<'b> {
    bounds: &'b Bounds,
    /// The open headings, by level.
    headings: Vec<(u8, String)>,
    page: Option<u32>,
    text: String,
    words: usize,
    done: Vec<Passage>,
}

impl<'b> Splitter<'b> {
    pub(crate) fn new(bounds: &'b Bounds) -> Self {
        Self {
            bounds,
            headings: Vec::new(),
            page: None,
            text: String::new(),
            words: 0,
            done: Vec::new(),
        }
    }

    /// A heading of `level` (1 the outermost): it closes the passage, and the headings at its
    /// level or deeper. Its text also starts the next passage, so a search for a section's
    /// title finds the section.
    pub(crate) fn heading(&mut self, level: u8, text: &str) -> Result<(), Refusal> {
        self.close()?;
        let text = collapse(text);
        if text.is_empty() {
            return Ok(());
        }
        self.headings.retain(|(open, _)| *open < level);
        self.headings.push((level, text.clone()));
        self.block(&text)
    }

    /// A new page: it closes the passage.
    pub(crate) fn page(&mut self, page: u32) -> Result<(), Refusal> {
        self.close()?;
        self.page = Some(page);
        Ok(())
    }

    /// A block of text (a paragraph, a list item, a cell, a code block).
    pub(crate) fn block(&mut self, text: &str) -> Result<(), Refusal> {
        let text = collapse(text);
        let words: Vec<&str> = text.split(' ').filter(|w| !w.is_empty()).collect();
        if words.is_empty() {
            return Ok(());
        }
        if self.words > 0 && self.words + words.len() > MAX_WORDS {
            self.close()?;
        }
        for piece in words.chunks(MAX_WORDS) {
            if self.words > 0 && self.words + piece.len() > MAX_WORDS {
                self.close()?;
            }
            if !self.text.is_empty() {
                self.text.push_str("\n\n");
            }
            self.text.push_str(&piece.join(" "));
            self.words += piece.len();
        }
        if self.words >= TARGET_WORDS {
            self.close()?;
        }
        Ok(())
    }

    /// The passages, the last one closed.
    pub(crate) fn finish(mut self) -> Result<Vec<Passage>, Refusal> {
        self.close()?;
        Ok(self.done)
    }

    fn close(&mut self) -> Result<(), Refusal> {
        if self.words == 0 {
            return Ok(());
        }
        if self.done.len() >= self.bounds.max_passages {
            return Err(Refusal::TooManyPassages(self.bounds.max_passages));
        }
        self.done.push(Passage {
            headings: self.headings.iter().map(|(_, h)| h.clone()).collect(),
            page: self.page,
            text: std::mem::take(&mut self.text),
        });
        self.words = 0;
        Ok(())
    }
}

/// Runs of whitespace as one space, none at the ends.
fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Plain text's passages: blocks are separated by blank lines.
pub(crate) fn plain(text: &str, bounds: &Bounds) -> Result<Vec<Passage>, Refusal> {
    let mut splitter = Splitter::new(bounds);
    plain_blocks(&mut splitter, text)?;
    splitter.finish()
}

/// The blocks of `text`, separated by blank lines, given to `splitter`.
pub(crate) fn plain_blocks(splitter: &mut Splitter<'_>, text: &str) -> Result<(), Refusal> {
    let mut block = String::new();
    for line in text.lines() {
        if line.trim().is_empty() {
            splitter.block(&block)?;
            block.clear();
        } else {
            block.push_str(line);
            block.push('\n');
        }
    }
    splitter.block(&block)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(n: usize, word: &str) -> String {
        vec![word; n].join(" ")
    }

    #[test]
    fn blocks_gather_until_the_target_and_a_heading_closes_a_passage() {
        let bounds = Bounds::DEFAULT;
        let mut s = Splitter::new(&bounds);
        s.heading(1, "Leave").unwrap();
        s.block(&words(100, "a")).unwrap();
        s.block(&words(200, "b")).unwrap();
        s.block("after the target").unwrap();
        s.heading(2, "  Parental\nleave ").unwrap();
        s.block("two weeks").unwrap();
        s.heading(1, "Pay").unwrap();
        let passages = s.finish().unwrap();
        assert_eq!(passages.len(), 4);
        assert!(passages[0].text.starts_with("Leave\n\na a"));
        assert_eq!(passages[0].headings, ["Leave"]);
        assert_eq!(passages[1].text, "after the target");
        assert_eq!(passages[2].headings, ["Leave", "Parental leave"]);
        assert_eq!(passages[2].text, "Parental leave\n\ntwo weeks");
        assert_eq!(passages[3].headings, ["Pay"]);
    }

    #[test]
    fn a_block_longer_than_a_passage_is_cut_between_words() {
        let bounds = Bounds::DEFAULT;
        let mut s = Splitter::new(&bounds);
        s.block(&words(MAX_WORDS * 2 + 10, "w")).unwrap();
        let passages = s.finish().unwrap();
        let counts: Vec<usize> = passages.iter().map(|p| p.text.split(' ').count()).collect();
        assert_eq!(counts, [MAX_WORDS, MAX_WORDS, 10]);
    }

    #[test]
    fn more_passages_than_the_bound_is_a_refusal_naming_it() {
        let bounds = Bounds {
            max_passages: 2,
            ..Bounds::DEFAULT
        };
        let text = (0..3)
            .map(|_| words(TARGET_WORDS, "x"))
            .collect::<Vec<_>>()
            .join("\n\n");
        assert_eq!(plain(&text, &bounds), Err(Refusal::TooManyPassages(2)));
    }
}
