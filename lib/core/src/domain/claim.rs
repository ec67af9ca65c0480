//! Which workflow execution may advance a session's run. Step Functions Express starts an
//! execution at least once and does not keep names unique, so two executions of one run can
//! exist; the claim on the session lets exactly one of them work and makes the others exit
//! at their first step without writing. An execution also hands the run over to a successor
//! before Express's five-minute limit, and the claim names that successor. A claim carries a
//! lease that every step commit of its owner renews: a claim whose lease ran out belongs to
//! an execution that died, and the sweeper finds it through the store's index of claims by
//! the time they go stale ([`ExecClaim::stale_at`]).

use serde::{Deserialize, Serialize};

use crate::clock::Timestamp;
use crate::ids::RunId;
use crate::trace::TraceParent;

/// How long an execution can live at most (Express stops one at five minutes), plus clock skew
/// between the engine and the steps: a claim older than this belongs to no living execution.
pub const CLAIM_LIFETIME_MS: i64 = 330_000;

/// How long a claim stays live after the commit that last renewed its lease. A commit renews
/// it when less than [`RENEW_BELOW_MS`] is left, so after any commit of its owner the lease
/// outlasts the longest step that can follow; only a dead execution (or one retrying a failed
/// step) lets it run out. Then another execution may take the run, and the claim rules still
/// let exactly one of them commit.
pub const LEASE_MS: i64 = 180_000;

/// A commit renews the lease when less than this is left: the longest step's timeout
/// (`CallAgent`, 120 s; a test holds it to the steps) and 30 s for the commit and clock skew.
/// Commits within the first 30 s of a lease leave it, and the store's index of it, alone.
pub const RENEW_BELOW_MS: i64 = 150_000;

/// How many times a run's turn is given a new execution because the last one died without
/// the turn moving on; the next death ends the turn as failed, so a turn that kills every
/// execution cannot loop.
pub const MAX_REVIVALS: u32 = 3;

/// The execution that owns a session's run, or the one named to take it next.
///
/// Unbound (`id` is `None`): the next execution named `name` to reach `LoadTurn` binds it.
/// Bound: only the execution whose id is `id` may commit a step. `since` is when the owner
/// started (bound) or when the claim was made (unbound); past [`CLAIM_LIFETIME_MS`] after it,
/// or past its `lease`, the claim is stale and any execution of the run may take it over.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecClaim {
    /// The execution name that may take the run: the run id, then `<run>-<seq>`.
    pub name: String,
    /// The bound owner's execution id (`$$.Execution.Id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub since: Timestamp,
    /// Set on an unbound claim made by a handover: the execution that handed over, which
    /// repeats its handover (without writing) if a retry asks again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// Bumped by every transfer; names the successors deterministically.
    pub seq: u32,
    /// Until when the claim's execution is taken to be alive, unless a step commit renews it
    /// ([`ExecClaim::renew`]). `None` on claims written before leases: their lifetime alone
    /// bounds them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease: Option<Timestamp>,
    /// How many times the run was given a new execution because the last one died, since the
    /// turn last moved on (a commit with events resets it).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub revivals: u32,
    /// The trace of the request that started the run, which every execution of it joins.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::trace::lenient"
    )]
    pub trace: Option<TraceParent>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// An execution of the agent workflow, as its steps see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Execution {
    pub id: String,
    pub name: String,
    pub started_at: Timestamp,
}

/// What a session's claim lets an execution do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Standing {
    /// It owns the run.
    Owner,
    /// It may bind the claim: the claim names it, or is stale.
    MayBind,
    /// It handed the run over to the execution named here, which has not bound it yet.
    HandedOver(String),
    /// Another execution owns the run, or is named to take it.
    Other,
}

impl ExecClaim {
    /// The claim a new run starts with: its first execution is named after the run.
    pub fn first(run: &RunId, now: Timestamp, trace: Option<TraceParent>) -> Self {
        Self {
            name: run.as_str().to_owned(),
            id: None,
            since: now,
            from: None,
            seq: 0,
            lease: Some(now.plus_millis(LEASE_MS)),
            revivals: 0,
            trace,
        }
    }

    /// An unbound claim naming the run's next execution, `<run>-<seq + 1>`, leased from `now`;
    /// `from` is the execution handing over, `None` when a dead execution is replaced, which
    /// counts as a revival.
    pub fn transfer(&self, run: &RunId, now: Timestamp, from: Option<&Execution>) -> Self {
        let seq = self.seq + 1;
        Self {
            name: format!("{run}-{seq}"),
            id: None,
            since: now,
            from: from.map(|e| e.id.clone()),
            seq,
            lease: Some(now.plus_millis(LEASE_MS)),
            revivals: self.revivals + u32::from(from.is_none()),
            trace: self.trace.clone(),
        }
    }

    /// This claim bound to `owner` (the commit that binds it renews the lease).
    pub fn bind(&self, owner: &Execution) -> Self {
        Self {
            name: owner.name.clone(),
            id: Some(owner.id.clone()),
            since: owner.started_at,
            from: None,
            seq: self.seq,
            lease: self.lease,
            revivals: self.revivals,
            trace: self.trace.clone(),
        }
    }

    /// When no living execution can hold this claim any more: its lease's end, or its
    /// lifetime's, whichever comes first. What the store indexes the claim by.
    pub fn stale_at(&self) -> Timestamp {
        let lifetime = self.since.plus_millis(CLAIM_LIFETIME_MS);
        self.lease.map_or(lifetime, |lease| lease.min(lifetime))
    }

    /// Whether no living execution can hold this claim any more.
    pub fn stale(&self, now: Timestamp) -> bool {
        now > self.stale_at()
    }

    /// Renews the lease at a commit of the owner at `now`, when less than [`RENEW_BELOW_MS`]
    /// is left: a dead execution is still found within [`LEASE_MS`] of its last commit, a live
    /// one's next step ends before the lease does, and the commits of a short turn leave the
    /// lease (and so the store's index of it) unchanged.
    pub fn renew(&mut self, now: Timestamp) {
        let left = self.lease.map_or(0, |lease| lease.millis() - now.millis());
        if left < RENEW_BELOW_MS {
            self.lease = Some(now.plus_millis(LEASE_MS));
        }
    }

    /// What this claim lets `me` do at `now`.
    pub fn standing(&self, me: &Execution, now: Timestamp) -> Standing {
        match &self.id {
            Some(id) if *id == me.id => Standing::Owner,
            None if self.from.as_ref() == Some(&me.id) => Standing::HandedOver(self.name.clone()),
            None if self.name == me.name => Standing::MayBind,
            _ if self.stale(now) => Standing::MayBind,
            _ => Standing::Other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exec(id: &str, name: &str, at: i64) -> Execution {
        Execution {
            id: id.into(),
            name: name.into(),
            started_at: Timestamp(at),
        }
    }

    #[test]
    fn the_execution_a_claim_names_binds_it_and_a_same_named_duplicate_then_stands_aside() {
        let run = RunId::generate();
        let claim = ExecClaim::first(&run, Timestamp(1_000), None);
        let a = exec("a", run.as_str(), 1_100);
        let b = exec("b", run.as_str(), 1_200);
        assert_eq!(claim.standing(&a, Timestamp(1_300)), Standing::MayBind);
        let bound = claim.bind(&a);
        assert_eq!(bound.since, Timestamp(1_100));
        assert_eq!(bound.standing(&a, Timestamp(1_300)), Standing::Owner);
        assert_eq!(bound.standing(&b, Timestamp(1_300)), Standing::Other);
    }

    #[test]
    fn a_handover_names_the_successor_and_lets_only_the_handing_execution_repeat_it() {
        let run = RunId::generate();
        let a = exec("a", run.as_str(), 0);
        let moved = ExecClaim::first(&run, Timestamp(0), None)
            .bind(&a)
            .transfer(&run, Timestamp(200_000), Some(&a));
        let name = format!("{run}-1");
        assert_eq!(moved.name, name);
        assert_eq!(
            moved.standing(&a, Timestamp(200_001)),
            Standing::HandedOver(name.clone())
        );
        let successor = exec("s", &name, 200_100);
        assert_eq!(
            moved.standing(&successor, Timestamp(200_200)),
            Standing::MayBind
        );
        let stranger = exec("x", run.as_str(), 200_100);
        assert_eq!(
            moved.standing(&stranger, Timestamp(200_200)),
            Standing::Other
        );
        assert_eq!(
            moved.transfer(&run, Timestamp(1), None).name,
            format!("{run}-2")
        );
    }

    #[test]
    fn a_claim_past_the_longest_execution_life_may_be_taken_by_any_execution_of_the_run() {
        let run = RunId::generate();
        let owner = exec("a", run.as_str(), 0);
        let mut claim = ExecClaim::first(&run, Timestamp(0), None).bind(&owner);
        // Renewed all along, the lease never outlives the execution.
        for at in (0..CLAIM_LIFETIME_MS).step_by(10_000) {
            claim.renew(Timestamp(at));
        }
        let late = exec("b", run.as_str(), 400_000);
        assert_eq!(
            claim.standing(&late, Timestamp(CLAIM_LIFETIME_MS)),
            Standing::Other
        );
        assert_eq!(
            claim.standing(&late, Timestamp(CLAIM_LIFETIME_MS + 1)),
            Standing::MayBind
        );
    }

    #[test]
    fn a_lease_not_renewed_runs_out_long_before_the_lifetime() {
        let run = RunId::generate();
        let owner = exec("a", run.as_str(), 0);
        let mut claim = ExecClaim::first(&run, Timestamp(0), None).bind(&owner);
        claim.renew(Timestamp(10_000));
        assert_eq!(
            claim.stale_at(),
            Timestamp(LEASE_MS),
            "enough was left: not renewed"
        );
        claim.renew(Timestamp(80_000));
        assert_eq!(claim.stale_at(), Timestamp(80_000 + LEASE_MS));
        let other = exec("b", run.as_str(), 100_000);
        assert_eq!(
            claim.standing(&other, Timestamp(80_000 + LEASE_MS)),
            Standing::Other
        );
        assert_eq!(
            claim.standing(&other, Timestamp(80_001 + LEASE_MS)),
            Standing::MayBind
        );
    }

    #[test]
    fn replacing_a_dead_execution_counts_a_revival_and_a_handover_does_not() {
        let run = RunId::generate();
        let a = exec("a", run.as_str(), 0);
        let claim = ExecClaim::first(&run, Timestamp(0), None).bind(&a);
        let revived = claim.transfer(&run, Timestamp(200_000), None);
        assert_eq!(revived.revivals, 1);
        assert_eq!(revived.stale_at(), Timestamp(200_000 + LEASE_MS));
        let b = exec("b", &revived.name, 200_100);
        let handed = revived
            .bind(&b)
            .transfer(&run, Timestamp(250_000), Some(&b));
        assert_eq!(handed.revivals, 1);
    }
}
