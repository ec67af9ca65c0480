//! The built-in agent: deterministic, offline, no LLM. It searches every connected search tool
//! with the question, then answers in Markdown with the best passages, each under its heading
//! and source (the app lists the sources once more from the tool results, so the answer does
//! not); with nothing connected it says so plainly. It never repeats the question back. Same
//! input, same answer, so the service can be tried and tested without a provider.

use std::fmt::Write as _;

use async_trait::async_trait;
use serde_json::{Value, json};

use crate::domain::{EventBody, EventKind};
use crate::ports::{
    Agent, AgentAction, AgentError, AgentReply, AgentRequest, TokenUsage, ToolCall, ToolSpec,
};

/// Passages quoted in an answer at most.
const PASSAGES: usize = 3;
/// Characters of a passage quoted at most.
const PASSAGE_CHARS: usize = 600;

/// The model name the built-in agent reports (it calls no model, and costs nothing).
pub const BUILT_IN_MODEL: &str = "built-in";

#[derive(Debug, Default, Clone, Copy)]
pub struct BuiltinAgent;

/// Whether `tool` takes a free-text `query`, which is what the built-in agent can fill in.
fn is_search(tool: &ToolSpec) -> bool {
    tool.input_schema["properties"]["query"]["type"] == "string"
}

#[async_trait]
impl Agent for BuiltinAgent {
    async fn health(&self) -> Result<(), AgentError> {
        Ok(())
    }

    async fn respond(&self, request: AgentRequest) -> Result<AgentReply, AgentError> {
        let question = request
            .question()
            .ok_or_else(|| AgentError::Failed("no user message to answer".into()))?;
        let searched = request
            .steps
            .iter()
            .any(|e| e.kind() == EventKind::ToolResult);
        let searches: Vec<&ToolSpec> = request.tools.iter().filter(|t| is_search(t)).collect();
        let action = if !searched && !searches.is_empty() && !request.must_answer {
            AgentAction::UseTools(
                searches
                    .iter()
                    .map(|t| ToolCall {
                        tool: t.name.clone(),
                        input: json!({ "query": question }),
                    })
                    .collect(),
            )
        } else if !searched {
            AgentAction::Answer(
                "No integrations are connected to your organisation, so I have nothing to \
                 search. Connect one (the local service takes `--docs DIR`) and ask again."
                    .to_owned(),
            )
        } else {
            AgentAction::Answer(answer(&request))
        };
        Ok(AgentReply {
            action,
            model: BUILT_IN_MODEL.to_owned(),
            usage: TokenUsage::default(),
            cost_micros: 0,
        })
    }
}

/// A passage a search tool returned, in the shape the search tools answer: the documents'
/// search adds the marker that cites it.
struct Passage<'a> {
    source: &'a str,
    heading: &'a str,
    text: &'a str,
    score: f64,
    cite: Option<&'a str>,
}

fn passages(output: &Value) -> impl Iterator<Item = Passage<'_>> {
    output.as_array().into_iter().flatten().filter_map(|hit| {
        Some(Passage {
            source: hit.get("source")?.as_str()?,
            heading: hit.get("heading").and_then(Value::as_str).unwrap_or(""),
            text: hit.get("text")?.as_str()?,
            score: hit.get("score").and_then(Value::as_f64).unwrap_or(0.0),
            cite: hit
                .get("cite")
                .and_then(Value::as_str)
                .filter(|c| is_marker(c)),
        })
    })
}

/// Whether `text` is exactly a citation marker, `[[cite:col_…/doc_…#n]]`: only such a marker
/// is copied into an answer.
fn is_marker(text: &str) -> bool {
    let Some(inner) = text
        .strip_prefix("[[cite:")
        .and_then(|t| t.strip_suffix("]]"))
    else {
        return false;
    };
    let Some((path, place)) = inner.split_once('#') else {
        return false;
    };
    let Some((collection, document)) = path.split_once('/') else {
        return false;
    };
    crate::ids::CollectionId::parse(collection).is_ok()
        && crate::ids::DocumentId::parse(document).is_ok()
        && !place.is_empty()
        && place.bytes().all(|b| b.is_ascii_digit())
}

/// The Markdown answer from the turn's tool results: the best passages over all tools, each
/// quoted under its heading and source.
fn answer(request: &AgentRequest) -> String {
    let mut found: Vec<Passage<'_>> = request
        .steps
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::ToolResult { output, .. } => Some(output),
            _ => None,
        })
        .flat_map(passages)
        .collect();
    found.sort_by(|a, b| b.score.total_cmp(&a.score));
    if found.is_empty() {
        return "I searched the connected documents and found nothing that matches. Try other \
                words, or ask an admin whether the documents you need are in a collection you \
                may open."
            .to_owned();
    }
    let mut text = String::from("Here is what I found in your documents:\n");
    for p in found.iter().take(PASSAGES) {
        let title = if p.heading.is_empty() {
            p.source
        } else {
            p.heading
        };
        let _ = write!(text, "\n**{title}** (`{}`)", p.source);
        if let Some(cite) = p.cite {
            let _ = write!(text, " {cite}");
        }
        text.push_str("\n\n");
        let mut body: String = p.text.chars().take(PASSAGE_CHARS).collect();
        if body.len() < p.text.len() {
            body.push('…');
        }
        for line in body.lines() {
            let _ = writeln!(text, "> {line}");
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::Timestamp;
    use crate::domain::Event;
    use crate::ids::OrgId;

    fn event(seq: u64, kind: EventKind, payload: Value) -> Event {
        Event {
            seq,
            body: EventBody::from_stored(kind, payload).unwrap(),
            occurred_at: Timestamp(0),
        }
    }

    fn search_tool() -> ToolSpec {
        ToolSpec {
            name: "search_docs".into(),
            description: "Search".into(),
            input_schema: json!({"type": "object", "properties": {"query": {"type": "string"}}}),
            hints: crate::domain::ToolHints::default(),
        }
    }

    fn request(steps: Vec<Event>, tools: Vec<ToolSpec>) -> AgentRequest {
        AgentRequest {
            org: OrgId::parse("org_a").unwrap(),
            history: vec![event(
                1,
                EventKind::UserMessage,
                json!({"text": "How to cancel?"}),
            )],
            steps,
            must_answer: tools.is_empty(),
            memory: None,
            tools,
        }
    }

    #[tokio::test]
    async fn with_a_search_tool_it_searches_first_with_the_question() {
        let reply = BuiltinAgent
            .respond(request(vec![], vec![search_tool()]))
            .await
            .unwrap();
        assert_eq!(
            reply.action,
            AgentAction::UseTools(vec![ToolCall {
                tool: "search_docs".into(),
                input: json!({"query": "How to cancel?"}),
            }])
        );
    }

    #[tokio::test]
    async fn after_searching_it_quotes_the_best_passages_with_their_sources_once() {
        let steps = vec![
            event(
                2,
                EventKind::ToolUse,
                json!({"tool": "search_docs", "input": {}}),
            ),
            event(
                3,
                EventKind::ToolResult,
                json!({"tool": "search_docs", "output": [
                    {"source": "low.md", "heading": "Low", "text": "weak match", "score": 0.5},
                    {"source": "cancel.md", "heading": "Cancelling", "text": "POST cancel", "score": 2.0},
                ]}),
            ),
        ];
        let reply = BuiltinAgent
            .respond(request(steps, vec![search_tool()]))
            .await
            .unwrap();
        let AgentAction::Answer(text) = reply.action else {
            panic!("expected an answer")
        };
        let best = text
            .find("**Cancelling** (`cancel.md`)")
            .expect("best passage");
        let weak = text.find("**Low** (`low.md`)").expect("second passage");
        assert!(best < weak, "{text}");
        assert!(text.contains("> POST cancel"), "{text}");
        // Each source once, under its passage; the question is not repeated back.
        assert_eq!(text.matches("cancel.md").count(), 1, "{text}");
        assert!(!text.contains("How to cancel?"), "{text}");
    }

    #[tokio::test]
    async fn with_nothing_connected_it_says_so() {
        let reply = BuiltinAgent.respond(request(vec![], vec![])).await.unwrap();
        let AgentAction::Answer(text) = reply.action else {
            panic!("expected an answer")
        };
        assert!(text.contains("No integrations are connected"), "{text}");
    }

    #[tokio::test]
    async fn it_cites_a_passage_by_its_marker_and_copies_nothing_else_as_one() {
        let cite =
            "[[cite:col_0123456789abcdef0123456789abcdef/doc_0123456789abcdef0123456789abcdef#4]]";
        let steps = vec![
            event(
                2,
                EventKind::ToolUse,
                json!({"tool": "search_documents", "input": {}}),
            ),
            event(
                3,
                EventKind::ToolResult,
                json!({"tool": "search_documents", "output": [
                    {"source": "a.md", "heading": "A", "text": "alpha", "score": 2.0, "cite": cite},
                    {"source": "b.md", "heading": "B", "text": "beta", "score": 1.0,
                     "cite": "[[cite:javascript:alert(1)]]"},
                ]}),
            ),
        ];
        let reply = BuiltinAgent
            .respond(request(steps, vec![search_tool()]))
            .await
            .unwrap();
        let AgentAction::Answer(text) = reply.action else {
            panic!("expected an answer")
        };
        assert!(text.contains(&format!("**A** (`a.md`) {cite}")), "{text}");
        assert!(!text.contains("javascript"), "{text}");
    }
}
