//! Runs whose execution died, and turns paused for a member who did not answer in time: found by the sweeper through the store's index of claims by the
//! time they go stale, or known dead when a process restarts, and each given a new execution,
//! or, when its turn has killed [`MAX_REVIVALS`] executions without moving on, ended as a
//! failed turn so that it cannot loop.

use crate::clock::Timestamp;
use crate::domain::{MAX_REVIVALS, NewEvent, Session};
use crate::error::{Chain, CoreError};
use crate::ids::SessionKey;
use crate::ports::StoreError;

use super::{MAX_COMMIT_ATTEMPTS, Service};

/// How many dead runs one sweep settles at most; the next sweep takes the rest.
pub const SWEEP_BATCH: usize = 100;

/// The `error` event of a turn given up on.
pub const RUN_DIED: &str = "run_died";

/// What one sweep did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Swept {
    /// Runs given a new execution.
    pub revived: usize,
    /// Paused turns whose calls expired unanswered, resumed for the agent to be told.
    pub expired: usize,
    /// Turns ended as failed (or cancelled runs ended) after too many revivals.
    pub failed: usize,
}

/// What became of one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Settled {
    Revived,
    Failed,
    /// A paused turn's calls expired; a run resumes it.
    Expired,
    /// Nothing to do: the run ended, moved on, or another execution holds it now.
    Skipped,
}

impl Service {
    /// Settles every run whose execution died by now, and every paused turn whose calls
    /// expired (at most [`SWEEP_BATCH`] in all): a paused turn's pending calls become
    /// `expired` and a run resumes it, as the member's answer would; a dead run is revived
    /// with a new execution named in a version-checked commit (exactly as a message or a
    /// cancel revives one), or its turn ends as failed once it has been revived
    /// [`MAX_REVIVALS`] times without moving on. Two sweepers, or a sweeper racing a message, a
    /// cancel or a late execution, never start two executions: each commit is version-checked
    /// and the loser reads the claim live again. A run that cannot be settled is logged and
    /// left to the next sweep. Errors: the index could not be read.
    pub async fn sweep(&self) -> Result<Swept, CoreError> {
        let now = self.now();
        let stale = self.deps.store.stale_runs(now, SWEEP_BATCH).await?;
        let mut swept = Swept::default();
        for key in stale {
            match self.settle(&key, false).await {
                Ok(Settled::Revived) => {
                    crate::telemetry::sweep_run(true);
                    swept.revived += 1;
                }
                Ok(Settled::Failed) => {
                    crate::telemetry::sweep_run(false);
                    swept.failed += 1;
                }
                Ok(Settled::Expired) => swept.expired += 1,
                Ok(Settled::Skipped) => {}
                Err(e) => {
                    tracing::error!(error = %Chain(&e), session = %key.session, "could not settle a dead run");
                }
            }
        }
        if swept != Swept::default() {
            tracing::info!(
                revived = swept.revived,
                failed = swept.failed,
                expired = swept.expired,
                "swept dead runs and expired calls"
            );
        }
        Ok(swept)
    }

    /// Settles the session's active run as [`Service::sweep`] does, for when every execution of
    /// it is known to be dead whatever its lease says (the process that ran them stopped).
    /// Returns whether a run was settled: `false` when the session has no run any more, is
    /// being deleted, or is gone.
    pub async fn resume_run(&self, key: &SessionKey) -> Result<bool, CoreError> {
        Ok(self.settle(key, true).await? != Settled::Skipped)
    }

    /// Revives or ends the session's run if it is dead (`known_dead`: whatever its claim says).
    async fn settle(&self, key: &SessionKey, known_dead: bool) -> Result<Settled, CoreError> {
        for _ in 0..MAX_COMMIT_ATTEMPTS {
            let Some(current) = self.deps.store.get_session(key).await? else {
                return Ok(Settled::Skipped);
            };
            let now = self.now();
            // A turn paused for its member has no run: only its calls' time runs out.
            if current.awaits_member() && !current.deleting {
                if self.expire_calls(key, &current, now).await? {
                    return Ok(Settled::Expired);
                }
                if current.approval_expiry().is_some_and(|at| now <= at) {
                    return Ok(Settled::Skipped);
                }
                continue;
            }
            let Some(run) = current.run_id.clone().filter(|_| !current.deleting) else {
                return Ok(Settled::Skipped);
            };
            if !known_dead && !current.run_dead(now) {
                // Renewed since the index was read, or revived by someone else.
                return Ok(Settled::Skipped);
            }
            let mut next = current.clone();
            let revivals = current.exec.as_ref().map_or(0, |c| c.revivals);
            let (settled, new, execution) = if revivals >= MAX_REVIVALS {
                let (new, execution) = give_up(&mut next, now);
                (Settled::Failed, new, execution)
            } else {
                let execution = next.reassign(now);
                (Settled::Revived, vec![], execution)
            };
            next.version += 1;
            let events = next.place(now, new);
            match (self.deps.store)
                .commit_session(&next, current.version, &events, None, None)
                .await
            {
                Ok(()) => {
                    if settled == Settled::Failed {
                        tracing::warn!(session = %key.session, %run, revivals, "a turn killed every execution given to it; it ends as failed");
                    }
                    if let Some(execution) = execution {
                        self.deps
                            .workflow
                            .start(key, &run, &execution, next.trace())
                            .await?;
                    }
                    return Ok(settled);
                }
                Err(StoreError::Conflict) => {}
                Err(StoreError::Gone) => return Ok(Settled::Skipped),
                Err(e) => return Err(e.into()),
            }
        }
        Err(CoreError::internal("settling a dead run stayed contended"))
    }
}

/// Ends what the dead run was doing, as its own steps would have: a cancelled run with its
/// `status_terminated`; the turn in progress with an `error` event and `status_idle`, then the
/// next pending turn gets a new execution (its count of revivals cleared), or the run ends.
/// Returns the events to write and the execution to start, if any.
fn give_up(next: &mut Session, now: Timestamp) -> (Vec<NewEvent>, Option<String>) {
    if next.cancelled_at.is_some() {
        next.end_run();
        next.pending.clear();
        return (vec![NewEvent::status_terminated("cancelled")], None);
    }
    if next.pending.is_empty() {
        next.end_run();
        return (vec![], None);
    }
    let message = "The workflow answering this message stopped repeatedly before it could \
                   finish, so it was given up. Send the message again.";
    let events = vec![NewEvent::error(RUN_DIED, message), NewEvent::status_idle()];
    next.pending.remove(0);
    next.turn = None;
    if next.pending.is_empty() {
        next.end_run();
        return (events, None);
    }
    let execution = next.reassign(now);
    if let Some(claim) = next.exec.as_mut() {
        claim.revivals = 0;
    }
    (events, execution)
}
