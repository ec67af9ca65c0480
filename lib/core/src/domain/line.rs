//! Stored text made safe to place on one line of a prompt: notes, tool names and tool outputs
//! carried into what a model reads must not start a line of their own, or a note could forge
//! another note (or an instruction) below it.

use std::borrow::Cow;

/// Whether `c` ends a line for some reader: the ASCII breaks (LF, VT, FF, CR), NEL (U+0085),
/// and Unicode's line and paragraph separators (U+2028, U+2029).
pub fn breaks_line(c: char) -> bool {
    matches!(
        c,
        '\n' | '\u{0B}' | '\u{0C}' | '\r' | '\u{85}' | '\u{2028}' | '\u{2029}'
    )
}

/// `text` as one line: every line break ([`breaks_line`]) and every other control character
/// (tab included) becomes a space. Text that holds none is returned as it is, unallocated.
pub fn one_line(text: &str) -> Cow<'_, str> {
    let unsafe_char = |c: char| breaks_line(c) || c.is_control();
    if !text.chars().any(unsafe_char) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(
        text.chars()
            .map(|c| if unsafe_char(c) { ' ' } else { c })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_line_break_and_control_character_becomes_a_space() {
        let forged = "a\rb\nc\u{0B}d\u{0C}e\u{85}f\u{2028}g\u{2029}h\ti\u{0}j\u{7F}k\u{9B}l";
        assert_eq!(one_line(forged), "a b c d e f g h i j k l");
        assert!(!one_line(forged).chars().any(breaks_line));
    }

    #[test]
    fn text_of_one_line_is_returned_as_it_is() {
        let text = "Prefers answers in French — «merci» ✓";
        assert!(matches!(one_line(text), Cow::Borrowed(t) if t == text));
    }
}
