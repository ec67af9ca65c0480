//! A month of usage on the wire, as the member's own usage and the admin's report both show
//! it: the month asked for, its days with usage and the models called.

use knowledge_core::admin::parse_month;
use knowledge_core::domain::{MonthUsage, micros_to_usd};
use serde::Serialize;
use utoipa::{IntoParams, ToSchema};

use crate::error::ApiError;
use crate::extract::QueryParams;

/// `GET /usage`'s query.
#[derive(Debug, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct UsageQuery {
    /// A calendar month, `YYYY-MM` (UTC); this month when absent.
    #[param(pattern = "^[0-9]{4}-(0[1-9]|1[0-2])$")]
    pub month: Option<String>,
}

impl UsageQuery {
    /// The month asked for, if one is. Errors: 400 for one that is not `YYYY-MM`.
    pub fn parse(raw: Option<&str>) -> Result<Option<String>, ApiError> {
        let q = QueryParams::parse(raw);
        Ok(q.get("month").map(parse_month).transpose()?)
    }
}

/// One day of a month.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DayUsageView {
    /// `YYYY-MM-DD`, UTC.
    pub date: String,
    /// Questions asked that day.
    pub questions: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub usd: f64,
}

/// One model's part of a month.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelUsageView {
    pub model: String,
    /// Calls to the model (a question takes one per step of the agent).
    pub calls: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub usd: f64,
}

/// `month`'s days with usage, in order, as the wire shows them.
pub fn day_views(month: &str, usage: &MonthUsage) -> Vec<DayUsageView> {
    (usage.days.iter())
        .map(|(day, d)| DayUsageView {
            date: format!("{month}-{day:02}"),
            questions: d.questions,
            input_tokens: d.input_tokens,
            output_tokens: d.output_tokens,
            usd: micros_to_usd(d.cost_micros),
        })
        .collect()
}

/// The models of `usage`, most spent on first.
pub fn model_views(usage: &MonthUsage) -> Vec<ModelUsageView> {
    (usage.models_by_cost().into_iter())
        .map(|(model, m)| ModelUsageView {
            model: model.to_owned(),
            calls: m.calls,
            input_tokens: m.input_tokens,
            output_tokens: m.output_tokens,
            usd: micros_to_usd(m.cost_micros),
        })
        .collect()
}
