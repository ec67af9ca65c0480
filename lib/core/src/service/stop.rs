//! Stopping work: cancelling a session's turn in flight, every turn of a member, and deleting
//! a session with its log, including the deletes a crash cut short.

use crate::clock::{Clock, Timestamp};
use crate::domain::{Event, NewEvent, Session};
use crate::error::CoreError;
use crate::ids::{OrgId, RunId, SessionId, SessionKey, UserId};
use crate::policy::limits::Action;
use crate::ports::{Gate, Reads, SessionStore, StoreError};

use super::admission::{SignedIn, admit};
use super::{MAX_COMMIT_ATTEMPTS, Principal, Service};

/// What stamping a cancellation did.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum CancelStamp {
    /// Committed; with the run it cancelled, when a turn was in flight.
    Stamped(Option<RunId>),
    AlreadyCancelled,
    NotRunning,
}

/// A list limit that takes every session of a user in an organisation.
const ALL_SESSIONS: usize = i32::MAX as usize;

/// Interrupted deletes read per store request by [`Service::finish_deletes`].
const DELETE_BATCH: usize = 100;

impl Service {
    /// Stamps the cancellation of the in-flight run. Idempotent: returns `true` (already
    /// cancelled) without changing the session when the run was already cancelled, or when no
    /// run is active and the last one was cancelled; `false` when it cancelled a run now or none
    /// was ever cancelled. Either way it takes a slot of the member's rate limit. A run whose
    /// executions are all dead gets a new one, named in the same commit, to write its end. Two store
    /// round trips: the membership, session and rate window read together, then the rate
    /// window written alone or with the stamp in one transaction.
    /// Errors: `Unauthenticated`, `NotFound`, `RateLimited`.
    pub async fn cancel(&self, who: &SignedIn, session: &SessionId) -> Result<bool, CoreError> {
        let key = who.key(session);
        let action = Action::Cancel;
        let window = action.key(&who.user);
        let reads = Reads {
            rate_window: Some(&window),
            session: Some(session),
            ..who.reads()
        };
        for _ in 0..MAX_COMMIT_ATTEMPTS {
            let mut read = self.read_as(who, reads).await?;
            let current = live(read.session.take())?;
            let now = self.now();
            let slot = admit(action, &who.user, None, &read, now)?;
            let written = match next_stamp(&current, false, now) {
                Ok((mut next, None)) => {
                    // A paused turn: no run to tell.
                    let events = stamp_events(&current, &mut next, now);
                    let gate = Gate {
                        rate: slot.update(),
                        query: None,
                    };
                    (self.deps.store)
                        .commit_session(&next, current.version, &events, None, Some(&gate))
                        .await
                        .map(|()| false)
                }
                Ok((mut next, Some(run))) => {
                    // A run whose executions all died gets a new one, to write its end.
                    let revived = next.revive(now);
                    let gate = Gate {
                        rate: slot.update(),
                        query: None,
                    };
                    let committed = (self.deps.store)
                        .commit_session(&next, current.version, &[], None, Some(&gate))
                        .await;
                    if committed.is_ok() {
                        crate::fault::point("cancel", "stamped").await;
                        self.deps.workflow.cancelled(&key, &run).await;
                        if let Some(execution) = &revived {
                            self.deps
                                .workflow
                                .start(&key, &run, execution, next.trace())
                                .await?;
                        }
                    }
                    committed.map(|()| false)
                }
                Err(nothing) => self
                    .deps
                    .store
                    .put_rate_window(slot.update())
                    .await
                    .map(|()| nothing == CancelStamp::AlreadyCancelled),
            };
            match written {
                Ok(already) => return Ok(already),
                // The session or the rate window moved: read both again.
                Err(StoreError::Conflict) => {}
                Err(StoreError::Gone) => return Err(CoreError::NotFound("session")),
                Err(e) => return Err(e.into()),
            }
        }
        Err(CoreError::internal("cancel commit stayed contended"))
    }

    /// Removes the session and its whole log. It first commits the session as `deleting` (with
    /// the cancellation stamped when a turn is in flight), so that from then on every writer,
    /// the workflow and concurrent messages alike, finds it gone; then it removes the rows.
    /// A delete cut short between the two (a crash) left a session that is gone to everyone
    /// else: deleting it again finishes the removal and succeeds, as does
    /// [`Service::finish_deletes`] at the next start. A delete that found the session succeeds
    /// even when another remover (a retried request, the start-up sweep) took the last rows
    /// first. Errors: `NotFound` when there was no session to find.
    pub async fn delete(&self, p: &Principal, session: &SessionId) -> Result<(), CoreError> {
        let key = p.key(session);
        let current = self
            .deps
            .store
            .get_session(&key)
            .await?
            .ok_or(CoreError::NotFound("session"))?;
        if !current.deleting {
            self.mark_deleting(&key, current).await?;
            crate::fault::point("delete", "marked").await;
        }
        self.deps.store.delete_session(&key).await?;
        Ok(())
    }

    /// Finishes every delete that a crash cut short, as a process does when it starts; returns
    /// how many it finished. Idempotent, and safe beside a delete of the same session in
    /// flight: whichever removes the rows last finds nothing left. Stops at a batch that
    /// removed nothing, so an index that lags (DynamoDB's GSI) cannot keep it going.
    pub async fn finish_deletes(&self) -> Result<usize, CoreError> {
        let mut finished = 0;
        loop {
            let keys = self.deps.store.deleting_sessions(DELETE_BATCH).await?;
            let batch = keys.len();
            let mut removed = 0;
            for key in keys {
                if self.deps.store.delete_session(&key).await? {
                    removed += 1;
                }
            }
            finished += removed;
            if batch < DELETE_BATCH || removed == 0 {
                return Ok(finished);
            }
        }
    }

    /// Cancels every running turn of `user` in `org`, as cancel does for one session, and tells
    /// the workflow; used when the member is removed. Returns how many it cancelled. The
    /// sessions themselves stay.
    pub async fn cancel_all_runs(&self, user: &UserId, org: &OrgId) -> Result<usize, CoreError> {
        let cancelled = cancel_member_turns(
            self.deps.store.as_ref(),
            self.deps.clock.as_ref(),
            user,
            org,
        )
        .await?;
        for (key, run) in &cancelled {
            self.deps.workflow.cancelled(key, run).await;
        }
        Ok(cancelled.len())
    }

    /// [`stamp`] of the delete mark, then the workflow is told of the run it cancelled.
    async fn mark_deleting(
        &self, key: &SessionKey, current: Session,
    ) -> Result<CancelStamp, CoreError> {
        let stamped = stamp(
            self.deps.store.as_ref(),
            self.deps.clock.as_ref(),
            key,
            current,
            true,
        )
        .await?;
        if let CancelStamp::Stamped(Some(run)) = &stamped {
            self.deps.workflow.cancelled(key, run).await;
        }
        Ok(stamped)
    }
}

/// Stamps the cancellation of every turn `user` has in flight in `org`, as cancel does for one
/// session; returns the runs it cancelled, for the caller to tell the workflow. A process that
/// cannot reach the workflow engine (the admin command) may leave that out: the run sees the
/// stamp at its next step. The sessions themselves stay.
pub async fn cancel_member_turns(
    store: &dyn SessionStore, clock: &dyn Clock, user: &UserId, org: &OrgId,
) -> Result<Vec<(SessionKey, RunId)>, CoreError> {
    let sessions = store.list_sessions(user, org, ALL_SESSIONS).await?;
    let mut cancelled = Vec::new();
    for summary in sessions {
        let key = SessionKey {
            user: user.clone(),
            org: org.clone(),
            session: summary.id,
        };
        let stamped = match load(store, &key).await {
            Ok(current) => stamp(store, clock, &key, current, false).await,
            Err(e) => Err(e),
        };
        match stamped {
            Ok(CancelStamp::Stamped(Some(run))) => cancelled.push((key, run)),
            Ok(_) | Err(CoreError::NotFound(_)) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(cancelled)
}

/// The session, unless it does not exist or is being deleted. Errors: `NotFound`.
pub(super) async fn load(store: &dyn SessionStore, key: &SessionKey) -> Result<Session, CoreError> {
    live(store.get_session(key).await?)
}

/// The session read, unless there was none or it is being deleted. Errors: `NotFound`.
pub(super) fn live(session: Option<Session>) -> Result<Session, CoreError> {
    session
        .filter(|s| !s.deleting)
        .ok_or(CoreError::NotFound("session"))
}

/// What stamping a cancellation at `now` commits: the next session, with the run it cancels
/// when a turn is in flight ([`Session::in_flight`]) and not yet cancelled. A run that has
/// ended its last turn and waits only to end is not in flight: cancelling it would write
/// `status_terminated` after `status_idle`. With `delete`, the session is also marked as being
/// deleted, whatever its state. Without it, `Err` says why there is nothing to commit.
fn next_stamp(
    current: &Session, delete: bool, now: Timestamp,
) -> Result<(Session, Option<RunId>), CancelStamp> {
    if current.awaits_member() && !delete {
        return Ok((end_paused(current, now), None));
    }
    let run = match (&current.run_id, current.cancelled_at) {
        (Some(run), None) if current.in_flight() => Some(run.clone()),
        (_, Some(_)) if !delete => return Err(CancelStamp::AlreadyCancelled),
        (_, None) if !delete => return Err(CancelStamp::NotRunning),
        _ => None,
    };
    let mut next = current.clone();
    next.version += 1;
    next.deleting = delete;
    if run.is_some() {
        next.cancelled_at = Some(now);
    }
    Ok((next, run))
}

/// A turn paused for its member, cancelled: there is no run to tell, so the cancel ends the
/// turn itself, with the queued messages, as the run would have (`status_terminated`).
fn end_paused(current: &Session, now: Timestamp) -> Session {
    let mut next = current.clone();
    next.version += 1;
    next.cancelled_at = Some(now);
    next.pending.clear();
    next.turn = None;
    next
}

/// The events a stamp of `current` into `next` writes: the end of a paused turn.
fn stamp_events(current: &Session, next: &mut Session, now: Timestamp) -> Vec<Event> {
    if current.awaits_member() && !next.deleting {
        next.place(now, vec![NewEvent::status_terminated("cancelled")])
    } else {
        vec![]
    }
}

/// Commits [`next_stamp`] of `current` (as [`load`] read it, never a session being
/// deleted), reading again after a lost race. Returns the run it cancelled, if any, in
/// `Stamped`. Errors: `NotFound` when the session is gone or being deleted.
async fn stamp(
    store: &dyn SessionStore, clock: &dyn Clock, key: &SessionKey, mut current: Session,
    delete: bool,
) -> Result<CancelStamp, CoreError> {
    for _ in 0..MAX_COMMIT_ATTEMPTS {
        let now = clock.now();
        let (mut next, run) = match next_stamp(&current, delete, now) {
            Ok(stamp) => stamp,
            Err(nothing) => return Ok(nothing),
        };
        let events = stamp_events(&current, &mut next, now);
        match store
            .commit_session(&next, current.version, &events, None, None)
            .await
        {
            Ok(()) => return Ok(CancelStamp::Stamped(run)),
            Err(StoreError::Conflict) => current = load(store, key).await?,
            Err(StoreError::Gone) => return Err(CoreError::NotFound("session")),
            Err(e) => return Err(e.into()),
        }
    }
    Err(CoreError::internal("cancel commit stayed contended"))
}
