//! The storage ports, one per role: organisations, the directory of members, sessions with
//! their event logs, and limit counters; [`Store`] is their sum.
//!
//! They are shaped for DynamoDB: every method is at most one request there (a GetItem, a Query
//! on one partition with a key range, a conditional UpdateItem, or a TransactWriteItems of at
//! most 100 items). Nothing needs a scan or a join, and every session method takes a
//! [`SessionKey`], so another tenant's data cannot even be addressed.

use async_trait::async_trait;

use crate::clock::Timestamp;
use crate::domain::{
    AuditCursor, AuditEntry, Draft, Event, FoundSessions, GrantOwner, Group, IntegrationConfig,
    Member, MemberCaps, MemberData, MemberDataKind, MonthUsage, Org, OrgStatus, Plan, Session,
    SessionSummary, SsoConfig, Ticket, TitleQuery, ToolRule, Usage,
};
use crate::ids::{GroupId, OrgId, RunId, SessionKey, UserId};

use super::agent::TokenUsage;
use super::batch::{BatchStore, Gate, RateUpdate, RateWindow};
use super::documents::DocumentStore;
pub use super::store_error::{BackendError, StoreError, StoreResult};

/// One call to a model, charged to the session's organisation and member in the same
/// transaction as a commit, so that a turn's cost is recorded exactly when its answer is: its
/// spend against the month's counters, and its tokens and spend on the member's day and model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Charge {
    /// Calendar month (`YYYY-MM`, UTC) the spend counts against.
    pub month: String,
    /// Day of that month (1 to 31, UTC).
    pub day: u8,
    /// The model called, as [`crate::domain::model_name`] keeps it.
    pub model: String,
    pub tokens: TokenUsage,
    /// Millionths of a US dollar.
    pub micros: u64,
}

/// An organisation's monthly limits: its own query quota and cost cap (`None`: unlimited), and
/// each member's allowance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OrgLimits {
    pub quota: Option<u64>,
    pub cap_micros: Option<u64>,
    pub member: MemberCaps,
}

/// The operator's change to an organisation: `None` leaves a setting as it is; for the limits,
/// an inner `None` means unlimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OrgChanges {
    pub quota: Option<Option<u64>>,
    pub cap_micros: Option<Option<u64>>,
    pub plan: Option<Plan>,
    pub status: Option<OrgStatus>,
}

impl OrgChanges {
    /// Makes these changes to `org`, leaving its other settings as they were.
    pub fn apply(&self, org: &mut Org) {
        org.monthly_query_quota = self.quota.unwrap_or(org.monthly_query_quota);
        org.cost_cap_micros = self.cap_micros.unwrap_or(org.cost_cap_micros);
        org.plan = self.plan.unwrap_or(org.plan);
        org.status = self.status.unwrap_or(org.status);
    }
}

/// Members [`DirectoryStore::get_members`] reads at most at once (DynamoDB's `BatchGetItem`).
pub const MEMBERS_AT_ONCE: usize = 100;

/// Organisations and their settings.
#[async_trait]
pub trait OrgStore: Send + Sync {
    /// Creates an organisation or replaces its settings; its SCIM token hash is kept.
    async fn put_org(&self, org: &Org) -> StoreResult<()>;
    async fn get_org(&self, org: &OrgId) -> StoreResult<Option<Org>>;
    /// Replaces the organisation's SCIM token hash (so the previous token stops working) and
    /// writes `audit`, all or nothing. Errors: `Gone` when the organisation does not exist.
    async fn set_scim_token(
        &self, org: &OrgId, sha256: &str, audit: &AuditEntry,
    ) -> StoreResult<()>;
    /// Writes `next` as the organisation's single sign-on (its `version` must be that of
    /// `previous` plus one, or 1 when `previous` is `None`), releases the e-mail domains of
    /// `previous` that `next` drops, claims those it adds, and writes `audit`, all or nothing.
    /// Errors: `Gone` (no such organisation), `Conflict` (the stored configuration is not at
    /// `previous`'s version), `AlreadyExists` (a domain is another organisation's).
    async fn set_sso(
        &self, org: &OrgId, previous: Option<&SsoConfig>, next: &SsoConfig, audit: &AuditEntry,
    ) -> StoreResult<()>;
    /// Sets the organisation's monthly query quota and cost cap (`None`: unlimited) and each
    /// member's allowance, keeping its other settings, and writes `audit`, all or nothing.
    /// Errors: `Gone` when the organisation does not exist.
    async fn set_limits(
        &self, org: &OrgId, limits: &OrgLimits, audit: &AuditEntry,
    ) -> StoreResult<()>;
    /// Makes the operator's `changes` to the organisation's plan, status and limits, keeping
    /// its other settings (one changed meanwhile by an admin is kept, not overwritten), and
    /// writes `audit`, all or nothing. Errors: `Gone` when the organisation does not exist.
    async fn change_org(
        &self, org: &OrgId, changes: &OrgChanges, audit: &AuditEntry,
    ) -> StoreResult<()>;
    /// Switches the agent's memory on or off for the whole organisation, keeping its other
    /// settings, and writes `audit`, all or nothing. Errors: `Gone` when the organisation does
    /// not exist.
    async fn set_memory(&self, org: &OrgId, on: bool, audit: &AuditEntry) -> StoreResult<()>;
    /// The organisation whose single sign-on claims the e-mail `domain` (lowercase), switched
    /// on or not.
    async fn org_for_domain(&self, domain: &str) -> StoreResult<Option<OrgId>>;
}

/// The directory of an organisation: members with their profiles and data, connected
/// integrations, and the audit log of changes to them.
#[async_trait]
pub trait DirectoryStore: Send + Sync {
    /// Creates a membership (at version 1) and writes `audit`; with a profile, also claims its
    /// `userName` in the organisation, and with an identity that identity; all or nothing, so of
    /// concurrent creates of one `userName` exactly one succeeds.
    /// Errors: `AlreadyExists` when the user is a member already, or the `userName` or the
    /// identity is claimed.
    async fn create_member(&self, member: &Member, audit: &AuditEntry) -> StoreResult<()>;
    async fn get_member(&self, org: &OrgId, user: &UserId) -> StoreResult<Option<Member>>;
    /// The members of `org` among `users` (at most [`MEMBERS_AT_ONCE`]), in no particular
    /// order; those who are not members are left out. One `BatchGetItem` on DynamoDB.
    async fn get_members(&self, org: &OrgId, users: &[UserId]) -> StoreResult<Vec<Member>>;
    /// The member whose profile's [`crate::domain::Profile::user_name_key`] is `key`.
    async fn find_member_by_user_name(&self, org: &OrgId, key: &str)
    -> StoreResult<Option<Member>>;
    /// The organisations `user` is a member of, ordered by id. May lag a change by a moment on
    /// DynamoDB (an index read): for listing them, never for admission.
    async fn orgs_of(&self, user: &UserId) -> StoreResult<Vec<OrgId>>;
    /// Every member of the organisation, ordered by user id (a stable order for paging).
    async fn list_members(&self, org: &OrgId) -> StoreResult<Vec<Member>>;
    /// One page of [`DirectoryStore::list_members`]: at most `limit` members whose user id
    /// sorts after `after` (from the first when `None`).
    async fn list_members_after(
        &self, org: &OrgId, after: Option<&UserId>, limit: usize,
    ) -> StoreResult<Vec<Member>>;
    /// Replaces `previous` by `next` (the same member, `next.version == previous.version + 1`),
    /// moves the `userName` and identity claims when they changed, and writes `audit`, all or
    /// nothing. Errors: `Gone` (no longer a member), `Conflict` (the stored version is not
    /// `previous.version`), `AlreadyExists` (the new `userName` or identity is another
    /// member's).
    async fn update_member(
        &self, previous: &Member, next: &Member, audit: &AuditEntry,
    ) -> StoreResult<()>;
    /// [`DirectoryStore::update_member`] on the further condition that `keeper`, another
    /// member of the organisation, is still stored at `keeper.version`: demoting an admin
    /// names an admin who stays, so that of two admins demoting each other at once one fails.
    /// Errors: as `update_member`, and `Conflict` when the keeper moved or is gone.
    async fn update_member_keeping(
        &self, previous: &Member, next: &Member, audit: &AuditEntry, keeper: &Member,
    ) -> StoreResult<()>;
    /// Removes `member` as [`DirectoryStore::remove_member`] does, on the conditions that it
    /// is still stored at `member.version` and `keeper` (another member) at `keeper.version`.
    /// `Ok(false)`, writing nothing, when it is no longer a member. Errors: `Conflict` when
    /// either moved (or the keeper is gone).
    async fn remove_member_keeping(
        &self, member: &Member, audit: &AuditEntry, keeper: &Member,
    ) -> StoreResult<bool>;
    /// Removes the membership with its profile, its `userName` and identity claims and every
    /// [`MemberData`] item of the member, and writes `audit`, in one transaction. `Ok(false)`,
    /// writing nothing, when the user is not a member.
    async fn remove_member(
        &self, org: &OrgId, user: &UserId, audit: &AuditEntry,
    ) -> StoreResult<bool>;
    /// Stores a member data item, replacing the one of the same kind and name, moves the
    /// member's version, so a concurrent removal either removes it too or retries, and writes
    /// `audit`, all or nothing.
    /// Callers keep a member under [`crate::domain::MEMBER_DATA_LIMIT`] items (one credential
    /// per connected integration, one memory document), so their removal fits one transaction.
    /// Errors: `Gone` when the user is not a member.
    async fn put_member_data(
        &self, org: &OrgId, user: &UserId, data: &MemberData, audit: &AuditEntry,
    ) -> StoreResult<()>;
    /// The member's data items, by kind and name.
    async fn list_member_data(&self, org: &OrgId, user: &UserId) -> StoreResult<Vec<MemberData>>;
    /// The value of the member's data item `kind` named `name`, read strongly consistent.
    async fn get_member_data(
        &self, org: &OrgId, user: &UserId, kind: MemberDataKind, name: &str,
    ) -> StoreResult<Option<String>>;
    /// Replaces the member's data item `kind` named `name`, stored as `previous` (none stored,
    /// when `None`), by `next` (removing it, when `None`), with no audit entry (the member's own
    /// data, such as their memory). Creating an item moves the member's version, as
    /// [`DirectoryStore::put_member_data`] does, so a concurrent removal of the member removes
    /// it too or makes this retry. Errors: `Conflict` when the stored value is not `previous`
    /// (the caller reads it again); `Gone` when creating an item for a user who is not a
    /// member.
    async fn swap_member_data(
        &self, org: &OrgId, user: &UserId, kind: MemberDataKind, name: &str,
        previous: Option<&str>, next: Option<&str>,
    ) -> StoreResult<()>;
    /// Connects an integration, or replaces the settings of the one of the same name (keeping
    /// the organisation's grant for it), and writes `audit`, all or nothing. Callers keep an organisation under [`crate::domain::INTEGRATION_LIMIT`].
    async fn put_integration(
        &self, org: &OrgId, integration: &IntegrationConfig, audit: &AuditEntry,
    ) -> StoreResult<()>;
    /// Sets the admin's rule for `tool` (as the agent is offered it) of the integration
    /// `name`, or with `None` clears it, and writes `audit`, all or nothing; the settings and
    /// the other tools' rules stay as they are, whoever writes them meanwhile. Errors: `Gone`
    /// when the organisation has no integration of that name.
    async fn set_tool_rule(
        &self, org: &OrgId, name: &str, tool: &str, rule: Option<ToolRule>, audit: &AuditEntry,
    ) -> StoreResult<()>;
    /// The organisation's integrations, by name, each with the organisation's sealed grant
    /// for it ([`IntegrationConfig::org_grant_sealed`]) and its tools' rules
    /// ([`IntegrationConfig::tool_rules`]): one read.
    async fn list_integrations(&self, org: &OrgId) -> StoreResult<Vec<IntegrationConfig>>;
    /// Disconnects the integration, with the organisation's grant for it, and writes `audit`,
    /// all or nothing; `Ok(false)`, writing nothing, when there is none of that name. Members'
    /// credentials and grants for it stay until they are replaced or the member is removed.
    async fn remove_integration(
        &self, org: &OrgId, name: &str, audit: &AuditEntry,
    ) -> StoreResult<bool>;

    /// The organisation's audit entries older than `before` (the newest when `None`), newest
    /// first, at most `limit`.
    async fn list_audit(
        &self, org: &OrgId, before: Option<&AuditCursor>, limit: usize,
    ) -> StoreResult<Vec<AuditEntry>>;
}

/// The organisation's groups and who is in them. A membership is an item of its own, so a
/// group changes member by member and is never read and rewritten whole; removing a member
/// ([`DirectoryStore::remove_member`] and `remove_member_keeping`) removes their memberships
/// in the same transaction.
#[async_trait]
pub trait GroupStore: Send + Sync {
    /// Creates `group` (at version 1), claims its [`Group::name_key`] in the organisation and
    /// writes `audit`, all or nothing, so of concurrent creates of one name exactly one
    /// succeeds. Errors: `AlreadyExists` when the name (in any case) or the id is taken.
    async fn create_group(&self, group: &Group, audit: &AuditEntry) -> StoreResult<()>;
    /// The group; `None` for an id of another organisation's or being deleted.
    async fn get_group(&self, org: &OrgId, id: &GroupId) -> StoreResult<Option<Group>>;
    /// The group whose [`Group::name_key`] is `key`.
    async fn find_group_by_name(&self, org: &OrgId, key: &str) -> StoreResult<Option<Group>>;
    /// Every group of the organisation, by id; none being deleted.
    async fn list_groups(&self, org: &OrgId) -> StoreResult<Vec<Group>>;
    /// Replaces `previous` by `next` (the same group, `next.version == previous.version + 1`),
    /// moves the name's claim when it changed, and writes `audit`, all or nothing.
    /// Errors: `Gone` (no such group), `Conflict` (the stored version is not
    /// `previous.version`), `AlreadyExists` (another group has the new name).
    async fn update_group(
        &self, previous: &Group, next: &Group, audit: &AuditEntry,
    ) -> StoreResult<()>;
    /// Deletes the group, its name's claim and every membership in it, and writes `audit`;
    /// `Ok(false)`, writing nothing, when there is no such group. From its first write the
    /// group is gone to every other method; DynamoDB then removes the memberships a page at a
    /// time, and a deletion cut short is finished by calling it again (until then
    /// [`GroupStore::member_groups`] may still list the group).
    async fn delete_group(
        &self, org: &OrgId, id: &GroupId, audit: &AuditEntry,
    ) -> StoreResult<bool>;
    /// Puts `member`, as read, into the group and writes `audit`, all or nothing, on the
    /// conditions that the group exists and the member is still stored at `member.version`;
    /// the member's version moves, so that of concurrent additions (counted against
    /// [`crate::domain::GROUPS_PER_MEMBER`] by their caller) and a removal, the later ones
    /// read again. `Ok(false)`, writing nothing, when the member is in the group already.
    /// One membership written: never the group.
    /// Errors: `Gone` when the group or the member is gone, `Conflict` when the member moved.
    async fn add_group_member(
        &self, group: &GroupId, member: &Member, audit: &AuditEntry,
    ) -> StoreResult<bool>;
    /// Takes `user` out of the group and writes `audit`, all or nothing; `Ok(false)`, writing
    /// nothing, when they are not in it.
    async fn remove_group_member(
        &self, org: &OrgId, group: &GroupId, user: &UserId, audit: &AuditEntry,
    ) -> StoreResult<bool>;
    /// At most `limit` members of the group whose user id sorts after `after` (from the first
    /// when `None`), by user id.
    async fn list_group_members(
        &self, org: &OrgId, group: &GroupId, after: Option<&UserId>, limit: usize,
    ) -> StoreResult<Vec<UserId>>;
    /// The groups `user` is in, in `org`, by id: one query, read strongly consistent, for the
    /// access checks of a member's requests.
    async fn member_groups(&self, org: &OrgId, user: &UserId) -> StoreResult<Vec<GroupId>>;
}

/// Sessions and their event logs.
#[async_trait]
pub trait SessionStore: Send + Sync {
    /// Writes a new session with its first events (at most 97: a DynamoDB transaction holds
    /// 100 items), and passes `gate`, in one transaction.
    /// Errors: `AlreadyExists` when the key is taken; from the gate, `Conflict` (the rate
    /// window moved), `UsageLimit` and `MemberLimit`.
    async fn create_session(
        &self, session: &Session, events: &[Event], gate: Option<&Gate<'_>>,
    ) -> StoreResult<()>;
    async fn get_session(&self, key: &SessionKey) -> StoreResult<Option<Session>>;
    /// Writes `session` (whose `version` must be `expected_version + 1`), appends `events`,
    /// adds `charge` to the organisation's and the member's usage and passes `gate`, all or
    /// nothing, only if the
    /// stored version is still `expected_version`. Callers write at most a few events a commit
    /// (an agent step's tool calls, 8 at most), so the DynamoDB transaction stays far under its
    /// 100 items; they never give both a charge and a gate that counts a query (one usage
    /// item cannot be written twice in a transaction).
    /// Errors: `Gone` when the session no longer exists, `Conflict` when its version or the
    /// gate's rate window moved, `UsageLimit` and `MemberLimit` from the gate.
    async fn commit_session(
        &self, session: &Session, expected_version: u64, events: &[Event], charge: Option<&Charge>,
        gate: Option<&Gate<'_>>,
    ) -> StoreResult<()>;
    /// Writes `session` (whose `version` must be `expected_version + 1`) and replaces the
    /// bodies of the stored events `rewritten` (the same sequence numbers and types; their
    /// times stay), all or nothing, only if the stored version is still `expected_version`:
    /// the one change the log allows, a call's approval in its `tool_use` payload. Callers
    /// rewrite at most the 8 calls of one step.
    /// Errors: `Gone` when the session no longer exists, `Conflict` when its version moved.
    async fn rewrite_events(
        &self, session: &Session, expected_version: u64, rewritten: &[Event],
    ) -> StoreResult<()>;
    /// Events with `seq > after`, ascending, at most `limit` of them.
    async fn list_events(
        &self, key: &SessionKey, after: u64, limit: usize,
    ) -> StoreResult<Vec<Event>>;
    /// The user's sessions in an organisation, most recently updated first; sessions being
    /// deleted are not listed.
    async fn list_sessions(
        &self, user: &UserId, org: &OrgId, limit: usize,
    ) -> StoreResult<Vec<SessionSummary>>;
    /// Keeps `draft` beside the session as the answer in progress of its run `run`, replacing
    /// the one kept; it never moves the session's version, and every commit of the session
    /// removes it. Best effort: `Ok(false)`, writing nothing, when the session is gone, being
    /// deleted, or no longer run by `run`. [`BatchStore::read_batch`] reads it with the session
    /// (no request more on DynamoDB: it is an attribute of the session's item).
    /// Errors: `Conflict` when a commit of the session was in flight (DynamoDB's transaction
    /// conflict): nothing was written, and a later draft may be.
    async fn put_draft(&self, key: &SessionKey, run: &RunId, draft: &Draft) -> StoreResult<bool>;
    /// The user's sessions in an organisation whose titles `query` matches, most recently
    /// updated first, at most `limit`; sessions being deleted are never found. An adapter may
    /// search only the [`crate::domain::FIND_SCAN`] most recently updated sessions, and then
    /// says so with `complete: false` when older ones were left unsearched (DynamoDB: 3 Query
    /// requests of 2,000 index entries at most).
    async fn find_sessions(
        &self, user: &UserId, org: &OrgId, query: &TitleQuery, limit: usize,
    ) -> StoreResult<FoundSessions>;
    /// Removes the session and every event of it; `Ok(false)` when it did not exist. The DynamoDB
    /// adapter pages through the events, so callers first commit the session as `deleting`,
    /// which every writer treats as gone, and the adapter removes the record last. Idempotent:
    /// a removal cut short is finished by calling it again.
    async fn delete_session(&self, key: &SessionKey) -> StoreResult<bool>;
    /// Sessions committed as `deleting` whose removal has not finished (a crash cut it short),
    /// at most `limit`, in no particular order. [`SessionStore::list_sessions`] never lists them.
    async fn deleting_sessions(&self, limit: usize) -> StoreResult<Vec<SessionKey>>;
    /// Sessions whose run no living execution holds by `before`: those whose
    /// [`Session::stale_at`] is earlier, at most `limit`, through an index of live claims by
    /// the time they go stale (never a scan of every session), in no particular order. The
    /// index may lag a commit by a moment (DynamoDB's is eventually consistent): callers read
    /// the session again before acting.
    async fn stale_runs(&self, before: Timestamp, limit: usize) -> StoreResult<Vec<SessionKey>>;
}

/// Counters that limit use: per-user rate windows, and monthly usage per organisation and per
/// member.
#[async_trait]
pub trait LimitStore: Send + Sync {
    /// The rate-limit record under `key` (empty, version 0, when absent).
    async fn get_rate_window(&self, key: &str) -> StoreResult<RateWindow>;
    /// Replaces the record if its version is still the update's expected version; the stored
    /// version becomes one more. Errors: `Conflict`.
    async fn put_rate_window(&self, update: RateUpdate<'_>) -> StoreResult<()>;
    async fn get_usage(&self, org: &OrgId, month: &str) -> StoreResult<Usage>;
    /// The member's usage in `month` (`YYYY-MM`), by day and by model; empty when they asked
    /// nothing. One `GetItem` on DynamoDB.
    async fn get_member_usage(
        &self, org: &OrgId, user: &UserId, month: &str,
    ) -> StoreResult<MonthUsage>;
    /// Members' usage in `month`, by day and by model, of the members who asked anything in
    /// it: at most `limit`, by user id, whose id sorts after `after` (from the first when
    /// `None`). One `Query` of one partition's key range on DynamoDB.
    async fn list_member_usage_after(
        &self, org: &OrgId, month: &str, after: Option<&UserId>, limit: usize,
    ) -> StoreResult<Vec<(UserId, MonthUsage)>>;
}

/// Single-use sign-in tickets (the local one-click sign-in link), under the hash of their
/// secret, so that a read of the store cannot sign anyone in.
#[async_trait]
pub trait TicketStore: Send + Sync {
    /// Stores `ticket` under `hash`. Errors: `AlreadyExists` when the hash is taken.
    async fn put_ticket(&self, hash: &str, ticket: &Ticket) -> StoreResult<()>;
    /// Removes the ticket under `hash` and returns it, or `None` when there is none (never
    /// stored, or taken already). Of concurrent takes of one ticket exactly one gets it.
    async fn take_ticket(&self, hash: &str) -> StoreResult<Option<Ticket>>;
}

/// OAuth grants ([`crate::domain::Grant`], sealed by the vault): a member's is a
/// [`MemberData`] item of kind [`crate::domain::MemberDataKind::OAuthGrant`], so that
/// [`DirectoryStore::list_member_data`] returns it and removing the member removes it; the
/// organisation's is kept with its integration, so that
/// [`DirectoryStore::list_integrations`] returns it
/// ([`IntegrationConfig::org_grant_sealed`]) and disconnecting the integration removes it.
/// Each is swapped only from the value it was read at: the seal's nonce makes every written
/// value new, so the value is its own version.
#[async_trait]
pub trait GrantStore: Send + Sync {
    /// The sealed grant `owner` holds for `integration` in `org`.
    async fn get_grant(
        &self, org: &OrgId, owner: &GrantOwner, integration: &str,
    ) -> StoreResult<Option<String>>;
    /// Replaces the grant stored as `previous` (none stored, when `None`) by `next` (removing
    /// it, when `None`), and writes `audit` when given, all or nothing. Creating a member's
    /// grant moves the member's version, as [`DirectoryStore::put_member_data`] does, so a
    /// concurrent removal of the member removes it too or makes this retry.
    /// Errors: `Conflict` when the stored grant is not `previous` (the caller reads it again);
    /// `Gone` when creating a grant for a user who is not a member, or for an integration that
    /// does not exist.
    async fn swap_grant(
        &self, org: &OrgId, owner: &GrantOwner, integration: &str, previous: Option<&str>,
        next: Option<&str>, audit: Option<&AuditEntry>,
    ) -> StoreResult<()>;
}

/// Durable storage of organisations, members, groups, sessions, events, limit counters and sign-in
/// tickets: every role at once, as an adapter implements it; an `Arc<dyn Store>` coerces to any
/// of them. Use cases take the roles they use: single sign-on the organisations and the
/// directory, SCIM the same two, the workflow steps the sessions, the organisations and the
/// limits, administration the organisations, the directory, the sessions and the limits
/// ([`crate::admin::AdminStores`]). The session use cases ([`crate::service::Service`]) use
/// every role, so they take the whole store.
pub trait Store:
    OrgStore
    + DirectoryStore
    + GroupStore
    + SessionStore
    + LimitStore
    + TicketStore
    + GrantStore
    + BatchStore
    + DocumentStore
{
}

impl<T> Store for T where
    T: OrgStore
        + DirectoryStore
        + GroupStore
        + SessionStore
        + LimitStore
        + TicketStore
        + GrantStore
        + BatchStore
        + DocumentStore
        + ?Sized
{
}

/// What tests read of an adapter beyond the ports. Only with the `testing` feature.
#[cfg(feature = "testing")]
#[async_trait]
pub trait StoredRows: Send + Sync {
    /// How many session records and events are stored under `key`: a delete leaves `(0, 0)`.
    async fn rows_for(&self, key: &SessionKey) -> StoreResult<(u64, u64)>;
}
