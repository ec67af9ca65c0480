//! Reading the session a step works on and committing what the step did, version-checked and
//! conditional on the run still owning the session.

use crate::domain::{NewEvent, Session};
use crate::ids::{RunId, SessionKey};
use crate::ports::{Charge, StoreError};

use super::Steps;
use super::contract::{Next, StepError, StepInput, StepOutput};

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
    /// The step does not apply (done already, cancelled, or gone): return this instead.
    Return(StepOutput),
}

impl Steps {
    /// Reads the session and decides whether the step `stage` applies to it: the run owns it,
    /// it is not cancelled, and the turn is where the input says.
    pub(super) async fn find(&self, input: &StepInput, stage: Next) -> Result<Found, StepError> {
        let Some(s) = self.owned(&input.session.key(), &input.run_id).await? else {
            return Ok(Found::Return(StepOutput::to(Next::Done)));
        };
        let here = StepOutput::of(&s);
        if here.next == stage && input.turn.is_some() && here.turn == input.turn {
            Ok(Found::Proceed(Box::new(s)))
        } else {
            Ok(Found::Return(here))
        }
    }

    /// The session, if it exists, is not being deleted, and `run` is its active run.
    pub(super) async fn owned(
        &self, key: &SessionKey, run: &RunId,
    ) -> Result<Option<Session>, StepError> {
        Ok(self
            .sessions
            .get_session(key)
            .await?
            .filter(|s| !s.deleting && s.run_id.as_ref() == Some(run)))
    }

    /// Commits `next` (with its version moved on) and `new` events if the stored version is
    /// still `expected`.
    pub(super) async fn commit(
        &self, mut next: Session, expected: u64, new: Vec<NewEvent>, charge: Option<&Charge>,
    ) -> Result<Committed, StepError> {
        next.version = expected + 1;
        let events = next.place(self.clock.now(), new);
        match self
            .sessions
            .commit_session(&next, expected, &events, charge, None)
            .await
        {
            Ok(()) => Ok(Committed::Written(Box::new(next))),
            Err(StoreError::Conflict) => Ok(Committed::Lost),
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
