//! HTML's passages, from the tokens a browser's tokenizer would see, streamed: no tree is built,
//! so no nesting depth can exhaust the stack or the memory. Headings `h1`–`h6` open sections;
//! block elements end blocks. The contents of `script`, `style`, `template` and the like are
//! dropped, links are their text, and nothing is fetched.

use std::cell::{Cell, RefCell};

use html5ever::tendril::StrTendril;
use html5ever::tokenizer::states::RawKind;
use html5ever::tokenizer::{
    BufferQueue, EndTag, StartTag, Tag, Token, TokenSink, TokenSinkResult, Tokenizer, TokenizerOpts,
};

use crate::passages::{Passage, Splitter};
use crate::{Bounds, Clock, Refusal};

/// Elements whose end or start ends a block of text.
const BLOCKS: &[&str] = &[
    "p",
    "div",
    "li",
    "br",
    "tr",
    "td",
    "th",
    "pre",
    "blockquote",
    "section",
    "article",
    "header",
    "footer",
    "table",
    "ul",
    "ol",
    "dl",
    "dd",
    "dt",
    "hr",
    "main",
    "nav",
    "aside",
    "figure",
    "figcaption",
    "caption",
    "form",
    "body",
];

/// Elements whose content is never text of the document.
const DROPPED: &[&str] = &[
    "script", "style", "template", "noscript", "iframe", "object", "svg", "math", "title", "head",
    "textarea", "select",
];

/// Tokens between two checks of the clock.
const CHECK_EVERY: u32 = 4096;

pub(crate) fn passages(
    text: &str, bounds: &Bounds, clock: &Clock,
) -> Result<Vec<Passage>, Refusal> {
    let sink = Sink {
        splitter: RefCell::new(Splitter::new(bounds)),
        current: RefCell::new(String::new()),
        heading: Cell::new(None),
        dropping: RefCell::new(None),
        failed: RefCell::new(None),
        clock,
        tokens: Cell::new(0),
    };
    let input = BufferQueue::default();
    input.push_back(StrTendril::from_slice(text));
    let tokenizer = Tokenizer::new(sink, TokenizerOpts::default());
    let _ = tokenizer.feed(&input);
    tokenizer.end();
    let sink = tokenizer.sink;
    if let Some(refusal) = sink.failed.into_inner() {
        return Err(refusal);
    }
    let mut splitter = sink.splitter.into_inner();
    splitter.block(&sink.current.into_inner())?;
    splitter.finish()
}

struct Sink<'b, 'c> {
    splitter: RefCell<Splitter<'b>>,
    /// The text of the block being read.
    current: RefCell<String>,
    /// The level of the heading being read.
    heading: Cell<Option<u8>>,
    /// The element whose content is being dropped, until its end tag.
    dropping: RefCell<Option<String>>,
    /// The first refusal: every token after it is ignored.
    failed: RefCell<Option<Refusal>>,
    clock: &'c Clock,
    tokens: Cell<u32>,
}

impl Sink<'_, '_> {
    fn tag(&self, tag: &Tag) -> Result<TokenSinkResult<()>, Refusal> {
        let name: &str = &tag.name;
        let dropping = self.dropping.borrow().is_some();
        if dropping {
            let ends = tag.kind == EndTag && self.dropping.borrow().as_deref() == Some(name);
            if ends {
                self.dropping.replace(None);
            }
            return Ok(TokenSinkResult::Continue);
        }
        if tag.kind == StartTag && !tag.self_closing && DROPPED.contains(&name) {
            self.dropping.replace(Some(name.to_owned()));
            // The tokenizer reads their content as the browser does, so a `</p>` inside a
            // script is not taken for markup.
            return Ok(match name {
                "script" => TokenSinkResult::RawData(RawKind::ScriptData),
                "style" | "iframe" | "noscript" => TokenSinkResult::RawData(RawKind::Rawtext),
                "title" | "textarea" => TokenSinkResult::RawData(RawKind::Rcdata),
                _ => TokenSinkResult::Continue,
            });
        }
        let level = match name.as_bytes() {
            [b'h', d @ b'1'..=b'6'] => Some(d - b'0'),
            _ => None,
        };
        let mut splitter = self.splitter.borrow_mut();
        let mut current = self.current.borrow_mut();
        match (tag.kind, level) {
            (StartTag, Some(level)) => {
                splitter.block(&current)?;
                current.clear();
                self.heading.set(Some(level));
            }
            (EndTag, Some(_)) => {
                if let Some(level) = self.heading.take() {
                    splitter.heading(level, &current)?;
                    current.clear();
                }
            }
            _ if BLOCKS.contains(&name) && self.heading.get().is_none() => {
                splitter.block(&current)?;
                current.clear();
            }
            _ => {}
        }
        Ok(TokenSinkResult::Continue)
    }
}

impl TokenSink for Sink<'_, '_> {
    type Handle = ();

    fn process_token(&self, token: Token, _line: u64) -> TokenSinkResult<()> {
        if self.failed.borrow().is_some() {
            return TokenSinkResult::Continue;
        }
        let count = self.tokens.get().wrapping_add(1);
        self.tokens.set(count);
        let outcome = if count.is_multiple_of(CHECK_EVERY) {
            self.clock.check()
        } else {
            Ok(())
        }
        .and_then(|()| match token {
            Token::TagToken(tag) => self.tag(&tag),
            Token::CharacterTokens(text) => {
                if self.dropping.borrow().is_none() {
                    self.current.borrow_mut().push_str(&text);
                }
                Ok(TokenSinkResult::Continue)
            }
            _ => Ok(TokenSinkResult::Continue),
        });
        outcome.unwrap_or_else(|refusal| {
            self.failed.replace(Some(refusal));
            TokenSinkResult::Continue
        })
    }
}
