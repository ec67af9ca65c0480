//! A conversation's title as a member names it, and the words a member finds conversations by.

use super::{SessionSummary, TITLE_CHARS};
use crate::error::CoreError;

/// A title a member chose: trimmed, 1 to [`TITLE_CHARS`] characters, no control characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Title(String);

impl Title {
    /// Errors: `InvalidInput` (`empty_field`, or `invalid_title` when too long or holding a
    /// control character such as a line break).
    pub fn parse(text: &str) -> Result<Self, CoreError> {
        let title = text.trim();
        if title.is_empty() {
            return Err(CoreError::invalid("empty_field", "title must not be empty"));
        }
        if title.chars().count() > TITLE_CHARS {
            return Err(CoreError::invalid(
                "invalid_title",
                format!("title must be at most {TITLE_CHARS} characters"),
            ));
        }
        if title.chars().any(char::is_control) {
            return Err(CoreError::invalid(
                "invalid_title",
                "title must be one line of text",
            ));
        }
        Ok(Self(title.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// At most this many words are looked for in a title.
pub const FIND_WORDS: usize = 8;
/// A search longer than this is refused.
pub const FIND_CHARS: usize = 200;
/// A search covers at least this many of the member's most recently updated sessions in the
/// organisation (every one of them on the embedded stores).
pub const FIND_SCAN: usize = 6_000;

/// Words to find in titles: a title matches when it holds every word, whatever their case
/// (Unicode lower case), anywhere (a word may be part of a longer one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TitleQuery {
    words: Vec<String>,
}

impl TitleQuery {
    /// Errors: `InvalidInput` (`empty_field` for no word; `invalid_query` for more than
    /// [`FIND_CHARS`] characters or [`FIND_WORDS`] words).
    pub fn parse(q: &str) -> Result<Self, CoreError> {
        if q.chars().count() > FIND_CHARS {
            return Err(CoreError::invalid(
                "invalid_query",
                format!("q must be at most {FIND_CHARS} characters"),
            ));
        }
        let words: Vec<String> = q.split_whitespace().map(str::to_lowercase).collect();
        if words.is_empty() {
            return Err(CoreError::invalid("empty_field", "q must not be empty"));
        }
        if words.len() > FIND_WORDS {
            return Err(CoreError::invalid(
                "invalid_query",
                format!("q must have at most {FIND_WORDS} words"),
            ));
        }
        Ok(Self { words })
    }

    /// Whether `title` holds every word.
    pub fn matches(&self, title: &str) -> bool {
        let folded = title.to_lowercase();
        self.words.iter().all(|w| folded.contains(w.as_str()))
    }
}

/// The conversations a search found, most recently updated first.
#[derive(Debug, Clone, PartialEq)]
pub struct FoundSessions {
    pub sessions: Vec<SessionSummary>,
    /// Every conversation of the member was searched; when `false`, only the most recent
    /// ones the store bounds a search to were (see the store's `find_sessions`).
    pub complete: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_title_is_trimmed_and_refused_when_empty_too_long_or_on_two_lines() {
        assert_eq!(Title::parse("  Refunds ").unwrap().as_str(), "Refunds");
        assert!(Title::parse("   ").is_err());
        assert!(Title::parse(&"é".repeat(60)).is_ok());
        assert!(Title::parse(&"é".repeat(61)).is_err());
        assert!(Title::parse("two\nlines").is_err());
    }

    #[test]
    fn a_query_matches_titles_holding_every_word_whatever_the_case() {
        let q = TitleQuery::parse("  REFUND  Pol ").unwrap();
        assert!(q.matches("Our refund policy"));
        assert!(q.matches("POLICY on refunds"));
        assert!(!q.matches("Refund timeline"));
        assert!(TitleQuery::parse("ÉTÉ").unwrap().matches("l'été dernier"));
    }

    #[test]
    fn a_query_without_words_or_with_too_many_is_refused() {
        assert!(TitleQuery::parse(" \t ").is_err());
        assert!(TitleQuery::parse(&"a ".repeat(FIND_WORDS + 1)).is_err());
        assert!(TitleQuery::parse(&"a".repeat(FIND_CHARS + 1)).is_err());
    }
}
