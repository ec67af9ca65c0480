//! Use cases of the session endpoints: create, message, transcript, list, cancel, delete, and
//! the organisation switch. They speak only to ports.

use std::sync::Arc;

use crate::clock::{Clock, Timestamp, whole_seconds_until};
use crate::domain::{
    Event, Member, NewEvent, Org, Role, SESSION_LIST_LIMIT, Session, SessionSummary,
    TRANSCRIPT_PAGE, Usage,
};
use crate::error::CoreError;
use crate::ids::{EventId, OrgId, RunId, SessionId, SessionKey, UserId};
use crate::limits::{self, Action, Admission};
use crate::ports::{Agent, Integrations, SessionStore, Store, StoreError, UsageRefused, Workflow};

/// A signed-in user acting in their active organisation, whose membership has been checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Principal {
    pub user: UserId,
    pub org: OrgId,
    pub role: Role,
}

impl Principal {
    fn key(&self, session: &SessionId) -> SessionKey {
        SessionKey {
            user: self.user.clone(),
            org: self.org.clone(),
            session: session.clone(),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct CreatedSession {
    pub id: SessionId,
    pub run_id: RunId,
    pub no_connectors: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Transcript {
    pub title: String,
    pub workflow_run_id: Option<RunId>,
    pub events: Vec<Event>,
    pub has_more: bool,
}

/// What creating a session checks before it writes anything: that the agent's provider can be
/// reached, and whether the member reaches any integration.
#[derive(Clone)]
pub struct Opening {
    pub agent: Arc<dyn Agent>,
    pub integrations: Arc<dyn Integrations>,
}

/// The ports the use cases run on. The store serves every role: the organisation (plan,
/// limits), the membership check, the sessions and the limit counters.
#[derive(Clone)]
pub struct Deps {
    pub store: Arc<dyn Store>,
    pub workflow: Arc<dyn Workflow>,
    pub clock: Arc<dyn Clock>,
    /// `None` in a process that creates no sessions (a Lambda function of another endpoint);
    /// creating one there fails as an internal error.
    pub opening: Option<Opening>,
}

/// The session use cases.
#[derive(Clone)]
pub struct Service {
    deps: Deps,
}

/// What stamping a cancellation did.
#[derive(Debug, PartialEq, Eq)]
enum CancelStamp {
    /// Committed; with the run it cancelled, when a turn was in flight.
    Stamped(Option<RunId>),
    AlreadyCancelled,
    NotRunning,
}

/// A list limit that takes every session of a user in an organisation.
const ALL_SESSIONS: usize = i32::MAX as usize;

/// Attempts of an optimistic commit before the request fails; each lost race means another
/// writer made progress, so this is reached only under pathological contention.
const MAX_COMMIT_ATTEMPTS: usize = 64;

/// Interrupted deletes read per store request by [`Service::finish_deletes`].
const DELETE_BATCH: usize = 100;

/// Returns `text` when it has a non-whitespace character.
fn non_empty<'a>(field: &'static str, text: &'a str) -> Result<&'a str, CoreError> {
    if text.trim().is_empty() {
        Err(CoreError::invalid(
            "empty_field",
            format!("{field} must not be empty"),
        ))
    } else {
        Ok(text)
    }
}

impl Service {
    pub fn new(deps: Deps) -> Self {
        Self { deps }
    }

    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.deps.clock
    }

    fn now(&self) -> Timestamp {
        self.deps.clock.now()
    }

    /// Checks that `user` is still a member of `org`. Errors: `Unauthenticated` otherwise, so a
    /// removed member's cookie stops working at once.
    pub async fn authenticate(&self, user: UserId, org: OrgId) -> Result<Principal, CoreError> {
        match self.deps.store.get_member(&org, &user).await? {
            Some(Member { role, .. }) => Ok(Principal { user, org, role }),
            None => Err(CoreError::Unauthenticated),
        }
    }

    /// The principal `user` would be in `target`. Errors: `NotFound` when not a member, so the
    /// existence of an organisation is not revealed.
    pub async fn switch_org(&self, user: UserId, target: OrgId) -> Result<Principal, CoreError> {
        self.authenticate(user, target).await.map_err(|e| match e {
            CoreError::Unauthenticated => CoreError::NotFound("organisation"),
            e => e,
        })
    }

    /// Creates a session with its opening message and starts a run for it.
    /// Errors: `InvalidInput` (empty text), `PlanForbidden`, `ProviderUnavailable` (nothing is
    /// written), `RateLimited`, `QuotaExhausted`, `CostCapReached`.
    pub async fn create_session(
        &self, p: &Principal, text: &str,
    ) -> Result<CreatedSession, CoreError> {
        let text = non_empty("text", text)?;
        let opening = self
            .deps
            .opening
            .as_ref()
            .ok_or_else(|| CoreError::internal("this process creates no sessions"))?;
        let org = self.active_org(p).await?;
        opening.agent.health().await?;
        let no_connectors = opening
            .integrations
            .connected(&org.id, &p.user)
            .await
            .map_err(CoreError::internal)?
            .is_empty();
        let now = self.now();
        self.check_usage(&org, now).await?;
        self.admit(Action::CreateSession, p).await?;
        self.count_query(&org, now).await?;

        let key = p.key(&SessionId::generate());
        let run = RunId::generate();
        let mut session = Session::new(key.clone(), Session::title_for(text), now);
        session.run_id = Some(run.clone());
        let events = session.place(now, vec![NewEvent::user_message(text)]);
        session.pending.push(events[0].seq);
        self.deps.store.create_session(&session, &events).await?;
        self.deps.workflow.start(&key, &run).await?;
        Ok(CreatedSession {
            id: key.session,
            run_id: run,
            no_connectors,
        })
    }

    /// Appends a follow-up to the log. When no run is active, or the active one is being
    /// cancelled, it starts a fresh run (writing the cancelled run's `status_terminated` first if
    /// that run has not yet); otherwise the message queues behind the in-flight turn.
    /// Errors: `InvalidInput`, `NotFound`, `PlanForbidden`, `RateLimited`, `QuotaExhausted`,
    /// `CostCapReached`.
    pub async fn post_message(
        &self, p: &Principal, session: &SessionId, text: &str,
    ) -> Result<(), CoreError> {
        let text = non_empty("text", text)?;
        let key = p.key(session);
        let mut current = self.load(&key).await?;
        let org = self.active_org(p).await?;
        let now = self.now();
        self.check_usage(&org, now).await?;
        self.admit(Action::Message, p).await?;
        self.count_query(&org, now).await?;

        for _ in 0..MAX_COMMIT_ATTEMPTS {
            let expected = current.version;
            let mut next = current.clone();
            next.version += 1;
            let mut new = vec![];
            let mut started = None;
            match (&current.run_id, current.cancelled_at) {
                (Some(_), None) => {}
                (Some(_), Some(_)) => {
                    // The cancelled run has not finished yet: finish it here, atomically.
                    new.push(NewEvent::status_terminated("cancelled"));
                    next.pending.clear();
                    next.turn = None;
                    started = Some(RunId::generate());
                }
                (None, _) => started = Some(RunId::generate()),
            }
            if let Some(run) = &started {
                next.run_id = Some(run.clone());
                next.cancelled_at = None;
            }
            new.push(NewEvent::user_message(text));
            let events = next.place(self.now(), new);
            next.pending
                .push(events.last().expect("a user message was placed").seq);
            match self
                .deps
                .store
                .commit_session(&next, expected, &events, None)
                .await
            {
                Ok(()) => {
                    if let Some(run) = started {
                        self.deps.workflow.start(&key, &run).await?;
                    }
                    return Ok(());
                }
                Err(StoreError::Conflict) => current = self.load(&key).await?,
                Err(StoreError::Gone) => return Err(CoreError::NotFound("session")),
                Err(e) => return Err(e.into()),
            }
        }
        Err(CoreError::internal("message commit stayed contended"))
    }

    /// One page of the log after `since` (from the start when `None`), at most
    /// [`TRANSCRIPT_PAGE`] events. The session is read before the events, so a page that shows
    /// `workflowRunId` as null also holds (or is followed by) every event of the run that ended.
    /// Errors: `NotFound`.
    pub async fn transcript(
        &self, p: &Principal, session: &SessionId, since: Option<EventId>,
    ) -> Result<Transcript, CoreError> {
        let key = p.key(session);
        let s = self.load(&key).await?;
        let after = since.map_or(0, EventId::seq);
        let mut events = self
            .deps
            .store
            .list_events(&key, after, TRANSCRIPT_PAGE + 1)
            .await?;
        let has_more = events.len() > TRANSCRIPT_PAGE;
        events.truncate(TRANSCRIPT_PAGE);
        Ok(Transcript {
            title: s.title,
            workflow_run_id: s.run_id,
            events,
            has_more,
        })
    }

    /// The user's most recently updated sessions in the active organisation.
    pub async fn list_sessions(&self, p: &Principal) -> Result<Vec<SessionSummary>, CoreError> {
        Ok(self
            .deps
            .store
            .list_sessions(&p.user, &p.org, SESSION_LIST_LIMIT)
            .await?)
    }

    /// Stamps the cancellation of the in-flight run. Idempotent: returns `true` (already
    /// cancelled) without changing anything when the run was already cancelled, or when no run is
    /// active and the last one was cancelled; `false` when it cancelled a run now or none was
    /// ever cancelled. Errors: `NotFound`, `RateLimited`.
    pub async fn cancel(&self, p: &Principal, session: &SessionId) -> Result<bool, CoreError> {
        let key = p.key(session);
        let current = self.load(&key).await?;
        self.admit(Action::Cancel, p).await?;
        Ok(self.stamp(&key, current, false).await? == CancelStamp::AlreadyCancelled)
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
            self.stamp(&key, current, true).await?;
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

    /// [`stamp`], then the workflow is told of the run it cancelled.
    async fn stamp(
        &self, key: &SessionKey, current: Session, delete: bool,
    ) -> Result<CancelStamp, CoreError> {
        let stamped = stamp(
            self.deps.store.as_ref(),
            self.deps.clock.as_ref(),
            key,
            current,
            delete,
        )
        .await?;
        if let CancelStamp::Stamped(Some(run)) = &stamped {
            if !delete {
                crate::fault::point("cancel", "stamped").await;
            }
            self.deps.workflow.cancelled(key, run).await;
        }
        Ok(stamped)
    }

    async fn load(&self, key: &SessionKey) -> Result<Session, CoreError> {
        load(self.deps.store.as_ref(), key).await
    }

    /// The principal's organisation, if it may start sessions. Errors: `PlanForbidden`.
    async fn active_org(&self, p: &Principal) -> Result<Org, CoreError> {
        match self.deps.store.get_org(&p.org).await? {
            Some(org) if org.allows_sessions() => Ok(org),
            Some(_) => Err(CoreError::PlanForbidden),
            None => Err(CoreError::Unauthenticated),
        }
    }

    async fn admit(&self, action: Action, p: &Principal) -> Result<(), CoreError> {
        match limits::acquire(
            self.deps.store.as_ref(),
            self.deps.clock.as_ref(),
            action,
            &p.user,
        )
        .await?
        {
            Admission::Admitted => Ok(()),
            Admission::Refused { retry_after_secs } => {
                Err(CoreError::RateLimited { retry_after_secs })
            }
        }
    }

    /// Refuses early, without writing, when the month's usage is already at a limit, so that a
    /// request the quota would refuse does not take a rate-limit slot.
    async fn check_usage(&self, org: &Org, now: Timestamp) -> Result<(), CoreError> {
        let usage = self.deps.store.get_usage(&org.id, &now.month()).await?;
        match usage_refusal(org, usage, now) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Counts one query against the organisation's monthly quota and cost cap, atomically.
    async fn count_query(&self, org: &Org, now: Timestamp) -> Result<(), CoreError> {
        let refused = self
            .deps
            .store
            .consume_query(
                &org.id,
                &now.month(),
                org.monthly_query_quota,
                org.cost_cap_micros,
            )
            .await?;
        match refused {
            Ok(_) => Ok(()),
            // The limits moved between the read and the write: report the quota.
            Err(UsageRefused(usage)) => Err(usage_refusal(org, usage, now).unwrap_or(
                CoreError::QuotaExhausted {
                    retry_after_secs: whole_seconds_until(now, now.next_month_start()),
                },
            )),
        }
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
async fn load(store: &dyn SessionStore, key: &SessionKey) -> Result<Session, CoreError> {
    store
        .get_session(key)
        .await?
        .filter(|s| !s.deleting)
        .ok_or(CoreError::NotFound("session"))
}

/// Stamps `cancelled_at` if a turn is in flight ([`Session::in_flight`]) and not yet
/// cancelled. A run that has ended its last turn and waits only to end is not in flight:
/// cancelling it would write `status_terminated` after `status_idle`. With `delete`, also
/// marks the session as being deleted, whatever its state. `current` is as [`load`] read it,
/// never a session being deleted. Returns the run it cancelled, if any, in `Stamped`.
/// Errors: `NotFound` when the session is gone or being deleted.
async fn stamp(
    store: &dyn SessionStore, clock: &dyn Clock, key: &SessionKey, mut current: Session,
    delete: bool,
) -> Result<CancelStamp, CoreError> {
    for _ in 0..MAX_COMMIT_ATTEMPTS {
        let run = match (&current.run_id, current.cancelled_at) {
            (Some(run), None) if current.in_flight() => Some(run.clone()),
            (_, Some(_)) if !delete => return Ok(CancelStamp::AlreadyCancelled),
            (_, None) if !delete => return Ok(CancelStamp::NotRunning),
            _ => None,
        };
        let expected = current.version;
        let mut next = current.clone();
        next.version += 1;
        next.deleting = delete;
        if run.is_some() {
            next.cancelled_at = Some(clock.now());
        }
        match store.commit_session(&next, expected, &[], None).await {
            Ok(()) => return Ok(CancelStamp::Stamped(run)),
            Err(StoreError::Conflict) => current = load(store, key).await?,
            Err(StoreError::Gone) => return Err(CoreError::NotFound("session")),
            Err(e) => return Err(e.into()),
        }
    }
    Err(CoreError::internal("cancel commit stayed contended"))
}

/// The error for a month whose usage is at the organisation's cost cap or query quota, if it is.
fn usage_refusal(org: &Org, usage: Usage, now: Timestamp) -> Option<CoreError> {
    let retry_after_secs = whole_seconds_until(now, now.next_month_start());
    match (org.cost_cap_micros, org.monthly_query_quota) {
        (Some(cap), _) if usage.cost_micros >= cap => Some(CoreError::CostCapReached {
            retry_after_secs,
            month_to_date_micros: usage.cost_micros,
            cap_micros: cap,
        }),
        (_, Some(quota)) if usage.queries >= quota => {
            Some(CoreError::QuotaExhausted { retry_after_secs })
        }
        _ => None,
    }
}
