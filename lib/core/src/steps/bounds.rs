//! What the log keeps of oversized answers, tool inputs and tool outputs.

use serde_json::Value;

use super::EVENT_PAYLOAD_LIMIT;

/// `text` cut to [`EVENT_PAYLOAD_LIMIT`] bytes, on a character boundary, marked when cut.
pub(super) fn bounded_text(text: &str) -> String {
    if text.len() <= EVENT_PAYLOAD_LIMIT {
        return text.to_owned();
    }
    let mut end = EVENT_PAYLOAD_LIMIT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n\n[cut: the text was longer than the log keeps]",
        &text[..end]
    )
}

/// A tool's output as the log keeps it: whole when its JSON fits [`EVENT_PAYLOAD_LIMIT`],
/// otherwise `{"truncated": true, "text": <the start of its JSON>}`.
pub(super) fn bounded_output(output: Value) -> Value {
    let json = output.to_string();
    if json.len() <= EVENT_PAYLOAD_LIMIT {
        return output;
    }
    let text = bounded_text(&json);
    serde_json::json!({ "truncated": true, "text": text })
}

/// A tool call's input as the log keeps it; an oversized input keeps its start as text.
pub(super) fn bounded_input(input: &Value) -> Value {
    match bounded_output(input.clone()) {
        Value::Object(o) => Value::Object(o),
        other => serde_json::json!({ "value": other }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_longer_than_the_log_keeps_is_cut_on_a_character_boundary_and_marked() {
        let text = "é".repeat(EVENT_PAYLOAD_LIMIT);
        let cut = bounded_text(&text);
        assert!(cut.len() < EVENT_PAYLOAD_LIMIT + 100);
        assert!(cut.ends_with("[cut: the text was longer than the log keeps]"));
        assert_eq!(bounded_text("short"), "short");
    }

    #[test]
    fn an_oversized_output_keeps_the_start_of_its_json_and_says_it_was_cut() {
        let big = serde_json::json!({ "rows": vec!["x".repeat(100); 1000] });
        let kept = bounded_output(big.clone());
        assert_eq!(kept["truncated"], true);
        assert!(
            kept["text"]
                .as_str()
                .unwrap()
                .starts_with("{\"rows\":[\"xxx")
        );
        let small = serde_json::json!([1, 2]);
        assert_eq!(bounded_output(small.clone()), small);
        assert!(bounded_input(&serde_json::json!("a string")).is_object());
    }
}
