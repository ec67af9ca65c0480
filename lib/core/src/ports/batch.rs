//! One round trip before a request writes: what it reads of several roles at once (a
//! `BatchGetItem` on DynamoDB), and the limits its write passes inside its own transaction (a
//! `TransactWriteItems`), so that starting or stopping work costs two requests, not eight.

use async_trait::async_trait;

use crate::clock::Timestamp;
use crate::domain::{Draft, Event, Member, MemberCaps, Org, Session, Usage};
use crate::ids::{OrgId, SessionId, SessionKey, UserId};

use super::store_error::StoreResult;

/// A sliding-window rate-limit record: the instants of the admitted requests still inside the
/// longest window, oldest first, and its optimistic-concurrency version (0 when absent).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RateWindow {
    pub hits: Vec<Timestamp>,
    pub version: u64,
}

/// The items a request reads together. The membership of `user` in `org` is always read; the
/// rest when asked for.
#[derive(Debug, Clone, Copy)]
pub struct Reads<'a> {
    pub org: &'a OrgId,
    pub user: &'a UserId,
    /// The organisation's record (plan and limits).
    pub org_record: bool,
    /// The organisation's usage in this calendar month (`YYYY-MM`, UTC), and the member's.
    pub usage_month: Option<&'a str>,
    /// A rate-limit window, by its key ([`crate::policy::limits::Action::key`]).
    pub rate_window: Option<&'a str>,
    /// One of the member's sessions in `org`.
    pub session: Option<&'a SessionId>,
    /// That session's events after a sequence number, ascending, at most a number of them:
    /// read after the session, and only when the membership and the session were found (a
    /// second request on DynamoDB, a `Query`).
    pub events: Option<EventsAfter>,
    /// The member's memory: their data item [`crate::domain::MEMORY_ITEM`] of kind
    /// [`crate::domain::MemberDataKind::AgentMemory`].
    pub memory: bool,
}

/// A page of a session's log: the events with `seq > after`, at most `limit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EventsAfter {
    pub after: u64,
    pub limit: usize,
}

impl<'a> Reads<'a> {
    /// The membership alone; add the rest with the fields.
    pub fn member(org: &'a OrgId, user: &'a UserId) -> Self {
        Self {
            org,
            user,
            org_record: false,
            usage_month: None,
            rate_window: None,
            session: None,
            events: None,
            memory: false,
        }
    }

    /// The key of the session asked for, if one is: the caller's, in `org`.
    pub fn session_key(&self) -> Option<SessionKey> {
        self.session
            .map(|id| SessionKey::new(self.user, self.org, id))
    }
}

/// What [`BatchStore::read_batch`] found. What was not asked for, or is not stored, is `None`
/// (records) or empty (the usage counters, the rate window at version 0, the events).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Snapshot {
    pub member: Option<Member>,
    pub org: Option<Org>,
    pub usage: Usage,
    /// The member's own usage in the same month.
    pub member_usage: Usage,
    pub rate_window: RateWindow,
    pub session: Option<Session>,
    /// The answer in progress kept beside the session ([`super::SessionStore::put_draft`]),
    /// read with it; possibly a stale copy (see [`Session::current_draft`]).
    pub draft: Option<Draft>,
    pub events: Vec<Event>,
    /// The stored form of the member's memory ([`crate::domain::Memory::parse`]), when asked
    /// for and stored.
    pub memory: Option<String>,
}

/// A rate window replaced by `hits`, if it is still at `expected_version` (0: absent); its
/// version becomes `expected_version + 1`.
#[derive(Debug, Clone, Copy)]
pub struct RateUpdate<'a> {
    pub key: &'a str,
    pub hits: &'a [Timestamp],
    pub expected_version: u64,
    pub expires_at: Timestamp,
}

/// One query counted against the session's organisation in `month`, while the month is under
/// `quota` queries and under `cap_micros` spend (`None`: unlimited; `Some(0)` refuses all);
/// and against the session's member in the same month, while under `member`'s allowance. The
/// member's count is kept whether or not it has limits, so that each member's usage can be
/// shown.
#[derive(Debug, Clone, Copy)]
pub struct QueryCount<'a> {
    pub month: &'a str,
    /// The day of `month` (1 to 31) the member's question is shown on.
    pub day: u8,
    pub quota: Option<u64>,
    pub cap_micros: Option<u64>,
    pub member: MemberCaps,
}

/// The limits a session write passes in its own transaction: the member's rate window, and
/// for work that answers a question the month's query count. Either refusing writes nothing:
/// a moved rate window is `StoreError::Conflict` (read again and decide again), a month at an
/// organisation's limit `StoreError::UsageLimit` with the organisation's counters that refused
/// it, a member at their allowance `StoreError::MemberLimit` with the member's. When both
/// would refuse, the organisation's limit is the one reported.
#[derive(Debug, Clone, Copy)]
pub struct Gate<'a> {
    pub rate: RateUpdate<'a>,
    pub query: Option<QueryCount<'a>>,
}

/// Several roles' records in one round trip.
#[async_trait]
pub trait BatchStore: Send + Sync {
    /// The items `reads` names, each read strongly consistent, in one request. Not a snapshot
    /// across items: each is as it was at some instant during the call, which is all a caller
    /// needs whose write then checks the versions it read.
    async fn read_batch(&self, reads: &Reads<'_>) -> StoreResult<Snapshot>;
}
