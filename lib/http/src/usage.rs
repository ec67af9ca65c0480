//! A member's own usage (`/api/usage`): their month by day and by model, against the
//! allowance that applies to them. Only their own; the admin API reads everyone's. What both
//! show of a month (the query, the days, the models) is in [`month`].

pub mod month;

use axum::Json;
use axum::extract::RawQuery;
use knowledge_core::domain::micros_to_usd;
use knowledge_core::service::OwnUsage;
use serde::Serialize;
use utoipa::ToSchema;

use crate::error::ApiError;
use crate::extract::Claimant;
use crate::routes::ApiErrors;
use month::{DayUsageView, ModelUsageView, UsageQuery, day_views, model_views};

/// The member's month.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct OwnUsageView {
    /// `YYYY-MM`, UTC.
    pub month: String,
    pub questions: u64,
    pub usd: f64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Their monthly question allowance (their own or the organisation's); absent when
    /// unlimited.
    pub question_cap: Option<u64>,
    /// Their monthly spending allowance in US dollars; absent when unlimited.
    pub cap_usd: Option<f64>,
    /// The days with any usage, in order.
    pub days: Vec<DayUsageView>,
    /// The models called, most spent on first.
    pub models: Vec<ModelUsageView>,
}

impl From<OwnUsage> for OwnUsageView {
    fn from(u: OwnUsage) -> Self {
        let (input_tokens, output_tokens) = u.usage.tokens();
        Self {
            questions: u.usage.usage.queries,
            usd: micros_to_usd(u.usage.usage.cost_micros),
            input_tokens,
            output_tokens,
            question_cap: u.caps.queries,
            cap_usd: u.caps.cost_micros.map(micros_to_usd),
            days: day_views(&u.month, &u.usage),
            models: model_views(&u.usage),
            month: u.month,
        }
    }
}

/// The signed-in member's usage in the active organisation, this month unless `month` names
/// another.
#[utoipa::path(get, path = "/api/usage", operation_id = "getOwnUsage", params(UsageQuery),
    responses((status = 200, description = "The member's month.", body = OwnUsageView), ApiErrors))]
pub async fn get(
    Claimant { app, who }: Claimant, RawQuery(q): RawQuery,
) -> Result<Json<OwnUsageView>, ApiError> {
    let month = UsageQuery::parse(q.as_deref())?;
    let usage = app.service.own_usage(&who, month.as_deref()).await?;
    Ok(Json(usage.into()))
}
