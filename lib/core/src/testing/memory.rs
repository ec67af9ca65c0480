//! `MemoryStore`: every storage port in memory, behind one lock, so that each method is atomic
//! as the ports require. It runs the storage conformance suite like the real adapters, and a
//! test can make the next commits lose their version check ([`MemoryStore::lose_commits`]).

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;

use crate::domain::{
    AuditCursor, AuditEntry, Draft, Event, FoundSessions, GrantOwner, IntegrationConfig,
    MEMORY_ITEM, Member, MemberData, MemberDataKind, Org, Session, SessionSummary, SsoConfig,
    Ticket, TitleQuery, Usage,
};
use crate::ids::{OrgId, RunId, SessionKey, UserId};
use crate::ports::{
    BatchStore, Charge, DirectoryStore, Gate, GrantStore, LimitStore, OrgStore, RateUpdate,
    RateWindow, Reads, SessionStore, Snapshot, StoreError, StoreResult, StoredRows, TicketStore,
};

#[derive(Default)]
struct State {
    orgs: HashMap<OrgId, Org>,
    /// By organisation, then user id (so listed in user-id order).
    members: HashMap<OrgId, BTreeMap<UserId, Member>>,
    /// What members claim in an organisation (`name:<userName key>`, `id:<identity key>`),
    /// with the member holding it.
    claims: HashMap<(OrgId, String), UserId>,
    /// E-mail domains claimed by an organisation's single sign-on.
    domains: HashMap<String, OrgId>,
    member_data: HashMap<(OrgId, UserId), Vec<MemberData>>,
    integrations: HashMap<OrgId, BTreeMap<String, IntegrationConfig>>,
    audit: HashMap<OrgId, Vec<AuditEntry>>,
    sessions: HashMap<SessionKey, Session>,
    /// Answers in progress, beside their sessions; a commit removes the session's.
    drafts: HashMap<SessionKey, Draft>,
    events: HashMap<SessionKey, BTreeMap<u64, Event>>,
    rate_windows: HashMap<String, RateWindow>,
    usage: HashMap<(OrgId, String), Usage>,
    tickets: HashMap<String, Ticket>,
}

/// The storage ports in memory. Each method holds the one lock throughout, so none sees
/// another half done.
#[derive(Default)]
pub struct MemoryStore {
    state: Mutex<State>,
    lose: AtomicUsize,
}

impl MemoryStore {
    /// Makes the next `n` session commits fail with `Conflict` without writing, as if another
    /// writer had moved the version each time.
    pub fn lose_commits(&self, n: usize) {
        self.lose.store(n, Ordering::SeqCst);
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().expect("the memory store's lock")
    }
}

impl State {
    /// The value of `user`'s data item `kind` named `name`.
    fn member_data_value(
        &self, org: &OrgId, user: &UserId, kind: MemberDataKind, name: &str,
    ) -> Option<String> {
        let held = self.member_data.get(&(org.clone(), user.clone()))?;
        let found = held.iter().find(|d| d.kind == kind && d.name == name)?;
        Some(found.value.clone())
    }

    /// [`DirectoryStore::swap_member_data`]'s contract.
    fn swap_member_data(
        &mut self, org: &OrgId, user: &UserId, kind: MemberDataKind, name: &str,
        previous: Option<&str>, next: Option<&str>,
    ) -> StoreResult<()> {
        let member =
            (self.members.get_mut(org).and_then(|m| m.get_mut(user))).ok_or(match previous {
                None => StoreError::Gone,
                Some(_) => StoreError::Conflict,
            })?;
        let held = self
            .member_data
            .entry((org.clone(), user.clone()))
            .or_default();
        let at = held.iter().position(|d| d.kind == kind && d.name == name);
        if at.map(|i| held[i].value.as_str()) != previous {
            return Err(StoreError::Conflict);
        }
        if previous.is_none() {
            member.version += 1;
        }
        if let Some(i) = at {
            held.remove(i);
        }
        if let Some(value) = next {
            held.push(MemberData {
                kind,
                name: name.to_owned(),
                value: value.to_owned(),
            });
            held.sort_by(|a, b| (a.kind, &a.name).cmp(&(b.kind, &b.name)));
        }
        Ok(())
    }

    /// Checks `gate` for a write to `org`'s session, then applies it; nothing changes when it
    /// refuses.
    fn pass(&mut self, org: &OrgId, gate: Option<&Gate<'_>>) -> StoreResult<()> {
        let Some(gate) = gate else { return Ok(()) };
        self.window_at(&gate.rate)?;
        if let Some(q) = &gate.query {
            let usage = self
                .usage
                .get(&(org.clone(), q.month.to_owned()))
                .copied()
                .unwrap_or_default();
            let over_quota = q.quota.is_some_and(|quota| usage.queries >= quota);
            let over_cap = q.cap_micros.is_some_and(|cap| usage.cost_micros >= cap);
            if over_quota || over_cap {
                return Err(StoreError::UsageLimit(usage));
            }
            let usage = self
                .usage
                .entry((org.clone(), q.month.to_owned()))
                .or_default();
            usage.queries += 1;
        }
        self.put_window(&gate.rate);
        Ok(())
    }

    /// Errors: `Conflict` unless the rate window is stored at the update's expected version
    /// (0: absent).
    fn window_at(&self, update: &RateUpdate<'_>) -> StoreResult<()> {
        let stored = self.rate_windows.get(update.key).map_or(0, |w| w.version);
        match stored == update.expected_version {
            true => Ok(()),
            false => Err(StoreError::Conflict),
        }
    }

    fn put_window(&mut self, update: &RateUpdate<'_>) {
        let window = RateWindow {
            hits: update.hits.to_vec(),
            version: update.expected_version + 1,
        };
        self.rate_windows.insert(update.key.to_owned(), window);
    }

    /// What `member` claims in its organisation: its `userName` and its identity.
    fn claims(member: &Member) -> Vec<(OrgId, String)> {
        let name = member
            .profile
            .as_ref()
            .map(|p| format!("name:{}", p.user_name_key()));
        let id = member.identity.as_ref().map(|i| format!("id:{}", i.key()));
        name.into_iter()
            .chain(id)
            .map(|c| (member.org.clone(), c))
            .collect()
    }

    /// Whether another user than `user` holds one of `claims`.
    fn taken(&self, claims: &[(OrgId, String)], user: &UserId) -> bool {
        claims
            .iter()
            .any(|c| self.claims.get(c).is_some_and(|u| u != user))
    }

    /// Whether `member` is stored at its version.
    fn at_version(&self, member: &Member) -> bool {
        self.members
            .get(&member.org)
            .and_then(|m| m.get(&member.user))
            .is_some_and(|stored| stored.version == member.version)
    }

    fn update_member(
        &mut self, previous: &Member, next: &Member, audit: &AuditEntry,
    ) -> StoreResult<()> {
        let stored = self
            .members
            .get(&next.org)
            .and_then(|m| m.get(&next.user))
            .ok_or(StoreError::Gone)?;
        if stored.version != previous.version {
            return Err(StoreError::Conflict);
        }
        let (old, new) = (State::claims(stored), State::claims(next));
        if self.taken(&new, &next.user) {
            return Err(StoreError::AlreadyExists);
        }
        for claim in old {
            self.claims.remove(&claim);
        }
        for claim in new {
            self.claims.insert(claim, next.user.clone());
        }
        self.members
            .entry(next.org.clone())
            .or_default()
            .insert(next.user.clone(), next.clone());
        self.audit(audit);
        Ok(())
    }

    fn remove_member(&mut self, org: &OrgId, user: &UserId, audit: &AuditEntry) -> bool {
        let Some(removed) = self.members.get_mut(org).and_then(|m| m.remove(user)) else {
            return false;
        };
        for claim in State::claims(&removed) {
            self.claims.remove(&claim);
        }
        self.member_data.remove(&(org.clone(), user.clone()));
        self.audit(audit);
        true
    }

    fn audit(&mut self, entry: &AuditEntry) {
        self.audit
            .entry(entry.org.clone())
            .or_default()
            .push(entry.clone());
    }
}

#[async_trait]
impl OrgStore for MemoryStore {
    async fn put_org(&self, org: &Org) -> StoreResult<()> {
        let mut s = self.state();
        let kept = s.orgs.get(&org.id);
        let token = kept.and_then(|o| o.scim_token_sha256.clone());
        let token_at = kept.and_then(|o| o.scim_token_created_at);
        let sso = kept.and_then(|o| o.sso.clone());
        s.orgs.insert(
            org.id.clone(),
            Org {
                scim_token_sha256: token,
                scim_token_created_at: token_at,
                sso,
                ..org.clone()
            },
        );
        Ok(())
    }

    async fn get_org(&self, org: &OrgId) -> StoreResult<Option<Org>> {
        Ok(self.state().orgs.get(org).cloned())
    }

    async fn set_scim_token(
        &self, org: &OrgId, sha256: &str, audit: &AuditEntry,
    ) -> StoreResult<()> {
        let mut s = self.state();
        let stored = s.orgs.get_mut(org).ok_or(StoreError::Gone)?;
        stored.scim_token_sha256 = Some(sha256.to_owned());
        stored.scim_token_created_at = Some(audit.at);
        s.audit(audit);
        Ok(())
    }

    async fn set_sso(
        &self, org: &OrgId, previous: Option<&SsoConfig>, next: &SsoConfig, audit: &AuditEntry,
    ) -> StoreResult<()> {
        let mut s = self.state();
        let stored = s.orgs.get(org).ok_or(StoreError::Gone)?;
        if stored.sso.as_ref().map(|c| c.version) != previous.map(|c| c.version) {
            return Err(StoreError::Conflict);
        }
        let old = stored.sso.as_ref().map(|c| c.email_domains.clone());
        if next
            .email_domains
            .iter()
            .any(|d| s.domains.get(d).is_some_and(|o| o != org))
        {
            return Err(StoreError::AlreadyExists);
        }
        for d in old.unwrap_or_default() {
            s.domains.remove(&d);
        }
        for d in &next.email_domains {
            s.domains.insert(d.clone(), org.clone());
        }
        s.orgs.get_mut(org).ok_or(StoreError::Gone)?.sso = Some(next.clone());
        s.audit(audit);
        Ok(())
    }

    async fn set_limits(
        &self, org: &OrgId, quota: Option<u64>, cap_micros: Option<u64>, audit: &AuditEntry,
    ) -> StoreResult<()> {
        let mut s = self.state();
        let stored = s.orgs.get_mut(org).ok_or(StoreError::Gone)?;
        stored.monthly_query_quota = quota;
        stored.cost_cap_micros = cap_micros;
        s.audit(audit);
        Ok(())
    }

    async fn set_memory(&self, org: &OrgId, on: bool, audit: &AuditEntry) -> StoreResult<()> {
        let mut s = self.state();
        s.orgs.get_mut(org).ok_or(StoreError::Gone)?.memory_off = !on;
        s.audit(audit);
        Ok(())
    }

    async fn org_for_domain(&self, domain: &str) -> StoreResult<Option<OrgId>> {
        Ok(self.state().domains.get(domain).cloned())
    }
}

#[async_trait]
impl DirectoryStore for MemoryStore {
    async fn create_member(&self, member: &Member, audit: &AuditEntry) -> StoreResult<()> {
        let mut s = self.state();
        let exists = s
            .members
            .get(&member.org)
            .is_some_and(|m| m.contains_key(&member.user));
        let claims = State::claims(member);
        if exists || claims.iter().any(|c| s.claims.contains_key(c)) {
            return Err(StoreError::AlreadyExists);
        }
        for claim in claims {
            s.claims.insert(claim, member.user.clone());
        }
        let mut stored = member.clone();
        stored.version = 1;
        s.members
            .entry(member.org.clone())
            .or_default()
            .insert(member.user.clone(), stored);
        s.audit(audit);
        Ok(())
    }

    async fn get_member(&self, org: &OrgId, user: &UserId) -> StoreResult<Option<Member>> {
        Ok(self
            .state()
            .members
            .get(org)
            .and_then(|m| m.get(user))
            .cloned())
    }

    async fn find_member_by_user_name(
        &self, org: &OrgId, key: &str,
    ) -> StoreResult<Option<Member>> {
        let s = self.state();
        Ok(s.claims
            .get(&(org.clone(), format!("name:{key}")))
            .and_then(|user| s.members.get(org).and_then(|m| m.get(user)))
            .cloned())
    }

    async fn list_members(&self, org: &OrgId) -> StoreResult<Vec<Member>> {
        Ok(self
            .state()
            .members
            .get(org)
            .map(|m| m.values().cloned().collect())
            .unwrap_or_default())
    }

    async fn list_members_after(
        &self, org: &OrgId, after: Option<&UserId>, limit: usize,
    ) -> StoreResult<Vec<Member>> {
        let s = self.state();
        let Some(members) = s.members.get(org) else {
            return Ok(Vec::new());
        };
        Ok(members
            .iter()
            .filter(|(user, _)| after.is_none_or(|a| *user > a))
            .take(limit)
            .map(|(_, m)| m.clone())
            .collect())
    }

    async fn orgs_of(&self, user: &UserId) -> StoreResult<Vec<OrgId>> {
        let s = self.state();
        let mut found: Vec<OrgId> = s
            .members
            .iter()
            .filter(|(_, m)| m.contains_key(user))
            .map(|(org, _)| org.clone())
            .collect();
        found.sort();
        Ok(found)
    }

    async fn update_member(
        &self, previous: &Member, next: &Member, audit: &AuditEntry,
    ) -> StoreResult<()> {
        self.state().update_member(previous, next, audit)
    }

    async fn update_member_keeping(
        &self, previous: &Member, next: &Member, audit: &AuditEntry, keeper: &Member,
    ) -> StoreResult<()> {
        let mut s = self.state();
        if !s.at_version(keeper) {
            return Err(StoreError::Conflict);
        }
        s.update_member(previous, next, audit)
    }

    async fn remove_member(
        &self, org: &OrgId, user: &UserId, audit: &AuditEntry,
    ) -> StoreResult<bool> {
        Ok(self.state().remove_member(org, user, audit))
    }

    async fn remove_member_keeping(
        &self, member: &Member, audit: &AuditEntry, keeper: &Member,
    ) -> StoreResult<bool> {
        let mut s = self.state();
        let Some(stored) = s.members.get(&member.org).and_then(|m| m.get(&member.user)) else {
            return Ok(false);
        };
        if stored.version != member.version || !s.at_version(keeper) {
            return Err(StoreError::Conflict);
        }
        Ok(s.remove_member(&member.org, &member.user, audit))
    }

    async fn put_member_data(
        &self, org: &OrgId, user: &UserId, data: &MemberData, audit: &AuditEntry,
    ) -> StoreResult<()> {
        let mut s = self.state();
        let member = s
            .members
            .get_mut(org)
            .and_then(|m| m.get_mut(user))
            .ok_or(StoreError::Gone)?;
        member.version += 1;
        let held = s
            .member_data
            .entry((org.clone(), user.clone()))
            .or_default();
        held.retain(|d| (d.kind, &d.name) != (data.kind, &data.name));
        held.push(data.clone());
        held.sort_by(|a, b| (a.kind, &a.name).cmp(&(b.kind, &b.name)));
        s.audit(audit);
        Ok(())
    }

    async fn list_member_data(&self, org: &OrgId, user: &UserId) -> StoreResult<Vec<MemberData>> {
        Ok(self
            .state()
            .member_data
            .get(&(org.clone(), user.clone()))
            .cloned()
            .unwrap_or_default())
    }

    async fn get_member_data(
        &self, org: &OrgId, user: &UserId, kind: MemberDataKind, name: &str,
    ) -> StoreResult<Option<String>> {
        Ok(self.state().member_data_value(org, user, kind, name))
    }

    async fn swap_member_data(
        &self, org: &OrgId, user: &UserId, kind: MemberDataKind, name: &str,
        previous: Option<&str>, next: Option<&str>,
    ) -> StoreResult<()> {
        self.state()
            .swap_member_data(org, user, kind, name, previous, next)
    }

    async fn put_integration(
        &self, org: &OrgId, integration: &IntegrationConfig, audit: &AuditEntry,
    ) -> StoreResult<()> {
        let mut s = self.state();
        let by_name = s.integrations.entry(org.clone()).or_default();
        let grant = (by_name.get(&integration.name)).and_then(|i| i.org_grant_sealed.clone());
        let stored = IntegrationConfig {
            org_grant_sealed: grant,
            ..integration.clone()
        };
        by_name.insert(integration.name.clone(), stored);
        s.audit(audit);
        Ok(())
    }

    async fn list_integrations(&self, org: &OrgId) -> StoreResult<Vec<IntegrationConfig>> {
        Ok(self
            .state()
            .integrations
            .get(org)
            .map(|i| i.values().cloned().collect())
            .unwrap_or_default())
    }

    async fn remove_integration(
        &self, org: &OrgId, name: &str, audit: &AuditEntry,
    ) -> StoreResult<bool> {
        let mut s = self.state();
        let removed = s
            .integrations
            .get_mut(org)
            .and_then(|i| i.remove(name))
            .is_some();
        if removed {
            s.audit(audit);
        }
        Ok(removed)
    }

    async fn list_audit(
        &self, org: &OrgId, before: Option<&AuditCursor>, limit: usize,
    ) -> StoreResult<Vec<AuditEntry>> {
        let mut entries = self.state().audit.get(org).cloned().unwrap_or_default();
        entries.retain(|e| before.is_none_or(|c| (e.at, &e.id) < (c.at, &c.id)));
        entries.sort_by(|a, b| (b.at, &b.id).cmp(&(a.at, &a.id)));
        entries.truncate(limit);
        Ok(entries)
    }
}

#[async_trait]
impl SessionStore for MemoryStore {
    async fn create_session(
        &self, session: &Session, events: &[Event], gate: Option<&Gate<'_>>,
    ) -> StoreResult<()> {
        let mut s = self.state();
        if s.sessions.contains_key(&session.key) {
            return Err(StoreError::AlreadyExists);
        }
        s.pass(&session.key.org, gate)?;
        s.sessions.insert(session.key.clone(), session.clone());
        let log = s.events.entry(session.key.clone()).or_default();
        log.extend(events.iter().map(|e| (e.seq, e.clone())));
        Ok(())
    }

    async fn get_session(&self, key: &SessionKey) -> StoreResult<Option<Session>> {
        Ok(self.state().sessions.get(key).cloned())
    }

    async fn commit_session(
        &self, session: &Session, expected_version: u64, events: &[Event], charge: Option<&Charge>,
        gate: Option<&Gate<'_>>,
    ) -> StoreResult<()> {
        let mut s = self.state();
        let stored = s.sessions.get(&session.key).ok_or(StoreError::Gone)?;
        let lost = self
            .lose
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if lost || stored.version != expected_version {
            return Err(StoreError::Conflict);
        }
        s.pass(&session.key.org, gate)?;
        s.sessions.insert(session.key.clone(), session.clone());
        // Every commit writes the record whole, as DynamoDB's Put does: the draft goes.
        s.drafts.remove(&session.key);
        let log = s.events.entry(session.key.clone()).or_default();
        log.extend(events.iter().map(|e| (e.seq, e.clone())));
        if let Some(charge) = charge {
            let usage = s
                .usage
                .entry((session.key.org.clone(), charge.month.clone()))
                .or_default();
            usage.cost_micros += charge.micros;
        }
        Ok(())
    }

    async fn list_events(
        &self, key: &SessionKey, after: u64, limit: usize,
    ) -> StoreResult<Vec<Event>> {
        Ok(self
            .state()
            .events
            .get(key)
            .map(|log| {
                log.range(after + 1..)
                    .take(limit)
                    .map(|(_, e)| e.clone())
                    .collect()
            })
            .unwrap_or_default())
    }

    async fn list_sessions(
        &self, user: &UserId, org: &OrgId, limit: usize,
    ) -> StoreResult<Vec<SessionSummary>> {
        let s = self.state();
        let mut listed: Vec<&Session> = s
            .sessions
            .values()
            .filter(|v| v.key.user == *user && v.key.org == *org && !v.deleting)
            .collect();
        listed.sort_by(|a, b| {
            (b.updated_at, b.key.session.as_str()).cmp(&(a.updated_at, a.key.session.as_str()))
        });
        Ok(listed
            .into_iter()
            .take(limit)
            .map(|v| SessionSummary {
                id: v.key.session.clone(),
                title: v.title.clone(),
                updated_at: v.updated_at,
            })
            .collect())
    }

    async fn find_sessions(
        &self, user: &UserId, org: &OrgId, query: &TitleQuery, limit: usize,
    ) -> StoreResult<FoundSessions> {
        let all = self.list_sessions(user, org, usize::MAX).await?;
        Ok(FoundSessions {
            sessions: (all.into_iter())
                .filter(|s| query.matches(&s.title))
                .take(limit)
                .collect(),
            complete: true,
        })
    }

    async fn put_draft(&self, key: &SessionKey, run: &RunId, draft: &Draft) -> StoreResult<bool> {
        let mut s = self.state();
        match s.sessions.get(key) {
            Some(stored) if !stored.deleting && stored.run_id.as_ref() == Some(run) => {
                s.drafts.insert(key.clone(), draft.clone());
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn delete_session(&self, key: &SessionKey) -> StoreResult<bool> {
        let mut s = self.state();
        s.events.remove(key);
        s.drafts.remove(key);
        Ok(s.sessions.remove(key).is_some())
    }

    async fn deleting_sessions(&self, limit: usize) -> StoreResult<Vec<SessionKey>> {
        Ok(self
            .state()
            .sessions
            .values()
            .filter(|v| v.deleting)
            .take(limit)
            .map(|v| v.key.clone())
            .collect())
    }

    /// A test double: the sessions are filtered one by one, which a real store's index avoids.
    async fn stale_runs(
        &self, before: crate::clock::Timestamp, limit: usize,
    ) -> StoreResult<Vec<SessionKey>> {
        Ok(self
            .state()
            .sessions
            .values()
            .filter(|v| v.stale_at().is_some_and(|at| at < before))
            .take(limit)
            .map(|v| v.key.clone())
            .collect())
    }
}

#[async_trait]
impl LimitStore for MemoryStore {
    async fn get_rate_window(&self, key: &str) -> StoreResult<RateWindow> {
        Ok(self
            .state()
            .rate_windows
            .get(key)
            .cloned()
            .unwrap_or_default())
    }

    async fn put_rate_window(&self, update: RateUpdate<'_>) -> StoreResult<()> {
        let mut s = self.state();
        s.window_at(&update)?;
        s.put_window(&update);
        Ok(())
    }

    async fn get_usage(&self, org: &OrgId, month: &str) -> StoreResult<Usage> {
        Ok(self
            .state()
            .usage
            .get(&(org.clone(), month.to_owned()))
            .copied()
            .unwrap_or_default())
    }
}

#[async_trait]
impl BatchStore for MemoryStore {
    async fn read_batch(&self, reads: &Reads<'_>) -> StoreResult<Snapshot> {
        let s = self.state();
        let member = s
            .members
            .get(reads.org)
            .and_then(|m| m.get(reads.user))
            .cloned();
        let key = reads.session_key();
        let session = key.as_ref().and_then(|k| s.sessions.get(k).cloned());
        let draft =
            (key.as_ref().filter(|_| session.is_some())).and_then(|k| s.drafts.get(k).cloned());
        let events = match (&key, &member, &session, reads.events) {
            (Some(key), Some(_), Some(_), Some(page)) => s
                .events
                .get(key)
                .map(|log| {
                    log.range(page.after + 1..)
                        .take(page.limit)
                        .map(|(_, e)| e.clone())
                        .collect()
                })
                .unwrap_or_default(),
            _ => Vec::new(),
        };
        Ok(Snapshot {
            member,
            org: reads
                .org_record
                .then(|| s.orgs.get(reads.org).cloned())
                .flatten(),
            usage: reads
                .usage_month
                .and_then(|m| s.usage.get(&(reads.org.clone(), m.to_owned())).copied())
                .unwrap_or_default(),
            rate_window: reads
                .rate_window
                .and_then(|k| s.rate_windows.get(k).cloned())
                .unwrap_or_default(),
            memory: reads
                .memory
                .then(|| {
                    let kind = MemberDataKind::AgentMemory;
                    s.member_data_value(reads.org, reads.user, kind, MEMORY_ITEM)
                })
                .flatten(),
            session,
            draft,
            events,
        })
    }
}

#[async_trait]
impl TicketStore for MemoryStore {
    async fn put_ticket(&self, hash: &str, ticket: &Ticket) -> StoreResult<()> {
        let mut s = self.state();
        if s.tickets.contains_key(hash) {
            return Err(StoreError::AlreadyExists);
        }
        s.tickets.insert(hash.to_owned(), ticket.clone());
        Ok(())
    }

    async fn take_ticket(&self, hash: &str) -> StoreResult<Option<Ticket>> {
        Ok(self.state().tickets.remove(hash))
    }
}

#[async_trait]
impl StoredRows for MemoryStore {
    async fn rows_for(&self, key: &SessionKey) -> StoreResult<(u64, u64)> {
        let s = self.state();
        let sessions = u64::from(s.sessions.contains_key(key));
        let events = s.events.get(key).map_or(0, |log| log.len() as u64);
        Ok((sessions, events))
    }
}

#[async_trait]
impl GrantStore for MemoryStore {
    async fn get_grant(
        &self, org: &OrgId, owner: &GrantOwner, integration: &str,
    ) -> StoreResult<Option<String>> {
        let s = self.state();
        Ok(match owner {
            GrantOwner::Member(user) => {
                s.member_data_value(org, user, MemberDataKind::OAuthGrant, integration)
            }
            GrantOwner::Organisation => s
                .integrations
                .get(org)
                .and_then(|i| i.get(integration))
                .and_then(|i| i.org_grant_sealed.clone()),
        })
    }

    async fn swap_grant(
        &self, org: &OrgId, owner: &GrantOwner, integration: &str, previous: Option<&str>,
        next: Option<&str>, audit: Option<&AuditEntry>,
    ) -> StoreResult<()> {
        let mut s = self.state();
        match owner {
            GrantOwner::Member(user) => {
                let kind = MemberDataKind::OAuthGrant;
                s.swap_member_data(org, user, kind, integration, previous, next)?;
            }
            GrantOwner::Organisation => {
                let stored = (s.integrations.get_mut(org))
                    .and_then(|i| i.get_mut(integration))
                    .ok_or(match previous {
                        None => StoreError::Gone,
                        Some(_) => StoreError::Conflict,
                    })?;
                if stored.org_grant_sealed.as_deref() != previous {
                    return Err(StoreError::Conflict);
                }
                stored.org_grant_sealed = next.map(str::to_owned);
            }
        }
        if let Some(audit) = audit {
            s.audit(audit);
        }
        Ok(())
    }
}
