//! Admission of a request that starts work: the organisation's plan, the member's rate limit,
//! and the month's query quota and cost cap.

use crate::clock::{Timestamp, whole_seconds_until};
use crate::domain::{Org, Usage};
use crate::error::CoreError;
use crate::limits::{self, Action, Admission};
use crate::ports::UsageRefused;

use super::{Principal, Service};

impl Service {
    pub(super) async fn admit(&self, action: Action, p: &Principal) -> Result<(), CoreError> {
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
    pub(super) async fn check_usage(&self, org: &Org, now: Timestamp) -> Result<(), CoreError> {
        let usage = self.deps.store.get_usage(&org.id, &now.month()).await?;
        match usage_refusal(org, usage, now) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Counts one query against the organisation's monthly quota and cost cap, atomically.
    pub(super) async fn count_query(&self, org: &Org, now: Timestamp) -> Result<(), CoreError> {
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
