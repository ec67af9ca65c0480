//! The derived part of a file written by hand: the lines between two marker lines, replaced
//! whole. The markers stay, so that a reader sees where the derived part starts and ends.

/// What the opening marker says after its comment sign.
const BEGIN: &str = "BEGIN DERIVED: written by `cargo xtask derive` from the rows of functions (lib/assembly/src/functions/rows.rs); edit those, not this.";
const END: &str = "END DERIVED";

/// Replaces the part between `# BEGIN DERIVED…` and `# END DERIVED` (YAML, TOML).
pub fn yaml(path: &str, text: &str, part: &str) -> Result<String, String> {
    between(path, text, part, |m| format!("# {m}"))
}

/// Replaces the part between `<!-- BEGIN DERIVED… -->` and `<!-- END DERIVED -->`.
pub fn markdown(path: &str, text: &str, part: &str) -> Result<String, String> {
    between(path, text, part, |m| format!("<!-- {m} -->"))
}

fn between(
    path: &str, text: &str, part: &str, marker: impl Fn(&str) -> String,
) -> Result<String, String> {
    let (begin, end) = (marker(BEGIN), marker(END));
    let find = |marker: &str, from: usize| {
        text[from..]
            .lines()
            .scan(from, |at, line| {
                let start = *at;
                *at += line.len() + 1;
                Some((start, line))
            })
            .find(|(_, line)| line.trim_start() == marker)
            .map(|(start, line)| (start, start + line.len() + 1))
    };
    let missing = |which: &str| format!("{path}: no line `{which}` (keep both markers)");
    let (_, after_begin) = find(&begin, 0).ok_or_else(|| missing(&begin))?;
    let (before_end, _) = find(&end, after_begin).ok_or_else(|| missing(&end))?;
    Ok(format!(
        "{}{part}{}",
        &text[..after_begin],
        &text[before_end..]
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_part_between_the_markers_is_replaced_and_the_rest_kept() {
        let text = format!("head\n  # {BEGIN}\nold\nlines\n  # {END}\ntail\n");
        let done = yaml("f", &text, "new\n").unwrap();
        assert_eq!(done, format!("head\n  # {BEGIN}\nnew\n  # {END}\ntail\n"));
    }

    #[test]
    fn a_file_without_its_markers_is_an_error_naming_it() {
        let error = markdown("README.md", "no markers\n", "x\n").unwrap_err();
        assert!(
            error.starts_with("README.md: no line `<!-- BEGIN DERIVED"),
            "{error}"
        );
    }
}
