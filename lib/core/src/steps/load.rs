//! `LoadTurn`: the first step of every execution. Binds the run's claim to this execution (or
//! exits, writing nothing, when another execution holds it), then finds the turn to work on,
//! or ends the run when none is pending.

use crate::domain::Standing;

use super::record::{Committed, standing};
use super::wire::{Next, StepError, StepInput, StepOutput};
use super::{Handler, Steps};

impl Steps {
    /// Finds the turn to work on. An execution the claim names (or any, once the claim is
    /// stale) binds it first, version-checked, so of two executions started under one name
    /// exactly one goes on; the other returns `done` without a write. With none pending the
    /// run ends quietly (`workflowRunId` becomes null, no event); that commit is
    /// version-checked too, so a message arriving meanwhile is never left behind.
    pub async fn load_turn(&self, input: &StepInput) -> Result<StepOutput, StepError> {
        let me = input.me();
        loop {
            let Some(mut s) = self.session_of_run(input).await? else {
                return Ok(StepOutput::to(Next::Done));
            };
            let idle = s.cancelled_at.is_none() && s.pending.is_empty();
            match standing(&s, me.as_ref(), self.clock.now()) {
                Standing::Owner => {}
                Standing::HandedOver(name) => return Ok(StepOutput::handover(name)),
                Standing::Other => return Ok(StepOutput::to(Next::Done)),
                // Ending an idle run needs no claim: its commit is version-checked.
                Standing::MayBind if idle => {}
                Standing::MayBind => {
                    let (Some(me), Some(claim)) = (&me, &s.exec) else {
                        unreachable!("a claim is only bindable by an execution")
                    };
                    let mut next = s.clone();
                    next.exec = Some(claim.bind(me));
                    s = match self.commit(next, s.version, vec![], None).await? {
                        Committed::Written(s) => *s,
                        Committed::Lost => continue,
                        Committed::Gone => return Ok(StepOutput::to(Next::Done)),
                    };
                }
            }
            if !idle {
                if s.cancelled_at.is_none()
                    && let Some(out) = self.hand_over_if_late(input, Handler::LoadTurn, &s).await?
                {
                    return Ok(out);
                }
                return Ok(StepOutput::of(&s));
            }
            let mut next = s.clone();
            next.end_run();
            if !matches!(
                self.commit(next, s.version, vec![], None).await?,
                Committed::Lost
            ) {
                return Ok(StepOutput::to(Next::Done));
            }
        }
    }
}
