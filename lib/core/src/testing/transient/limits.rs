//! [`LimitStore`] in memory: the rate windows and the monthly usage, and the gate a session
//! write passes (a rate window at its version, the month's quota and cost cap, the member's
//! allowance).

use async_trait::async_trait;

use super::{State, TransientStore};
use crate::domain::{MonthUsage, Usage};
use crate::ids::{OrgId, SessionKey, UserId};
use crate::ports::{Gate, LimitStore, RateUpdate, RateWindow, StoreError, StoreResult};

impl State {
    /// Checks `gate` for a write to the session `key`, then applies it; nothing changes when
    /// it refuses.
    pub(super) fn pass(&mut self, key: &SessionKey, gate: Option<&Gate<'_>>) -> StoreResult<()> {
        let Some(gate) = gate else { return Ok(()) };
        self.window_at(&gate.rate)?;
        if let Some(q) = &gate.query {
            let org_key = (key.org.clone(), q.month.to_owned());
            let member_key = (key.org.clone(), key.user.clone(), q.month.to_owned());
            let usage = self.usage.get(&org_key).copied().unwrap_or_default();
            let over_quota = q.quota.is_some_and(|quota| usage.queries >= quota);
            let over_cap = q.cap_micros.is_some_and(|cap| usage.cost_micros >= cap);
            if over_quota || over_cap {
                return Err(StoreError::UsageLimit(usage));
            }
            let member = self.member_usage.get(&member_key).map(|m| m.usage);
            if q.member.reached(member.unwrap_or_default()) {
                return Err(StoreError::MemberLimit(member.unwrap_or_default()));
            }
            self.usage.entry(org_key).or_default().queries += 1;
            let month = self.member_usage.entry(member_key).or_default();
            month.add_question(q.day);
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
}

#[async_trait]
impl LimitStore for TransientStore {
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

    async fn get_member_usage(
        &self, org: &OrgId, user: &UserId, month: &str,
    ) -> StoreResult<MonthUsage> {
        let key = (org.clone(), user.clone(), month.to_owned());
        Ok(self
            .state()
            .member_usage
            .get(&key)
            .cloned()
            .unwrap_or_default())
    }

    async fn list_member_usage_after(
        &self, org: &OrgId, month: &str, after: Option<&UserId>, limit: usize,
    ) -> StoreResult<Vec<(UserId, MonthUsage)>> {
        let mut each: Vec<_> = (self.state().member_usage.iter())
            .filter(|((o, user, m), _)| o == org && m == month && after.is_none_or(|a| user > a))
            .map(|((_, user, _), usage)| (user.clone(), usage.clone()))
            .collect();
        each.sort_by(|(a, _), (b, _)| a.cmp(b));
        each.truncate(limit);
        Ok(each)
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
