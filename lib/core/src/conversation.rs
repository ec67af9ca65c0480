//! The conversation a provider sees, rebuilt from the session's event log alone, so that any
//! process (a fresh Lambda included) can resume a turn.
//!
//! The log does not store provider call ids. Each `tool_use` event gets the id `call_<seq>`,
//! and `tool_result` events answer the open calls in order, which is the order the workflow
//! runs them in. The rebuilt list keeps the invariants both provider APIs insist on:
//! it starts with a user message, and every [`Message::ToolCalls`] is followed at once by a
//! [`Message::ToolResults`] answering exactly its calls, in order. A call left without a result
//! (its turn was cancelled or failed) gets a synthetic error result; a result whose call fell
//! outside the history window is dropped.
//!
//! A follow-up is logged when it is sent, which may be while an earlier turn is still running;
//! it is placed after that turn's end (`status_idle` or `status_terminated`), where the
//! conversation reached it, so each answer follows its own question.

use serde_json::{Value, json};

use crate::domain::{Event, EventBody};

/// One message of the rebuilt conversation.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    User(String),
    /// A final answer of an earlier turn.
    Assistant(String),
    /// The tool calls of one agent step.
    ToolCalls(Vec<CallRecord>),
    /// The results of the calls of the [`Message::ToolCalls`] before it, in the same order.
    ToolResults(Vec<ResultRecord>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct CallRecord {
    pub id: String,
    pub tool: String,
    pub input: Value,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ResultRecord {
    pub id: String,
    pub tool: String,
    pub output: Value,
}

impl ResultRecord {
    /// Whether the output is the `{"error": ...}` object the workflow records for a failed call.
    pub fn is_error(&self) -> bool {
        self.output
            .as_object()
            .is_some_and(|o| o.len() == 1 && o.contains_key("error"))
    }
}

/// The output recorded for a call that never returned.
fn unanswered() -> Value {
    json!({ "error": "no result: the turn ended before the tool returned" })
}

#[derive(Default)]
struct Builder {
    out: Vec<Message>,
    calls: Vec<CallRecord>,
    results: Vec<ResultRecord>,
    /// A turn is running: a user message now was queued behind it.
    in_turn: bool,
    /// Those queued user messages, placed when the turn ends.
    queued: Vec<String>,
}

impl Builder {
    /// Emits the open tool-call group, answering its unanswered calls.
    fn close(&mut self) {
        if self.calls.is_empty() {
            return;
        }
        for call in &self.calls[self.results.len()..] {
            self.results.push(ResultRecord {
                id: call.id.clone(),
                tool: call.tool.clone(),
                output: unanswered(),
            });
        }
        self.out
            .push(Message::ToolCalls(std::mem::take(&mut self.calls)));
        self.out
            .push(Message::ToolResults(std::mem::take(&mut self.results)));
    }

    fn push(&mut self, event: &Event) {
        match &event.body {
            EventBody::UserMessage { text } if self.in_turn => self.queued.push(text.clone()),
            EventBody::UserMessage { text } => {
                self.close();
                self.out.push(Message::User(text.clone()));
                self.in_turn = true;
            }
            EventBody::AgentMessage { text } => {
                self.close();
                self.out.push(Message::Assistant(text.clone()));
            }
            EventBody::ToolUse { tool, input, .. } => {
                if !self.results.is_empty() {
                    self.close();
                }
                self.calls.push(CallRecord {
                    id: format!("call_{}", event.seq),
                    tool: tool.clone(),
                    input: match input {
                        Value::Object(_) => input.clone(),
                        _ => json!({}),
                    },
                });
            }
            EventBody::ToolResult { output, .. } => {
                let Some(call) = self.calls.get(self.results.len()) else {
                    return;
                };
                self.results.push(ResultRecord {
                    id: call.id.clone(),
                    tool: call.tool.clone(),
                    output: output.clone(),
                });
                if self.results.len() == self.calls.len() {
                    self.close();
                }
            }
            EventBody::StatusIdle {} | EventBody::StatusTerminated { .. } => self.end_turn(),
            EventBody::Error { .. } => {}
        }
    }

    /// Ends the running turn; the first message queued behind it starts the next one.
    fn end_turn(&mut self) {
        self.close();
        self.in_turn = false;
        let queued = std::mem::take(&mut self.queued);
        self.in_turn = !queued.is_empty();
        self.out.extend(queued.into_iter().map(Message::User));
    }
}

/// The conversation of `events` (ascending by `seq`); see the module's rules.
pub fn rebuild<'a>(events: impl IntoIterator<Item = &'a Event>) -> Vec<Message> {
    let mut b = Builder::default();
    for event in events {
        b.push(event);
    }
    b.end_turn();
    let first_user = b
        .out
        .iter()
        .position(|m| matches!(m, Message::User(_)))
        .unwrap_or(b.out.len());
    b.out.split_off(first_user)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::Timestamp;
    use crate::domain::EventKind;

    fn log(kinds: &[(EventKind, Value)]) -> Vec<Event> {
        kinds
            .iter()
            .enumerate()
            .map(|(i, (kind, payload))| Event {
                seq: i as u64 + 1,
                body: EventBody::from_stored(*kind, payload.clone()).unwrap(),
                occurred_at: Timestamp(0),
            })
            .collect()
    }

    fn call(seq: u64, tool: &str) -> CallRecord {
        CallRecord {
            id: format!("call_{seq}"),
            tool: tool.into(),
            input: json!({"q": seq}),
        }
    }

    fn result(seq: u64, tool: &str, output: Value) -> ResultRecord {
        ResultRecord {
            id: format!("call_{seq}"),
            tool: tool.into(),
            output,
        }
    }

    #[test]
    fn tool_results_answer_the_calls_of_their_step_in_order() {
        use EventKind::*;
        let events = log(&[
            (UserMessage, json!({"text": "hi"})),
            (ToolUse, json!({"tool": "a", "input": {"q": 2}})),
            (ToolUse, json!({"tool": "b", "input": {"q": 3}})),
            (ToolResult, json!({"tool": "a", "output": [1]})),
            (ToolResult, json!({"tool": "b", "output": [2]})),
            (AgentMessage, json!({"text": "done"})),
            (StatusIdle, json!({})),
        ]);
        assert_eq!(
            rebuild(&events),
            vec![
                Message::User("hi".into()),
                Message::ToolCalls(vec![call(2, "a"), call(3, "b")]),
                Message::ToolResults(vec![result(2, "a", json!([1])), result(3, "b", json!([2]))]),
                Message::Assistant("done".into()),
            ]
        );
    }

    #[test]
    fn a_call_cut_off_by_a_cancel_gets_an_error_result_before_the_next_message() {
        use EventKind::*;
        let events = log(&[
            (UserMessage, json!({"text": "hi"})),
            (ToolUse, json!({"tool": "a", "input": {"q": 2}})),
            (StatusTerminated, json!({"reason": "cancelled"})),
            (UserMessage, json!({"text": "again"})),
        ]);
        let messages = rebuild(&events);
        assert_eq!(messages.len(), 4, "{messages:?}");
        let Message::ToolResults(results) = &messages[2] else {
            panic!("{messages:?}")
        };
        assert_eq!(results[0].id, "call_2");
        assert!(results[0].is_error());
        assert_eq!(messages[3], Message::User("again".into()));
    }

    #[test]
    fn a_follow_up_queued_while_a_turn_ran_comes_after_that_turns_answer() {
        use EventKind::*;
        let events = log(&[
            (UserMessage, json!({"text": "first"})),
            (UserMessage, json!({"text": "second, sent early"})),
            (ToolUse, json!({"tool": "a", "input": {"q": 3}})),
            (ToolResult, json!({"tool": "a", "output": [1]})),
            (AgentMessage, json!({"text": "first answer"})),
            (StatusIdle, json!({})),
        ]);
        assert_eq!(
            rebuild(&events),
            vec![
                Message::User("first".into()),
                Message::ToolCalls(vec![call(3, "a")]),
                Message::ToolResults(vec![result(3, "a", json!([1]))]),
                Message::Assistant("first answer".into()),
                Message::User("second, sent early".into()),
            ]
        );
    }

    #[test]
    fn a_window_that_starts_mid_turn_drops_what_precedes_the_first_user_message() {
        use EventKind::*;
        let mut events = log(&[
            (ToolResult, json!({"tool": "a", "output": 1})),
            (AgentMessage, json!({"text": "old answer"})),
            (UserMessage, json!({"text": "new"})),
        ]);
        events.iter_mut().for_each(|e| e.seq += 40);
        assert_eq!(rebuild(&events), vec![Message::User("new".into())]);
    }
}
