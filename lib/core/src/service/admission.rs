//! Admission of a request that starts or stops work, in the request's two round trips: one
//! read of the membership with what the request needs (the organisation's plan and limits, the
//! month's usage, the member's rate window, the session), and the write of the work itself,
//! which passes the rate limit and the month's quota and cost cap in its own transaction.

use crate::clock::{Timestamp, whole_seconds_until};
use crate::domain::{MemberCaps, Org, Usage};
use crate::error::CoreError;
use crate::ids::{OrgId, SessionId, SessionKey, UserId};
use crate::policy::limits::{Action, Slot};
use crate::ports::{Gate, QueryCount, Reads, Snapshot, StoreError};

use super::Service;

/// Who a valid session cookie says is calling: a user, the organisation they act in, and when
/// they signed in. Not yet checked against the membership: the use cases that take it check
/// it in their first read, as [`Service::authenticate`] does.
#[derive(Debug, Clone, PartialEq)]
pub struct SignedIn {
    pub user: UserId,
    pub org: OrgId,
    pub signed_in_at: Timestamp,
}

impl SignedIn {
    pub(super) fn key(&self, session: &SessionId) -> SessionKey {
        SessionKey::new(&self.user, &self.org, session)
    }

    /// The reads of every admitted request: the caller's membership.
    pub(super) fn reads(&self) -> Reads<'_> {
        Reads::member(&self.org, &self.user)
    }
}

impl Service {
    /// Reads what `reads` names (built on [`SignedIn::reads`]) in one round trip, and checks
    /// the membership in it. Errors: `Unauthenticated` when `who` is not a member of the
    /// organisation or signed out since the cookie was issued.
    pub(super) async fn read_as(
        &self, who: &SignedIn, reads: Reads<'_>,
    ) -> Result<Snapshot, CoreError> {
        let snapshot = self.deps.store.read_batch(&reads).await?;
        match &snapshot.member {
            Some(m) if m.admits(who.signed_in_at) => Ok(snapshot),
            _ => Err(CoreError::Unauthenticated),
        }
    }
}

/// The organisation read with the request, if it may start sessions. Errors: `PlanForbidden`;
/// `Unauthenticated` when it no longer exists.
pub(super) fn may_start(org: Option<Org>) -> Result<Org, CoreError> {
    match org {
        Some(org) if org.allows_sessions() => Ok(org),
        Some(_) => Err(CoreError::PlanForbidden),
        None => Err(CoreError::Unauthenticated),
    }
}

/// Admits one `action` by `user` against the rate window in `read`: the slot to write with the
/// work. With `org`, refuses early, before the rate window, when the month's usage in `read` is
/// already at one of the organisation's limits or the member's allowance, so that a request
/// the gate would refuse takes no slot.
/// Errors: `CostCapReached`, `QuotaExhausted`, `MemberCapReached`, `RateLimited`.
pub(super) fn admit(
    action: Action, user: &UserId, org: Option<&Org>, read: &Snapshot, now: Timestamp,
) -> Result<Slot, CoreError> {
    if let Some(org) = org {
        let refusal = usage_refusal(org, read.usage, now)
            .or_else(|| member_refusal(org, read, read.member_usage, now));
        if let Some(refused) = refusal {
            return Err(refused);
        }
    }
    Slot::take(action, user, &read.rate_window, now)
        .map_err(|retry_after_secs| CoreError::RateLimited { retry_after_secs })
}

/// The gate a question's write passes: `slot`'s rate window, and one query counted against
/// `month` (on its `day`) under the organisation's quota and cost cap and the member's
/// allowance (theirs as `read` found it, or the organisation's).
pub(super) fn question<'a>(
    slot: &'a Slot, org: &Org, read: &Snapshot, month: &'a str, day: u8,
) -> Gate<'a> {
    Gate {
        rate: slot.update(),
        query: Some(QueryCount {
            month,
            day,
            quota: org.monthly_query_quota,
            cap_micros: org.cost_cap_micros,
            member: member_caps(org, read),
        }),
    }
}

/// Maps a gated write's `UsageLimit` or `MemberLimit` to the error the client gets; other
/// store errors pass. `read` is what the write was decided on.
pub(super) fn refused(org: &Org, read: &Snapshot, e: StoreError, now: Timestamp) -> CoreError {
    let quota = || CoreError::QuotaExhausted {
        retry_after_secs: whole_seconds_until(now, now.next_month_start()),
    };
    match e {
        // The limits moved between the read and the write: report the quota if neither
        // limit explains it (a limit lowered meanwhile).
        StoreError::UsageLimit(usage) => usage_refusal(org, usage, now).unwrap_or_else(quota),
        StoreError::MemberLimit(usage) => member_refusal(org, read, usage, now)
            .unwrap_or_else(|| member_refused(org, read, usage, now)),
        e => e.into(),
    }
}

/// The member's allowance as `read` found it: their own, or the organisation's.
fn member_caps(org: &Org, read: &Snapshot) -> MemberCaps {
    read.member
        .as_ref()
        .map_or(org.member_caps, |m| m.caps_in(org))
}

/// The error for a member whose `usage` this month is at their allowance, if it is.
fn member_refusal(org: &Org, read: &Snapshot, usage: Usage, now: Timestamp) -> Option<CoreError> {
    member_caps(org, read)
        .reached(usage)
        .then(|| member_refused(org, read, usage, now))
}

fn member_refused(org: &Org, read: &Snapshot, usage: Usage, now: Timestamp) -> CoreError {
    CoreError::MemberCapReached {
        retry_after_secs: whole_seconds_until(now, now.next_month_start()),
        member: usage,
        caps: member_caps(org, read),
        org: read.usage,
        org_cap_micros: org.cost_cap_micros,
    }
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
