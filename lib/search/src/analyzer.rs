//! How text becomes terms, the same for what is indexed and what is asked: words, lower-cased,
//! without the words that carry no meaning for a search, stemmed (English).

use tantivy::tokenizer::{
    Language, LowerCaser, RemoveLongFilter, SimpleTokenizer, Stemmer, StopWordFilter, TextAnalyzer,
};

/// The analyzer's name in an index's tokenizers.
pub const ANALYZER: &str = "en_search";

/// Words that carry no meaning for a search, questions' own words included ("how do I ...").
const STOP_WORDS: &[&str] = &[
    "a", "about", "an", "and", "are", "as", "at", "be", "by", "can", "could", "do", "does", "for",
    "from", "get", "how", "i", "if", "in", "into", "is", "it", "its", "me", "my", "of", "on", "or",
    "our", "should", "so", "than", "that", "the", "their", "then", "there", "these", "this", "to",
    "was", "we", "what", "when", "where", "which", "who", "why", "will", "with", "would", "you",
    "your",
];

/// The analyzer, to register under [`ANALYZER`].
pub fn analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(RemoveLongFilter::limit(40))
        .filter(LowerCaser)
        .filter(StopWordFilter::remove(
            STOP_WORDS.iter().map(|w| (*w).to_owned()),
        ))
        .filter(Stemmer::new(Language::English))
        .build()
}

/// A member's words as a query: query syntax (fields, ranges, operators) is not for users, so
/// everything but letters and digits becomes a space, and `error: E0502` or `a:b:c` can
/// neither drop terms nor turn into a match-all.
pub fn words(query: &str) -> String {
    query
        .chars()
        .map(|c| {
            if c.is_alphanumeric() {
                c.to_lowercase().next().unwrap_or(c)
            } else {
                ' '
            }
        })
        .collect()
}
