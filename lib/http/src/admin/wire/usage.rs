//! The admin's usage report on the wire: the organisation's month against its limits, its
//! busiest members, its days and models.

use knowledge_core::admin::{MemberUsage, UsageReport};
use knowledge_core::domain::micros_to_usd;
use serde::Serialize;
use utoipa::ToSchema;

use crate::usage::month::{DayUsageView, ModelUsageView, day_views, model_views};

/// The month's usage against the limits.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UsageView {
    /// `YYYY-MM`, UTC.
    pub month: String,
    pub queries: u64,
    /// Absent when unlimited.
    pub monthly_query_quota: Option<u64>,
    pub month_to_date_usd: f64,
    /// Absent when unlimited.
    pub cost_cap_usd: Option<f64>,
    /// Each member's monthly question allowance, unless set for the member; absent when
    /// unlimited.
    pub member_question_cap: Option<u64>,
    /// Each member's monthly spending allowance in US dollars, unless set for the member;
    /// absent when unlimited.
    pub member_cap_usd: Option<f64>,
    /// How many members asked anything in the month.
    pub active_members: usize,
    /// The members who used the most (spend, then questions), at most ten.
    pub members: Vec<MemberUsageView>,
    /// The month's tokens, over every model.
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// The days with any usage, in order.
    pub days: Vec<DayUsageView>,
    /// The models called, most spent on first.
    pub models: Vec<ModelUsageView>,
}

/// One member's month: their usage against the allowance that applies to them now.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemberUsageView {
    pub user_id: String,
    /// Absent for a member without a profile, or removed since.
    pub user_name: Option<String>,
    pub display_name: Option<String>,
    /// The member has been removed; their usage still counts in the month.
    pub removed: bool,
    pub questions: u64,
    pub usd: f64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Their allowance now, their own or the organisation's; absent when unlimited.
    pub question_cap: Option<u64>,
    pub cap_usd: Option<f64>,
}

impl From<MemberUsage> for MemberUsageView {
    fn from(m: MemberUsage) -> Self {
        let profile = m.member.as_ref().and_then(|m| m.profile.as_ref());
        Self {
            user_id: m.user.to_string(),
            user_name: profile.map(|p| p.user_name.clone()),
            display_name: profile.and_then(|p| p.display_name()).map(str::to_owned),
            removed: m.member.is_none(),
            questions: m.usage.usage.queries,
            usd: micros_to_usd(m.usage.usage.cost_micros),
            input_tokens: m.usage.tokens().0,
            output_tokens: m.usage.tokens().1,
            question_cap: m.caps.queries,
            cap_usd: m.caps.cost_micros.map(micros_to_usd),
        }
    }
}

impl From<UsageReport> for UsageView {
    fn from(u: UsageReport) -> Self {
        let (days, models) = (day_views(&u.month, &u.detail), model_views(&u.detail));
        let (input_tokens, output_tokens) = u.detail.tokens();
        Self {
            month: u.month,
            queries: u.usage.queries,
            monthly_query_quota: u.monthly_query_quota,
            month_to_date_usd: micros_to_usd(u.usage.cost_micros),
            cost_cap_usd: u.cost_cap_micros.map(micros_to_usd),
            member_question_cap: u.member_caps.queries,
            member_cap_usd: u.member_caps.cost_micros.map(micros_to_usd),
            active_members: u.active_members,
            members: u.members.into_iter().map(MemberUsageView::from).collect(),
            input_tokens,
            output_tokens,
            days,
            models,
        }
    }
}
