//! Allowances as an admin sets them: the organisation's limits and a member's own caps, in
//! questions and US dollars, checked against their bounds.

use knowledge_core::domain::{COST_CAP_MAX_USD, MemberCaps, QUOTA_MAX};
use knowledge_core::ports::OrgLimits;
use serde::Deserialize;
use utoipa::ToSchema;

use super::invalid;
use crate::error::ApiError;

/// `PUT /usage/limits`: the organisation's limits and each member's allowance; one left out
/// (or null) is unlimited.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LimitsRequest {
    #[schema(minimum = 0, maximum = 1_000_000_000_000_u64)]
    pub monthly_query_quota: Option<u64>,
    /// US dollars, at most a billion.
    #[schema(minimum = 0, maximum = 1_000_000_000)]
    pub cost_cap_usd: Option<f64>,
    /// Questions each member may ask a month, unless set for the member.
    #[schema(minimum = 0, maximum = 1_000_000_000_000_u64)]
    pub member_question_cap: Option<u64>,
    /// US dollars each member may spend a month, unless set for the member.
    #[schema(minimum = 0, maximum = 1_000_000_000)]
    pub member_cap_usd: Option<f64>,
}

impl TryFrom<LimitsRequest> for OrgLimits {
    type Error = ApiError;

    fn try_from(r: LimitsRequest) -> Result<Self, ApiError> {
        Ok(Self {
            quota: questions("monthlyQueryQuota", r.monthly_query_quota)?,
            cap_micros: dollars("costCapUsd", r.cost_cap_usd)?,
            member: MemberCaps {
                queries: questions("memberQuestionCap", r.member_question_cap)?,
                cost_micros: dollars("memberCapUsd", r.member_cap_usd)?,
            },
        })
    }
}

/// `PUT /members/{userId}/caps`: the member's own allowance; one left out (or null) is
/// unlimited for them.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemberCapsRequest {
    #[schema(minimum = 0, maximum = 1_000_000_000_000_u64)]
    pub question_cap: Option<u64>,
    /// US dollars, at most a billion.
    #[schema(minimum = 0, maximum = 1_000_000_000)]
    pub cap_usd: Option<f64>,
}

impl TryFrom<MemberCapsRequest> for MemberCaps {
    type Error = ApiError;

    fn try_from(r: MemberCapsRequest) -> Result<Self, ApiError> {
        Ok(Self {
            queries: questions("questionCap", r.question_cap)?,
            cost_micros: dollars("capUsd", r.cap_usd)?,
        })
    }
}

/// A question count within [`QUOTA_MAX`]. Errors: 400 naming `field`.
fn questions(field: &str, value: Option<u64>) -> Result<Option<u64>, ApiError> {
    match value {
        Some(q) if q > QUOTA_MAX => Err(invalid(format!("{field} must be from 0 to {QUOTA_MAX}"))),
        q => Ok(q),
    }
}

/// US dollars within [`COST_CAP_MAX_USD`], as millionths. Errors: 400 naming `field`.
fn dollars(field: &str, value: Option<f64>) -> Result<Option<u64>, ApiError> {
    match value {
        None => Ok(None),
        Some(usd) if usd.is_finite() && (0.0..=COST_CAP_MAX_USD).contains(&usd) => {
            Ok(Some((usd * 1_000_000.0).round() as u64))
        }
        Some(_) => Err(invalid(format!("{field} must be from 0 to 1000000000"))),
    }
}
