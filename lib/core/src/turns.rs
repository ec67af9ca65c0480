//! The workflow's steps: take the next turn, ask the agent, commit the answer, end or terminate
//! the run. Any engine (the local runner, Step Functions) drives a run by calling these.
//!
//! Every step re-reads the session and commits with a version check, conditional on the run
//! still owning the session and not being cancelled. So a step retried or delivered twice
//! commits its events once, a cancelled run writes nothing more than its one
//! `status_terminated`, and nothing is written after a delete.

use std::sync::Arc;

use crate::clock::Clock;
use crate::domain::{Event, NewEvent, Session};
use crate::error::CoreError;
use crate::ids::{RunId, SessionKey};
use crate::ports::{Agent, AgentError, AgentReply, AgentRequest, Charge, Store, StoreError};

/// Events before the answered message that the agent sees at most.
pub const HISTORY_WINDOW: u64 = 50;

/// A turn to answer: the user message at `user_seq` and the log leading up to it.
#[derive(Debug, Clone)]
pub struct Turn {
    pub user_seq: u64,
    pub history: Vec<Event>,
}

/// What [`Turns::next`] found.
#[derive(Debug)]
pub enum Next {
    Turn(Turn),
    /// The run is over: no turn was pending (the run ended quietly), it was cancelled (its
    /// `status_terminated` is written), another run owns the session, or the session is gone.
    Finished,
}

/// The workflow steps, over the store and the agent.
#[derive(Clone)]
pub struct Turns {
    store: Arc<dyn Store>,
    agent: Arc<dyn Agent>,
    clock: Arc<dyn Clock>,
}

impl Turns {
    pub fn new(store: Arc<dyn Store>, agent: Arc<dyn Agent>, clock: Arc<dyn Clock>) -> Self {
        Self {
            store,
            agent,
            clock,
        }
    }

    /// The oldest pending turn of `run`. With none pending the run ends (`run_id` cleared, no
    /// event); when cancelled it terminates. Both are commits conditional on the version, so a
    /// message arriving meanwhile is never left behind: the commit fails and the turn is found.
    pub async fn next(&self, key: &SessionKey, run: &RunId) -> Result<Next, CoreError> {
        loop {
            let Some(s) = self.owned(key, run).await? else {
                return Ok(Next::Finished);
            };
            if s.cancelled_at.is_some() {
                self.terminate(key, run, "cancelled").await?;
                return Ok(Next::Finished);
            }
            let Some(&user_seq) = s.pending.first() else {
                let mut next = s.clone();
                next.version += 1;
                next.run_id = None;
                match self.commit(&next, s.version, vec![], None).await? {
                    Committed::Yes | Committed::Gone => return Ok(Next::Finished),
                    Committed::Conflict => continue,
                }
            };
            let after = user_seq.saturating_sub(HISTORY_WINDOW + 1);
            let history = self
                .store
                .list_events(key, after, (user_seq - after) as usize)
                .await?;
            return Ok(Next::Turn(Turn { user_seq, history }));
        }
    }

    /// Asks the agent for the answer to `turn`. Side-effect free; the caller may abandon it.
    pub async fn ask(&self, key: &SessionKey, turn: &Turn) -> Result<AgentReply, AgentError> {
        self.agent
            .respond(AgentRequest {
                org: key.org.clone(),
                history: turn.history.clone(),
            })
            .await
    }

    /// Commits the answer to the turn at `user_seq` with `status_idle`, and its cost in the same
    /// transaction. Writes nothing when the turn was committed already, the run was cancelled or
    /// replaced, or the session is gone.
    pub async fn answer(
        &self,
        key: &SessionKey,
        run: &RunId,
        user_seq: u64,
        reply: &AgentReply,
    ) -> Result<(), CoreError> {
        let events = vec![
            NewEvent::agent_message(&reply.text),
            NewEvent::status_idle(),
        ];
        let charge = (reply.cost_micros > 0).then(|| Charge {
            month: self.clock.now().month(),
            micros: reply.cost_micros,
        });
        self.end_turn(key, run, user_seq, events, charge.as_ref())
            .await
    }

    /// Ends the turn at `user_seq` with an `error` event and `status_idle`, so the session stays
    /// usable. Same conditions as [`Turns::answer`].
    pub async fn fail(
        &self,
        key: &SessionKey,
        run: &RunId,
        user_seq: u64,
        code: &str,
        message: &str,
    ) -> Result<(), CoreError> {
        let events = vec![NewEvent::error(code, message), NewEvent::status_idle()];
        self.end_turn(key, run, user_seq, events, None).await
    }

    /// Ends `run` with one `status_terminated` and drops its pending turns (their messages stay
    /// in the log). Writes nothing if the run no longer owns the session.
    pub async fn terminate(
        &self,
        key: &SessionKey,
        run: &RunId,
        reason: &str,
    ) -> Result<(), CoreError> {
        loop {
            let Some(s) = self.owned(key, run).await? else {
                return Ok(());
            };
            let mut next = s.clone();
            next.version += 1;
            next.run_id = None;
            next.pending.clear();
            let events = vec![NewEvent::status_terminated(reason)];
            match self.commit(&next, s.version, events, None).await? {
                Committed::Yes | Committed::Gone => return Ok(()),
                Committed::Conflict => continue,
            }
        }
    }

    async fn end_turn(
        &self,
        key: &SessionKey,
        run: &RunId,
        user_seq: u64,
        events: Vec<NewEvent>,
        charge: Option<&Charge>,
    ) -> Result<(), CoreError> {
        loop {
            let Some(s) = self.owned(key, run).await? else {
                return Ok(());
            };
            if s.cancelled_at.is_some() || s.pending.first() != Some(&user_seq) {
                return Ok(());
            }
            let mut next = s.clone();
            next.version += 1;
            next.pending.remove(0);
            match self
                .commit(&next, s.version, events.clone(), charge)
                .await?
            {
                Committed::Yes | Committed::Gone => return Ok(()),
                Committed::Conflict => continue,
            }
        }
    }

    /// The session, if it exists, is not being deleted, and `run` is its active run.
    async fn owned(&self, key: &SessionKey, run: &RunId) -> Result<Option<Session>, CoreError> {
        Ok(self
            .store
            .get_session(key)
            .await?
            .filter(|s| !s.deleting && s.run_id.as_ref() == Some(run)))
    }

    async fn commit(
        &self,
        next: &Session,
        expected: u64,
        new: Vec<NewEvent>,
        charge: Option<&Charge>,
    ) -> Result<Committed, CoreError> {
        let mut next = next.clone();
        let events = next.place(self.clock.now(), new);
        match self
            .store
            .commit_session(&next, expected, &events, charge)
            .await
        {
            Ok(()) => Ok(Committed::Yes),
            Err(StoreError::Conflict) => Ok(Committed::Conflict),
            Err(StoreError::Gone) => Ok(Committed::Gone),
            Err(e) => Err(e.into()),
        }
    }
}

enum Committed {
    Yes,
    Conflict,
    Gone,
}
