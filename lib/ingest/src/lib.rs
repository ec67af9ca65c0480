//! Documents made into passages. A file's format is told from its name and its first bytes
//! ([`Format::detect`], the core's); it is parsed under [`Bounds`] (input size, expanded size,
//! pages, time, passages) and split into [`Passage`]s of a few hundred words, each with the
//! path of headings it sits under (Markdown, HTML, DOCX) or its page (PDF). Nothing in a file is executed, fetched or
//! followed: scripts and styles are dropped, links are text, external entities are never read.
//!
//! A file that breaks a bound, has no text, or cannot be read is a [`Refusal`] whose message a
//! person can act on; parsing never panics out of [`parse`]. [`Ingest`] is the core's `Parser`
//! port on it.

mod docx;
mod html;
pub mod isolated;
mod markdown;
mod passages;
mod pdf;
mod port;
#[cfg(feature = "samples")]
pub mod samples;

use std::time::{Duration, Instant};

pub use isolated::Isolated;
pub use knowledge_core::domain::{Format, FormatRefusal};
pub use passages::{Passage, TARGET_WORDS};
pub use port::Ingest;

/// How far parsing one file may go.
#[derive(Clone, Copy, Debug)]
pub struct Bounds {
    /// The most bytes of the file itself.
    pub max_bytes: usize,
    /// The most bytes a compressed format may expand to (a DOCX's XML): a zip bomb stops here.
    pub max_expanded_bytes: usize,
    /// The most pages of a PDF.
    pub max_pages: usize,
    /// The most passages of one file.
    pub max_passages: usize,
    /// How long parsing may take, checked between pages and parts (not preemptive: a worker
    /// that must be bounded hard runs parsing in a process of its own).
    pub max_time: Duration,
}

impl Bounds {
    /// 25 MiB a file, 8 times that expanded, 5,000 pages, 50,000 passages, a minute.
    pub const DEFAULT: Self = Self {
        max_bytes: 25 << 20,
        max_expanded_bytes: 200 << 20,
        max_pages: 5_000,
        max_passages: 50_000,
        max_time: Duration::from_secs(60),
    };
}

impl Default for Bounds {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// Why a file was not made into passages: each says what a person can do about it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("this format is not read: upload Markdown, text, HTML, PDF or DOCX")]
    Unsupported,
    #[error("the file's content is not {}: it may be damaged or misnamed", .0.media_type())]
    NotWhatItSays(Format),
    #[error("the file is larger than {0} bytes")]
    TooLarge(usize),
    #[error("the file expands to more than {0} bytes (a compressed archive that is too large)")]
    ExpandsTooMuch(usize),
    #[error("the PDF has more than {0} pages")]
    TooManyPages(usize),
    #[error("the file makes more than {0} passages")]
    TooManyPassages(usize),
    #[error("reading the file took longer than {} s", .0.as_secs())]
    TooSlow(Duration),
    #[error("the PDF is encrypted: upload it without a password")]
    Encrypted,
    #[error("the PDF has no text layer (a scan?): upload a PDF with text, or its text")]
    NoTextLayer,
    #[error("the file has no text")]
    Empty,
    #[error("the file could not be read: {0}")]
    Malformed(String),
}

impl From<FormatRefusal> for Refusal {
    fn from(refusal: FormatRefusal) -> Self {
        match refusal {
            FormatRefusal::Unsupported => Self::Unsupported,
            FormatRefusal::NotWhatItSays(format) => Self::NotWhatItSays(format),
        }
    }
}

/// The passages of `bytes`, a file in `format`, within `bounds`.
///
/// # Errors
/// A [`Refusal`] saying which bound it broke or why it could not be read. A panic inside a
/// parser (a library's) is caught and becomes [`Refusal::Malformed`].
pub fn parse(format: Format, bytes: &[u8], bounds: &Bounds) -> Result<Vec<Passage>, Refusal> {
    if bytes.len() > bounds.max_bytes {
        return Err(Refusal::TooLarge(bounds.max_bytes));
    }
    let clock = Clock::start(bounds.max_time);
    let parsed = std::panic::catch_unwind(|| match format {
        Format::Markdown => markdown::passages(text(bytes)?, bounds),
        Format::Text => passages::plain(text(bytes)?, bounds),
        Format::Html => html::passages(text(bytes)?, bounds, &clock),
        Format::Pdf => pdf::passages(bytes, bounds, &clock),
        Format::Docx => docx::passages(bytes, bounds, &clock),
    });
    let passages =
        parsed.unwrap_or_else(|_| Err(Refusal::Malformed("the parser failed".into())))?;
    if passages.is_empty() {
        return Err(Refusal::Empty);
    }
    Ok(passages)
}

/// A text format's bytes as UTF-8 (a byte-order mark dropped).
fn text(bytes: &[u8]) -> Result<&str, Refusal> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    std::str::from_utf8(bytes).map_err(|e| Refusal::Malformed(format!("not UTF-8 text ({e})")))
}

/// The time a parse has left.
pub(crate) struct Clock {
    started: Instant,
    bound: Duration,
}

impl Clock {
    fn start(bound: Duration) -> Self {
        Self {
            started: Instant::now(),
            bound,
        }
    }

    /// An error once the bound is past.
    pub(crate) fn check(&self) -> Result<(), Refusal> {
        if self.started.elapsed() > self.bound {
            Err(Refusal::TooSlow(self.bound))
        } else {
            Ok(())
        }
    }
}
