//! Organisations take turns at a process's workers. The store answers the head of each
//! organisation's queue ([`crate::ports::DocumentStore::claimable_documents`]); a worker tries
//! first the organisations none of this process's workers is indexing, then the one whose turn
//! came longest ago (or never): so an organisation that uploads a thousand files holds one
//! worker while another has a file waiting, not all of them, and three organisations with
//! queues are served in rotation. With one organisation waiting, every worker serves it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::domain::Document;
use crate::ids::OrgId;

/// Organisations' turns whose record is kept at most; past it, those no worker is indexing
/// are forgotten (they take their next turn as if new).
const REMEMBERED: usize = 4_096;

/// The turns of one process's workers. Clones share them.
#[derive(Clone, Default)]
pub(super) struct Turns(Arc<Mutex<State>>);

#[derive(Default)]
struct State {
    /// Turns taken so far.
    tick: u64,
    /// The tick of each organisation's last turn.
    last: HashMap<OrgId, u64>,
    /// Documents of each organisation being indexed now.
    busy: HashMap<OrgId, usize>,
}

impl Turns {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// `heads` (each organisation's longest-waiting document) in the order a worker tries to
    /// take them: organisations not being indexed first, then the one whose last turn is the
    /// oldest (never, first of all), then the longest waiting.
    pub(super) fn order(&self, mut heads: Vec<Document>) -> Vec<Document> {
        let s = self.state();
        heads.sort_by_key(|d| {
            let busy = s.busy.get(&d.org).copied().unwrap_or(0);
            let last = s.last.get(&d.org).copied().unwrap_or(0);
            (busy, last, d.updated_at)
        });
        heads
    }

    /// `org`'s turn: it is being indexed until the answer is dropped.
    pub(super) fn take(&self, org: &OrgId) -> Turn {
        let mut s = self.state();
        s.tick += 1;
        let tick = s.tick;
        s.last.insert(org.clone(), tick);
        *s.busy.entry(org.clone()).or_default() += 1;
        if s.last.len() > REMEMBERED {
            let State { last, busy, .. } = &mut *s;
            last.retain(|org, _| busy.contains_key(org));
        }
        Turn {
            turns: self.clone(),
            org: org.clone(),
        }
    }
}

/// An organisation's turn at a worker, until dropped.
pub(super) struct Turn {
    turns: Turns,
    org: OrgId,
}

impl Drop for Turn {
    fn drop(&mut self) {
        let mut s = self.turns.state();
        if let Some(n) = s.busy.get_mut(&self.org) {
            *n -= 1;
            if *n == 0 {
                s.busy.remove(&self.org);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::Timestamp;
    use crate::domain::{DocumentStatus, Format};
    use crate::ids::{CollectionId, DocumentId};

    fn head(org: &OrgId, waited_since: i64) -> Document {
        Document {
            org: org.clone(),
            collection: CollectionId::generate(),
            id: DocumentId::generate(),
            name: "a.md".into(),
            format: Format::Markdown,
            bytes: 1,
            sha256: String::new(),
            status: DocumentStatus::Queued,
            reason: None,
            generation: 1,
            passages: 0,
            attempts: 0,
            lease_until: None,
            version: 1,
            by: None,
            created_at: Timestamp(waited_since),
            updated_at: Timestamp(waited_since),
        }
    }

    fn orgs(order: &[Document]) -> Vec<&str> {
        order.iter().map(|d| d.org.as_str()).collect()
    }

    #[test]
    fn organisations_with_queues_are_served_in_rotation_not_by_age_alone() {
        let (a, b, c) = (
            OrgId::parse("org_a").unwrap(),
            OrgId::parse("org_b").unwrap(),
            OrgId::parse("org_c").unwrap(),
        );
        let turns = Turns::default();
        // `a` has waited longest; with no turns yet, age decides.
        let heads = || vec![head(&c, 30), head(&a, 10), head(&b, 20)];
        assert_eq!(orgs(&turns.order(heads())), ["org_a", "org_b", "org_c"]);
        // Two workers: `a`'s turn, then `b`'s (`a` is being indexed).
        let first = turns.take(&a);
        assert_eq!(orgs(&turns.order(heads()))[0], "org_b");
        let second = turns.take(&b);
        // `a`'s document done: `c` never had a turn, so it comes before `a`, whose queue is
        // older.
        drop(first);
        assert_eq!(orgs(&turns.order(heads())), ["org_c", "org_a", "org_b"]);
        let third = turns.take(&c);
        drop(second);
        assert_eq!(orgs(&turns.order(heads())), ["org_a", "org_b", "org_c"]);
        drop(third);
    }

    #[test]
    fn one_organisation_alone_is_served_by_every_worker() {
        let a = OrgId::parse("org_a").unwrap();
        let turns = Turns::default();
        let _first = turns.take(&a);
        assert_eq!(orgs(&turns.order(vec![head(&a, 10)])), ["org_a"]);
    }
}
