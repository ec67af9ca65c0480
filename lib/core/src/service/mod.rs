//! Use cases of the session endpoints: create, message, transcript, list, cancel, delete,
//! rename and find (`titles`), and the organisation switch. They speak only to ports.
//! Admission (plan, rate limit, quota and cost cap) is in `admission`, cancelling and deleting
//! in `stop`.

mod account;
mod admission;
mod approve;
mod resume;
mod stop;
mod titles;
mod usage;

pub use usage::OwnUsage;

use std::sync::Arc;

use crate::clock::{Clock, Timestamp};
use crate::domain::{
    Draft, Event, Member, NewEvent, Role, SESSION_LIST_LIMIT, Session, SessionSummary,
    TRANSCRIPT_PAGE,
};
use crate::error::CoreError;
use crate::ids::{EventId, OrgId, RunId, SessionId, SessionKey, UserId};
use crate::policy::limits::Action;
use crate::ports::{Agent, EventsAfter, IntegrationReach, Reads, Store, StoreError, Workflow};

pub use account::Account;
pub use admission::SignedIn;
pub use resume::{RUN_DIED, SWEEP_BATCH, Swept};
pub use stop::cancel_member_turns;

use admission::{admit, may_start, question, refused};
use stop::live;

/// A signed-in user acting in their active organisation, whose membership has been checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Principal {
    pub user: UserId,
    pub org: OrgId,
    pub role: Role,
    /// The member's `userName`, when they have one (to name them in the audit log).
    pub user_name: Option<String>,
}

impl Principal {
    /// The principal `member` is.
    pub fn of(member: &Member) -> Self {
        Self {
            user: member.user.clone(),
            org: member.org.clone(),
            role: member.role,
            user_name: member.user_name().map(str::to_owned),
        }
    }

    fn key(&self, session: &SessionId) -> SessionKey {
        SessionKey::new(&self.user, &self.org, session)
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
    /// The answer the agent is writing now, while the turn waits on it; never one whose
    /// `agent_message` is committed (that commit removed it, or moved the turn past it).
    pub draft: Option<Draft>,
}

/// What creating a session checks before it writes anything: that the agent's provider can be
/// reached, and whether the member reaches any integration.
#[derive(Clone)]
pub struct Opening {
    pub agent: Arc<dyn Agent>,
    /// Only asked whether the member reaches any: an `Arc<dyn Integrations>` serves, and so does
    /// an adapter that builds no integration.
    pub integrations: Arc<dyn IntegrationReach>,
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

/// Attempts of an optimistic commit before the request fails; each lost race means another
/// writer made progress, so this is reached only under pathological contention.
const MAX_COMMIT_ATTEMPTS: usize = 64;

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

    /// The workflow engine runs are started and signalled on.
    pub fn workflow(&self) -> &Arc<dyn Workflow> {
        &self.deps.workflow
    }

    /// The members' own memory use cases, over the same store.
    pub fn memories(&self) -> crate::memory::Memories {
        let store = &self.deps.store;
        crate::memory::Memories::new(store.clone(), store.clone())
    }

    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.deps.clock
    }

    fn now(&self) -> Timestamp {
        self.deps.clock.now()
    }

    /// Checks that `user` is still a member of `org` and has not signed out since their cookie
    /// was issued at `issued_at`. Errors: `Unauthenticated` otherwise, so a removed member's
    /// cookie, and every cookie of a person who signed out, stops working at once. The check is
    /// the membership read every request makes anyway.
    pub async fn authenticate(
        &self, user: UserId, org: OrgId, issued_at: Timestamp,
    ) -> Result<Principal, CoreError> {
        match self.deps.store.get_member(&org, &user).await? {
            Some(m) if m.admits(issued_at) => Ok(Principal::of(&m)),
            _ => Err(CoreError::Unauthenticated),
        }
    }

    /// The principal `user` would be in `target`, with a cookie for `current` issued at
    /// `issued_at`. Errors: `Unauthenticated` when the cookie no longer signs anyone in at
    /// `current` either (signed out, or removed), as on every route that needs a session;
    /// `NotFound` when not a member of `target` (or signed out of it since), so the existence
    /// of an organisation is not revealed. Reads `current`'s membership only when `target`'s
    /// refuses.
    pub async fn switch_org(
        &self, user: UserId, current: OrgId, target: OrgId, issued_at: Timestamp,
    ) -> Result<Principal, CoreError> {
        match self.authenticate(user.clone(), target, issued_at).await {
            Err(CoreError::Unauthenticated) => {
                self.authenticate(user, current, issued_at).await?;
                Err(CoreError::NotFound("organisation"))
            }
            other => other,
        }
    }

    /// Creates a session with its opening message and starts a run for it. Two store round
    /// trips besides the integrations: the admission read, then one transaction of the session,
    /// its first event, the rate window and the month's query count.
    /// Errors: `InvalidInput` (empty text), `Unauthenticated`, `PlanForbidden`,
    /// `ProviderUnavailable` (nothing is written), `RateLimited`, `QuotaExhausted`,
    /// `CostCapReached`.
    pub async fn create_session(
        &self, who: &SignedIn, text: &str,
    ) -> Result<CreatedSession, CoreError> {
        let text = non_empty("text", text)?;
        let opening = self
            .deps
            .opening
            .as_ref()
            .ok_or_else(|| CoreError::internal("this process creates no sessions"))?;
        let (action, now) = (Action::CreateSession, self.now());
        // The question's month and day, from one instant: counted on the same day as in the
        // same month, even when the commit lands after midnight.
        let (month, day, window) = (now.month(), now.day(), action.key(&who.user));
        let reads = Reads {
            org_record: true,
            usage_month: Some(&month),
            rate_window: Some(&window),
            ..who.reads()
        };
        let mut read = self.read_as(who, reads).await?;
        let org = may_start(read.org.take())?;
        opening.agent.health().await?;
        let no_connectors = !opening
            .integrations
            .reaches_any(&org.id, &who.user)
            .await
            .map_err(CoreError::internal)?;

        let key = who.key(&SessionId::generate());
        let run = RunId::generate();
        let mut session = Session::new(key.clone(), Session::title_for(text), now);
        session.start_run(run.clone(), now, crate::trace::current());
        let events = session.place(now, vec![NewEvent::user_message(text)]);
        session.pending.push(events[0].seq);
        for _ in 0..MAX_COMMIT_ATTEMPTS {
            let now = self.now();
            let slot = admit(action, &who.user, Some(&org), &read, now)?;
            let gate = question(&slot, &org, &read, &month, day);
            match self
                .deps
                .store
                .create_session(&session, &events, Some(&gate))
                .await
            {
                Ok(()) => {
                    self.deps
                        .workflow
                        .start(&key, &run, run.as_str(), session.trace())
                        .await?;
                    return Ok(CreatedSession {
                        id: key.session,
                        run_id: run,
                        no_connectors,
                    });
                }
                // Another request took a slot of the window meanwhile: decide again.
                // The organisation read first stands: read only the window and usage again.
                Err(StoreError::Conflict) => {
                    let again = Reads {
                        org_record: false,
                        ..reads
                    };
                    read = self.read_as(who, again).await?
                }
                Err(e) => return Err(refused(&org, &read, e, now)),
            }
        }
        Err(CoreError::internal("the rate window stayed contended"))
    }

    /// Appends a follow-up to the log. When no run is active, or the active one is being
    /// cancelled, it starts a fresh run (writing the cancelled run's `status_terminated` first if
    /// that run has not yet); otherwise the message queues behind the in-flight turn, and if
    /// that run's executions are all dead (its claim is stale), a new execution named in the
    /// same commit takes the run over. Two store
    /// round trips: the admission read with the session, then one transaction of the session,
    /// the message, the rate window and the month's query count.
    /// Errors: `InvalidInput`, `Unauthenticated`, `NotFound`, `PlanForbidden`, `RateLimited`,
    /// `QuotaExhausted`, `CostCapReached`, `MemberCapReached`.
    pub async fn post_message(
        &self, who: &SignedIn, session: &SessionId, text: &str,
    ) -> Result<(), CoreError> {
        let text = non_empty("text", text)?;
        let key = who.key(session);
        let action = Action::Message;
        let window = action.key(&who.user);
        for _ in 0..MAX_COMMIT_ATTEMPTS {
            let now = self.now();
            let month = now.month();
            let reads = Reads {
                org_record: true,
                usage_month: Some(&month),
                rate_window: Some(&window),
                session: Some(session),
                ..who.reads()
            };
            let mut read = self.read_as(who, reads).await?;
            let current = live(read.session.take())?;
            let org = may_start(read.org.take())?;
            let slot = admit(action, &who.user, Some(&org), &read, now)?;

            let expected = current.version;
            let mut next = current.clone();
            next.version += 1;
            let mut new = vec![];
            let started = match (&current.run_id, current.cancelled_at) {
                // A live run takes the message; if its executions all died, a new one takes
                // the run over.
                (Some(run), None) => next.revive(now).map(|name| (run.clone(), name)),
                (Some(_), Some(_)) => {
                    // The cancelled run has not finished yet: finish it here, atomically.
                    new.push(NewEvent::status_terminated("cancelled"));
                    next.pending.clear();
                    next.turn = None;
                    Some(new_run(&mut next, now))
                }
                // A turn paused for its member keeps the session: the message queues, and
                // the member's answer claims the run that answers both.
                (None, _) if current.awaits_member() => None,
                (None, _) => Some(new_run(&mut next, now)),
            };
            new.push(NewEvent::user_message(text));
            let events = next.place(now, new);
            next.pending
                .push(events.last().expect("a user message was placed").seq);
            let gate = question(&slot, &org, &read, &month, now.day());
            match self
                .deps
                .store
                .commit_session(&next, expected, &events, None, Some(&gate))
                .await
            {
                Ok(()) => {
                    if let Some((run, execution)) = started {
                        self.deps
                            .workflow
                            .start(&key, &run, &execution, next.trace())
                            .await?;
                    }
                    return Ok(());
                }
                // The session or the rate window moved: read both again.
                Err(StoreError::Conflict) => {}
                Err(StoreError::Gone) => return Err(CoreError::NotFound("session")),
                Err(e) => return Err(refused(&org, &read, e, now)),
            }
        }
        Err(CoreError::internal("message commit stayed contended"))
    }

    /// One page of the log after `since` (from the start when `None`), at most
    /// [`TRANSCRIPT_PAGE`] events. The session is read (with the membership) before the
    /// events, so a page that shows `workflowRunId` as null also holds (or is followed by)
    /// every event of the run that ended. Errors: `Unauthenticated`, `NotFound`.
    pub async fn transcript(
        &self, who: &SignedIn, session: &SessionId, since: Option<EventId>,
    ) -> Result<Transcript, CoreError> {
        let reads = Reads {
            session: Some(session),
            events: Some(EventsAfter {
                after: since.map_or(0, EventId::seq),
                limit: TRANSCRIPT_PAGE + 1,
            }),
            ..who.reads()
        };
        let read = self.read_as(who, reads).await?;
        let s = live(read.session)?;
        let draft = s.current_draft(read.draft);
        let mut events = read.events;
        let has_more = events.len() > TRANSCRIPT_PAGE;
        events.truncate(TRANSCRIPT_PAGE);
        Ok(Transcript {
            title: s.title,
            workflow_run_id: s.run_id,
            events,
            has_more,
            draft,
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
}

/// Gives `next` to a new run, not cancelled; returns the run and its first execution's name.
fn new_run(next: &mut Session, now: Timestamp) -> (RunId, String) {
    let run = RunId::generate();
    next.start_run(run.clone(), now, crate::trace::current());
    next.cancelled_at = None;
    (run.clone(), run.as_str().to_owned())
}
