//! A member's own usage: their month by day and by model, against the allowance that applies
//! to them. Only their own: an admin reads everyone's through [`crate::admin`].

use crate::admin::parse_month;
use crate::domain::{MemberCaps, MonthUsage};
use crate::error::CoreError;
use crate::ports::Reads;

use super::{Service, SignedIn};

/// What a member sees of their month.
#[derive(Debug, Clone, PartialEq)]
pub struct OwnUsage {
    /// `YYYY-MM`, UTC.
    pub month: String,
    pub usage: MonthUsage,
    /// Their allowance now: their own, or the organisation's.
    pub caps: MemberCaps,
}

impl Service {
    /// The member's usage in `month` (this month when `None`; `YYYY-MM`). Two store round
    /// trips: the membership (checked here) and the organisation read together, then the
    /// member's month. Errors: `InvalidInput` (the month), `Unauthenticated` (not a member, or
    /// signed out since), `NotFound` (the organisation).
    pub async fn own_usage(
        &self, who: &SignedIn, month: Option<&str>,
    ) -> Result<OwnUsage, CoreError> {
        let month = match month {
            Some(raw) => parse_month(raw)?,
            None => self.now().month(),
        };
        let reads = Reads {
            org_record: true,
            ..who.reads()
        };
        let read = self.read_as(who, reads).await?;
        let member = read.member.ok_or(CoreError::Unauthenticated)?;
        let org = read.org.ok_or(CoreError::NotFound("organisation"))?;
        let usage = (self.deps.store)
            .get_member_usage(&who.org, &who.user, &month)
            .await?;
        Ok(OwnUsage {
            month,
            usage,
            caps: member.caps_in(&org),
        })
    }
}
