//! `TransientStore`: every storage port in memory, behind one lock, so that each method is atomic
//! as the ports require. It runs the storage conformance suite like the real adapters, and a
//! test can make the next commits lose their version check ([`TransientStore::lose_commits`]).
//!
//! The state and the helpers several ports share are here; each port's implementation is in
//! its own module: `orgs`, `directory`, `groups`, `sessions` (with the rows tests count),
//! `limits`, `batch`, `tickets`, `grants` and `documents`.

mod batch;
mod directory;
mod documents;
mod grants;
mod groups;
mod limits;
mod orgs;
mod sessions;
mod tickets;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::domain::{
    AuditEntry, Collection, Document, Draft, Event, Group, IntegrationConfig, Member, MemberData,
    MemberDataKind, MonthUsage, Org, Session, Ticket, Usage,
};
use crate::ids::{CollectionId, DocumentId, GroupId, OrgId, SessionKey, UserId};
use crate::ports::{RateWindow, StoreError, StoreResult};

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
    /// By organisation, then group id.
    groups: HashMap<OrgId, BTreeMap<GroupId, Group>>,
    /// Group names claimed in an organisation (their keys), with the group holding each.
    group_names: HashMap<(OrgId, String), GroupId>,
    /// Each group's members, and each member's groups: the two sides of one membership.
    group_members: HashMap<(OrgId, GroupId), BTreeSet<UserId>>,
    member_groups: HashMap<(OrgId, UserId), BTreeSet<GroupId>>,
    integrations: HashMap<OrgId, BTreeMap<String, IntegrationConfig>>,
    audit: HashMap<OrgId, Vec<AuditEntry>>,
    sessions: HashMap<SessionKey, Session>,
    /// Answers in progress, beside their sessions; a commit removes the session's.
    drafts: HashMap<SessionKey, Draft>,
    events: HashMap<SessionKey, BTreeMap<u64, Event>>,
    rate_windows: HashMap<String, RateWindow>,
    usage: HashMap<(OrgId, String), Usage>,
    /// Each member's usage, by organisation, member and month.
    member_usage: HashMap<(OrgId, UserId, String), MonthUsage>,
    tickets: HashMap<String, Ticket>,
    /// By organisation, then collection id.
    collections: HashMap<OrgId, BTreeMap<CollectionId, Collection>>,
    /// By organisation, then collection and document id (so listed by collection).
    documents: HashMap<OrgId, BTreeMap<(CollectionId, DocumentId), Document>>,
    /// Bytes of originals each organisation stores.
    storage: HashMap<OrgId, u64>,
}

/// The storage ports in memory. Each method holds the one lock throughout, so none sees
/// another half done.
#[derive(Default)]
pub struct TransientStore {
    state: Mutex<State>,
    lose: AtomicUsize,
}

impl TransientStore {
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

    /// [`DirectoryStore::swap_member_data`](crate::ports::DirectoryStore::swap_member_data)'s
    /// contract.
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

    fn audit(&mut self, entry: &AuditEntry) {
        self.audit
            .entry(entry.org.clone())
            .or_default()
            .push(entry.clone());
    }
}
