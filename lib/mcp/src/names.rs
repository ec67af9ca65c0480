//! The names under which a server's tools are offered to the agent, and what the server says
//! of each (its annotations, as the core's hints).

use knowledge_core::domain::ToolHints;
use rmcp::model::ToolAnnotations;

/// Longest tool name every provider's tool-calling API accepts.
pub const MAX_TOOL_NAME: usize = 64;

/// `<integration>_<tool>` with every character outside `[A-Za-z0-9_-]` replaced by `_`, cut to
/// [`MAX_TOOL_NAME`] characters. Different tools can map to one name: an integration then
/// offers only the first of them, in the server's order.
pub fn exposed_tool_name(integration: &str, tool: &str) -> String {
    format!("{integration}_{tool}")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(MAX_TOOL_NAME)
        .collect()
}

/// Pairs each of `tools` (in the server's order) with its exposed name, leaving out a tool
/// whose exposed name an earlier one already took, so that names stay unique and the choice
/// is stable.
pub(crate) fn unique_names<T>(
    integration: &str, tools: Vec<T>, name: impl Fn(&T) -> &str,
) -> Vec<(String, T)> {
    let mut named: Vec<(String, T)> = Vec::new();
    for tool in tools {
        let exposed = exposed_tool_name(integration, name(&tool));
        if named.iter().any(|(taken, _)| *taken == exposed) {
            tracing::warn!(
                integration,
                tool = name(&tool),
                exposed,
                "left out an MCP tool whose exposed name another tool of the server has"
            );
            continue;
        }
        named.push((exposed, tool));
    }
    named
}

/// The hints a tool's annotations give; none where it has none (so it asks before it runs).
pub(crate) fn hints(annotations: Option<&ToolAnnotations>) -> ToolHints {
    annotations.map_or_else(ToolHints::default, |a| ToolHints {
        read_only: a.read_only_hint,
        destructive: a.destructive_hint,
        idempotent: a.idempotent_hint,
        open_world: a.open_world_hint,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_valid_tool_name_is_prefixed_with_the_integration_and_kept() {
        assert_eq!(exposed_tool_name("wiki", "search"), "wiki_search");
        assert_eq!(
            exposed_tool_name("my-wiki", "get-Page_2"),
            "my-wiki_get-Page_2"
        );
    }

    #[test]
    fn characters_outside_the_allowed_set_become_underscores() {
        assert_eq!(exposed_tool_name("wiki", "pages.get"), "wiki_pages_get");
        assert_eq!(exposed_tool_name("wiki", "a b/c:d"), "wiki_a_b_c_d");
        // One underscore per character, whatever its UTF-8 length.
        assert_eq!(exposed_tool_name("wiki", "é✓"), "wiki___");
    }

    #[test]
    fn long_names_are_cut_to_sixty_four_characters() {
        let name = exposed_tool_name("wiki", &"x".repeat(100));
        assert_eq!(name.len(), MAX_TOOL_NAME);
        assert!(name.starts_with("wiki_xxx"));
        assert_eq!(
            exposed_tool_name("wiki", &"é".repeat(100)).len(),
            MAX_TOOL_NAME
        );
    }

    #[test]
    fn tools_that_map_to_a_taken_name_are_left_out_keeping_the_first() {
        let long_a = format!("{}a", "x".repeat(70));
        let long_b = format!("{}b", "x".repeat(70));
        let tools = vec!["pages.get", "pages_get", "search", &long_a, &long_b];
        let named = unique_names("wiki", tools, |t| t);
        let originals: Vec<&str> = named.iter().map(|(_, tool)| *tool).collect();
        assert_eq!(originals, ["pages.get", "search", long_a.as_str()]);
        assert_eq!(named[0].0, "wiki_pages_get");
    }
}
