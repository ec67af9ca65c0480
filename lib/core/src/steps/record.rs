//! Reading the session a step works on and committing what the step did, version-checked and
//! conditional on the run still owning the session and this step's execution owning the run.

use crate::clock::Timestamp;
use crate::domain::{Execution, NewEvent, Session, Standing};
use crate::ids::SessionKey;
use crate::ports::{Charge, StoreError};

use super::wire::{Next, StepError, StepInput, StepOutput};
use super::{Handler, Steps};

/// How a version-checked commit went.
pub(super) enum Committed {
    Written(Box<Session>),
    /// The version moved: read again.
    Lost,
    /// The session no longer exists.
    Gone,
}

/// What a step found when it read the session.
pub(super) enum Found {
    /// The step applies: the session as read.
    Proceed(Box<Session>),
    /// The step does not apply (done already, cancelled, gone, or not this execution's):
    /// return this instead.
    Return(StepOutput),
}

/// What the session's claim lets the execution `me` do. A step without an execution (from a
/// definition that does not pass one) or a run without a claim (started before claims) is
/// its run's owner.
pub(super) fn standing(s: &Session, me: Option<&Execution>, now: Timestamp) -> Standing {
    match (me, &s.exec) {
        (Some(me), Some(claim)) => claim.standing(me, now),
        _ => Standing::Owner,
    }
}

impl Steps {
    /// Reads the session and decides whether the step `stage` applies to it: the run owns it,
    /// this execution owns the run, it is not cancelled, and the turn is where the input says.
    pub(super) async fn find(&self, input: &StepInput, stage: Next) -> Result<Found, StepError> {
        let s = match self.owned(input, false).await? {
            Found::Proceed(s) => s,
            other => return Ok(other),
        };
        let here = StepOutput::of(&s);
        if here.next == stage && input.turn.is_some() && here.turn == input.turn {
            Ok(Found::Proceed(s))
        } else {
            Ok(Found::Return(here))
        }
    }

    /// [`Steps::find`] at the start of a work step, which also makes sure the step `handler`
    /// can finish within this execution's time limit; when it cannot, the run is handed over.
    pub(super) async fn begin(
        &self, input: &StepInput, stage: Next, handler: Handler,
    ) -> Result<Found, StepError> {
        let found = self.find(input, stage).await?;
        if let Found::Proceed(s) = &found
            && let Some(out) = self.hand_over_if_late(input, handler, s).await?
        {
            return Ok(Found::Return(out));
        }
        Ok(found)
    }

    /// The session, if it exists, is not being deleted, `run` is its active run, and this
    /// step's execution owns the run. Otherwise what the step returns: `Done`, or, to an
    /// execution that handed the run over, the same handover again (a retried step repeats it
    /// without writing). With `ending`, the execution that handed over may still end the run:
    /// its handover failed and the workflow terminates it.
    pub(super) async fn owned(&self, input: &StepInput, ending: bool) -> Result<Found, StepError> {
        let Some(s) = self.session_of_run(input).await? else {
            return Ok(Found::Return(StepOutput::to(Next::Done)));
        };
        Ok(match standing(&s, input.me().as_ref(), self.clock.now()) {
            Standing::Owner => Found::Proceed(Box::new(s)),
            Standing::HandedOver(_) if ending => Found::Proceed(Box::new(s)),
            Standing::HandedOver(name) => Found::Return(StepOutput::handover(name)),
            Standing::MayBind | Standing::Other => Found::Return(StepOutput::to(Next::Done)),
        })
    }

    /// The session, if it exists, is not being deleted, and the input's run is its active run.
    pub(super) async fn session_of_run(
        &self, input: &StepInput,
    ) -> Result<Option<Session>, StepError> {
        let key: SessionKey = input.session.key();
        Ok(self
            .sessions
            .get_session(&key)
            .await?
            .filter(|s| !s.deleting && s.run_id.as_ref() == Some(&input.run_id)))
    }

    /// When `handler`, started now, could run past this execution's time limit less the
    /// reserve the catch path needs, hands the run over: the claim names the successor, in a
    /// version-checked commit, and the step returns the handover for the `Handover` state.
    /// A lost race routes back to `LoadTurn`, which decides again. `None`: the step goes on.
    pub(super) async fn hand_over_if_late(
        &self, input: &StepInput, handler: Handler, s: &Session,
    ) -> Result<Option<StepOutput>, StepError> {
        let (Some(me), Some(claim), Some(run)) = (input.me(), &s.exec, &s.run_id) else {
            return Ok(None);
        };
        let now = self.clock.now();
        let deadline = me
            .started_at
            .plus_millis(self.execution_limit.as_millis() as i64)
            .plus_millis(-(super::HANDOVER_RESERVE.as_millis() as i64));
        if now.plus_millis(handler.timeout().as_millis() as i64) <= deadline {
            return Ok(None);
        }
        let mut next = s.clone();
        let successor = claim.transfer(run, now, Some(&me));
        let name = successor.name.clone();
        next.exec = Some(successor);
        tracing::info!(
            session = %s.key.session,
            execution = %me.name,
            successor = %name,
            "handing the run over"
        );
        Ok(Some(
            match self.commit(next, s.version, vec![], None).await? {
                Committed::Written(_) => StepOutput::handover(name),
                Committed::Gone => StepOutput::to(Next::Done),
                Committed::Lost => StepOutput::to(Next::Load),
            },
        ))
    }

    /// Commits `next` (with its version moved on) and `new` events if the stored version is
    /// still `expected`. Every such commit is the claim owner's: it renews the claim's lease,
    /// and one that writes events (the turn moved on) clears the count of revivals.
    pub(super) async fn commit(
        &self, mut next: Session, expected: u64, new: Vec<NewEvent>, charge: Option<&Charge>,
    ) -> Result<Committed, StepError> {
        let now = self.clock.now();
        next.version = expected + 1;
        if let Some(claim) = next.exec.as_mut() {
            claim.renew(now);
            if !new.is_empty() {
                claim.revivals = 0;
            }
        }
        let events = next.place(now, new);
        match self
            .sessions
            .commit_session(&next, expected, &events, charge, None)
            .await
        {
            Ok(()) => Ok(Committed::Written(Box::new(next))),
            Err(StoreError::Conflict) => {
                crate::telemetry::store_conflict();
                Ok(Committed::Lost)
            }
            Err(StoreError::Gone) => Ok(Committed::Gone),
            Err(e) => Err(e.into()),
        }
    }

    /// Commits a work step's `events` with the session `advance` makes of the one read, and
    /// returns where the run then stands. On a lost race it reads again and commits the same
    /// events if the step still applies (a message arrived meanwhile), or returns where the run
    /// stands if not (another copy of the step committed, or the run was cancelled).
    pub(super) async fn commit_step(
        &self, input: &StepInput, stage: Next, mut s: Session, events: Vec<NewEvent>,
        charge: Option<&Charge>, advance: impl Fn(&Session) -> Session,
    ) -> Result<StepOutput, StepError> {
        loop {
            match self
                .commit(advance(&s), s.version, events.clone(), charge)
                .await?
            {
                Committed::Written(s) => return Ok(StepOutput::of(&s)),
                Committed::Gone => return Ok(StepOutput::to(Next::Done)),
                Committed::Lost => {}
            }
            s = match self.find(input, stage).await? {
                Found::Proceed(s) => *s,
                Found::Return(out) => return Ok(out),
            };
        }
    }
}
