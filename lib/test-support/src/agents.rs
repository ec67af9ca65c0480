//! Agents whose timing, failures and price the tests control.

use std::sync::Arc;

use async_trait::async_trait;
use knowledge_core::ports::{Agent, AgentAction, AgentError, AgentReply, AgentRequest, TokenUsage};
use tokio::sync::{Semaphore, mpsc};

use crate::client::WAIT;

/// An agent that answers like the built-in one, but only when the test lets it: each call
/// announces itself on `entered` and then waits for a permit.
pub struct GatedAgent {
    entered_tx: mpsc::UnboundedSender<String>,
    pub entered: tokio::sync::Mutex<mpsc::UnboundedReceiver<String>>,
    gate: Semaphore,
}

impl GatedAgent {
    pub fn new() -> Arc<Self> {
        let (tx, rx) = mpsc::unbounded_channel();
        Arc::new(Self {
            entered_tx: tx,
            entered: tokio::sync::Mutex::new(rx),
            gate: Semaphore::new(0),
        })
    }

    /// Waits (bounded) for the agent to be asked a question; returns the question.
    pub async fn asked(&self) -> String {
        let mut rx = self.entered.lock().await;
        tokio::time::timeout(WAIT, rx.recv())
            .await
            .expect("the agent is asked")
            .unwrap()
    }

    /// Lets `n` calls answer.
    pub fn release(&self, n: usize) {
        self.gate.add_permits(n);
    }
}

#[async_trait]
impl Agent for GatedAgent {
    async fn health(&self) -> Result<(), AgentError> {
        Ok(())
    }

    async fn respond(&self, request: AgentRequest) -> Result<AgentReply, AgentError> {
        let question = request.question().unwrap_or("").to_owned();
        let _ = self.entered_tx.send(question.clone());
        self.gate.acquire().await.expect("gate open").forget();
        Ok(AgentReply {
            action: AgentAction::Answer(format!("answer to: {question}")),
            model: "test-model".to_owned(),
            usage: TokenUsage::default(),
            cost_micros: 0,
        })
    }
}

/// A provider that cannot be reached.
pub struct UnreachableAgent;

#[async_trait]
impl Agent for UnreachableAgent {
    async fn health(&self) -> Result<(), AgentError> {
        Err(AgentError::Unreachable("connection refused".into()))
    }

    async fn respond(&self, _: AgentRequest) -> Result<AgentReply, AgentError> {
        Err(AgentError::Unreachable("connection refused".into()))
    }
}

/// A provider that is reachable but fails every answer.
pub struct FailingAgent;

#[async_trait]
impl Agent for FailingAgent {
    async fn health(&self) -> Result<(), AgentError> {
        Ok(())
    }

    async fn respond(&self, _: AgentRequest) -> Result<AgentReply, AgentError> {
        Err(AgentError::Failed(
            "upstream answered 500 with secret detail".into(),
        ))
    }
}

/// A provider (`priced-model`) whose every answer costs `micros` millionths of a dollar and
/// uses 120 input and 30 output tokens.
pub struct PricedAgent {
    pub micros: u64,
}

#[async_trait]
impl Agent for PricedAgent {
    async fn health(&self) -> Result<(), AgentError> {
        Ok(())
    }

    async fn respond(&self, _: AgentRequest) -> Result<AgentReply, AgentError> {
        Ok(AgentReply {
            action: AgentAction::Answer("a priced answer".into()),
            model: "priced-model".to_owned(),
            usage: TokenUsage {
                input: 120,
                output: 30,
            },
            cost_micros: self.micros,
        })
    }
}
