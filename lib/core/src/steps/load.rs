//! `LoadTurn`: finds the turn to work on, or ends the run when none is pending.

use super::Steps;
use super::contract::{Next, StepError, StepInput, StepOutput};
use super::record::Committed;

impl Steps {
    /// Finds the turn to work on. With none pending the run ends quietly (`workflowRunId`
    /// becomes null, no event); the commit is version-checked, so a message arriving meanwhile
    /// is never left behind: the commit fails and the new turn is found.
    pub async fn load_turn(&self, input: &StepInput) -> Result<StepOutput, StepError> {
        let key = input.session.key();
        loop {
            let Some(s) = self.owned(&key, &input.run_id).await? else {
                return Ok(StepOutput::to(Next::Done));
            };
            if s.cancelled_at.is_some() || !s.pending.is_empty() {
                return Ok(StepOutput::of(&s));
            }
            let mut next = s.clone();
            next.run_id = None;
            next.turn = None;
            if !matches!(
                self.commit(next, s.version, vec![], None).await?,
                Committed::Lost
            ) {
                return Ok(StepOutput::to(Next::Done));
            }
        }
    }
}
