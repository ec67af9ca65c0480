//! `FinishTurn` and `Terminate`: end a turn with `status_idle`, or the run with one
//! `status_terminated`, writing a caught failure's `error` event first.

use crate::domain::NewEvent;
use crate::telemetry::{self, TurnOutcome};

use super::record::{Committed, Found};
use super::wire::{Next, StepError, StepInput, StepOutput, error_event};
use super::{Handler, Steps};

impl Steps {
    /// Ends the turn with `status_idle`. With a caught `failure` in the input, it first writes an
    /// `error` event, whatever stage the turn was at, so the session stays usable.
    pub async fn finish_turn(&self, input: &StepInput) -> Result<StepOutput, StepError> {
        let key = input.session.key();
        loop {
            let s = match &input.failure {
                None => match self.begin(input, Next::Finish, Handler::FinishTurn).await? {
                    Found::Proceed(s) => *s,
                    Found::Return(out) => return Ok(out),
                },
                Some(failure) => {
                    let s = match self.owned(input, false).await? {
                        Found::Proceed(s) => *s,
                        Found::Return(out) => return Ok(out),
                    };
                    let current = StepOutput::of(&s);
                    let same_turn =
                        current.turn.map(|t| t.user_seq) == input.turn.map(|t| t.user_seq);
                    if current.cancelled || !same_turn || input.turn.is_none() {
                        return Ok(current);
                    }
                    tracing::warn!(
                        session = %key.session,
                        error = %failure.error,
                        cause = failure.cause.as_deref().unwrap_or(""),
                        "turn failed"
                    );
                    s
                }
            };
            let mut events = vec![];
            if let Some(failure) = &input.failure {
                events.push(error_event(failure, true));
            }
            events.push(NewEvent::status_idle());
            let mut next = s.clone();
            next.pending.remove(0);
            next.turn = None;
            if !matches!(
                self.commit(next, s.version, events, None).await?,
                Committed::Lost
            ) {
                if let Some(failure) = &input.failure {
                    telemetry::turn_failed(&failure.error);
                }
                return Ok(StepOutput::to(Next::Load));
            }
        }
    }

    /// Ends the run with one `status_terminated` and drops its pending turns (their messages stay
    /// in the log). With a caught `failure`, an `error` event comes first. Writes nothing if the
    /// run no longer owns the session, or another execution owns the run; an execution whose
    /// handover failed still ends it.
    pub async fn terminate(&self, input: &StepInput) -> Result<StepOutput, StepError> {
        let key = input.session.key();
        loop {
            let s = match self.owned(input, true).await? {
                Found::Proceed(s) => *s,
                Found::Return(_) => return Ok(StepOutput::to(Next::Done)),
            };
            let mut events = vec![];
            let reason = match &input.failure {
                Some(failure) => {
                    tracing::error!(
                        session = %key.session,
                        error = %failure.error,
                        cause = failure.cause.as_deref().unwrap_or(""),
                        "workflow failed"
                    );
                    events.push(error_event(failure, false));
                    "failed"
                }
                None => "cancelled",
            };
            events.push(NewEvent::status_terminated(reason));
            let mut next = s.clone();
            next.end_run();
            next.pending.clear();
            if !matches!(
                self.commit(next, s.version, events, None).await?,
                Committed::Lost
            ) {
                match &input.failure {
                    Some(failure) => telemetry::turn_failed(&failure.error),
                    None => telemetry::turn(TurnOutcome::Cancelled),
                }
                return Ok(StepOutput::to(Next::Done));
            }
        }
    }
}
