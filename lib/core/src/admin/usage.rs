//! The usage report an admin reads: a month's questions and spend against the organisation's
//! limits, the same month by day and by model, and the members who used the most, each
//! against the allowance that applies to them.

use super::{Admin, Administration};
use crate::domain::{Member, MemberCaps, MonthUsage, Usage};
use crate::error::CoreError;
use crate::ids::UserId;

/// Members a report names at most, the most used first.
pub const TOP_MEMBERS: usize = 10;
/// Members' months a report reads at once.
const USAGE_PAGE: usize = 100;

/// A month's usage against the organisation's limits.
#[derive(Debug, Clone, PartialEq)]
pub struct UsageReport {
    /// `YYYY-MM`, UTC.
    pub month: String,
    /// The organisation's counters, which its limits are checked against.
    pub usage: Usage,
    /// The month by day and by model: the sum of its members' months.
    pub detail: MonthUsage,
    pub monthly_query_quota: Option<u64>,
    pub cost_cap_micros: Option<u64>,
    /// Each member's allowance, unless an admin set one for the member.
    pub member_caps: MemberCaps,
    /// The members who used the most in the month (spend, then questions), at most
    /// [`TOP_MEMBERS`].
    pub members: Vec<MemberUsage>,
    /// How many members asked anything in the month.
    pub active_members: usize,
}

/// One member's month in a [`UsageReport`].
#[derive(Debug, Clone, PartialEq)]
pub struct MemberUsage {
    pub user: UserId,
    /// The member as stored now; `None` once removed (their usage stays counted).
    pub member: Option<Member>,
    pub usage: MonthUsage,
    /// The allowance that applies to them now: their own, or the organisation's.
    pub caps: MemberCaps,
}

/// `raw` as a calendar month, `YYYY-MM`. Errors: `InvalidInput`.
pub fn parse_month(raw: &str) -> Result<String, CoreError> {
    let b = raw.as_bytes();
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    let well_formed = b.len() == 7 && b[4] == b'-' && digits(0..4) && digits(5..7);
    let month = well_formed.then(|| (b[5] - b'0') * 10 + (b[6] - b'0'));
    match month.is_some_and(|m| (1..=12).contains(&m)) {
        true => Ok(raw.to_owned()),
        false => Err(CoreError::invalid(
            "invalid_field",
            "month must be a calendar month, YYYY-MM",
        )),
    }
}

impl Administration {
    /// The usage report of this month.
    pub async fn usage(&self, admin: &Admin) -> Result<UsageReport, CoreError> {
        let month = self.now().month();
        self.usage_of(admin, &month).await
    }

    /// The usage report of `month` (`YYYY-MM`, see [`parse_month`]): the organisation's
    /// counters, and its members' months (read 100 at a time, one `Query` each; their sum
    /// gives the days and models), with the [`TOP_MEMBERS`] most used read at once. A month
    /// with no usage reports zeros. Errors: `NotFound`.
    pub async fn usage_of(&self, admin: &Admin, month: &str) -> Result<UsageReport, CoreError> {
        let org = self.org(admin).await?;
        let usage = self.stores.limits.get_usage(&admin.org, month).await?;
        // Page by page: the sums, the count and the ten largest are all that is kept, so an
        // organisation of any size is summed in the memory of a page.
        let (mut detail, mut active_members) = (MonthUsage::default(), 0);
        let mut top: Vec<(UserId, MonthUsage)> = Vec::with_capacity(TOP_MEMBERS + USAGE_PAGE);
        let mut after = None;
        loop {
            let page = (self.stores.limits)
                .list_member_usage_after(&admin.org, month, after.as_ref(), USAGE_PAGE)
                .await?;
            let last_page = page.len() < USAGE_PAGE;
            after = page.last().map(|(user, _)| user.clone());
            active_members += page.len();
            page.iter().for_each(|(_, month)| detail.add(month));
            top.extend(page);
            top.sort_by(|(a_user, a), (b_user, b)| {
                let (a, b) = (a.usage, b.usage);
                (b.cost_micros, b.queries, a_user).cmp(&(a.cost_micros, a.queries, b_user))
            });
            top.truncate(TOP_MEMBERS);
            if last_page {
                break;
            }
        }
        let members = (self.named(admin, top).await?)
            .into_iter()
            .map(|m| MemberUsage {
                caps: (m.member.as_ref()).map_or(org.member_caps, |member| member.caps_in(&org)),
                user: m.user,
                member: m.member,
                usage: m.usage,
            })
            .collect();
        Ok(UsageReport {
            month: month.to_owned(),
            usage,
            detail,
            monthly_query_quota: org.monthly_query_quota,
            cost_cap_micros: org.cost_cap_micros,
            member_caps: org.member_caps,
            members,
            active_members,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::parse_month;

    #[test]
    fn only_a_calendar_month_parses() {
        assert_eq!(parse_month("2026-11").unwrap(), "2026-11");
        for bad in [
            "2026-13",
            "2026-00",
            "2026-1",
            "26-11",
            "2026/11",
            "2026-11-01",
            "",
            "２０２６-11",
        ] {
            assert!(parse_month(bad).is_err(), "{bad}");
        }
    }
}
