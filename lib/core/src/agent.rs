//! The built-in agent: deterministic, offline, no LLM. It answers every question the same way
//! for the same input, so the service can be tried and tested without a provider.

use async_trait::async_trait;

use crate::domain::EventKind;
use crate::ports::{Agent, AgentError, AgentReply, AgentRequest};

#[derive(Debug, Default, Clone, Copy)]
pub struct BuiltinAgent;

#[async_trait]
impl Agent for BuiltinAgent {
    async fn health(&self) -> Result<(), AgentError> {
        Ok(())
    }

    async fn respond(&self, request: AgentRequest) -> Result<AgentReply, AgentError> {
        let question = request
            .history
            .iter()
            .rev()
            .find(|e| e.kind == EventKind::UserMessage)
            .and_then(|e| e.payload.get("text"))
            .and_then(|t| t.as_str())
            .ok_or_else(|| AgentError::Failed("no user message to answer".into()))?;
        let quoted: String = question.lines().map(|l| format!("> {l}\n")).collect();
        Ok(AgentReply {
            text: format!(
                "You asked:\n\n{quoted}\nNo integrations are connected to your organisation yet, \
                 so I have nothing to search. Connect one and ask again."
            ),
            cost_micros: 0,
        })
    }
}
