//! A [`Gate`] on DynamoDB: its items (the rate window's conditional put, the month's query count
//! under the organisation's limits and under the member's allowance) in a session's
//! transaction, and the reading of why such a transaction was cancelled: the gate's refusal
//! told apart from the session's own.

use aws_sdk_dynamodb::types::{ReturnValuesOnConditionCheckFailure, TransactWriteItem, Update};
use knowledge_core::ids::{OrgId, UserId};
use knowledge_core::ports::{Gate, StoreError, StoreResult};

use crate::codec::*;
use crate::tally::{DayPart, day_attribute};
use crate::transact::{Refusal, TransactError, reason_code};
use crate::{DynamoStore, keys};

impl DynamoStore {
    /// The items of `gate` for a write to a session of `org` by `user`, to follow the write's
    /// own items: the rate window's conditional put, then, when the gate counts a query, the
    /// organisation's month's conditional count and the member's.
    pub(crate) fn gate_items(
        &self, org: &OrgId, user: &UserId, gate: &Gate<'_>,
    ) -> StoreResult<Vec<TransactWriteItem>> {
        let mut items = vec![
            TransactWriteItem::builder()
                .put(self.rate_window_put(&gate.rate)?)
                .build(),
        ];
        if let Some(count) = &gate.query {
            let org_limits = [
                ("queries", ":quota", count.quota),
                ("costMicros", ":cap", count.cap_micros),
            ];
            let member_limits = [
                ("queries", ":quota", count.member.queries),
                ("costMicros", ":cap", count.member.cost_micros),
            ];
            // The member's question is also counted on its day (the organisation's days are
            // the sum of its members').
            let day = day_attribute(count.day, DayPart::Questions);
            let counts = [
                (keys::usage(org, count.month), org_limits, None),
                (
                    keys::member_usage(org, user, count.month),
                    member_limits,
                    Some(day.as_str()),
                ),
            ];
            for (key, limits, day) in counts {
                items.push(
                    TransactWriteItem::builder()
                        .update(self.count_under(key, limits, day)?)
                        .build(),
                );
            }
        }
        Ok(items)
    }

    /// Sends a session's transaction whose gate items start at `gate_at` (none when `None`).
    /// A gate's refusal is told apart: the rate window moved (`Conflict`), the month at a limit
    /// (`UsageLimit`). Anything else is classified as [`DynamoStore::transact`] does.
    pub(crate) async fn transact_gated(
        &self, writes: Vec<TransactWriteItem>, gate_at: Option<usize>,
    ) -> Result<(), Gated> {
        let (reasons, error) = match self.send_transaction(writes).await {
            Ok(()) => return Ok(()),
            Err(Refusal::Backend(e)) => return Err(Gated::Transact(TransactError::Backend(e))),
            Err(Refusal::Cancelled { reasons, error }) => (reasons, error),
        };
        let failed = |i: usize| {
            reasons
                .get(i)
                .filter(|r| reason_code(r) == "ConditionalCheckFailed")
        };
        // The gate's items tell the refusal apart only when the session's own check passed.
        if let Some(at) = gate_at.filter(|_| failed(0).is_none()) {
            if failed(at).is_some() {
                return Err(Gated::Refused(StoreError::Conflict));
            }
            // The organisation's count, then the member's: the first that refused.
            let refused = [at + 1, at + 2]
                .into_iter()
                .enumerate()
                .find_map(|(n, i)| failed(i).map(|reason| (n, reason)));
            if let Some((n, reason)) = refused {
                let usage = reason.item().map(usage_from).transpose();
                return Err(Gated::Refused(match usage {
                    Ok(usage) if n == 0 => StoreError::UsageLimit(usage.unwrap_or_default()),
                    Ok(usage) => StoreError::MemberLimit(usage.unwrap_or_default()),
                    Err(e) => e,
                }));
            }
        }
        Err(Gated::Transact(TransactError::cancelled(
            &reasons, error, false,
        )))
    }
}

impl DynamoStore {
    /// One query added to the usage item `key` (and to its `day` attribute, when given), on
    /// the condition that it is under each of `limits` that is set (attribute, placeholder,
    /// limit); the old item comes back when it is not.
    fn count_under(
        &self, key: (String, String), limits: [(&str, &str, Option<u64>); 2], day: Option<&str>,
    ) -> StoreResult<Update> {
        let expression = match day {
            Some(day) => format!("ADD queries :one, {day} :one"),
            None => "ADD queries :one".to_owned(),
        };
        let mut update = Update::builder()
            .table_name(&self.table)
            .set_key(Some(key_item(key)))
            .update_expression(expression)
            .expression_attribute_values(":one", n(1))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
        let mut conditions = Vec::new();
        for (attribute, placeholder, limit) in limits {
            if let Some(limit) = limit {
                conditions.push(under(attribute, placeholder, limit));
                update = update.expression_attribute_values(placeholder, n(limit));
            }
        }
        if !conditions.is_empty() {
            update = update.condition_expression(conditions.join(" AND "));
        }
        built(update.build())
    }
}

/// The condition that the usage item's `attribute` is under the limit bound to `placeholder`.
/// A month with no item yet passes, except for a limit of zero: the comparison alone is false
/// for an attribute that does not exist.
fn under(attribute: &str, placeholder: &str, limit: u64) -> String {
    let below = format!("{attribute} < {placeholder}");
    match limit {
        0 => below,
        _ => format!("(attribute_not_exists({attribute}) OR {below})"),
    }
}

/// Why a gated transaction was not applied.
pub(crate) enum Gated {
    /// The gate refused: `Conflict` or `UsageLimit`.
    Refused(StoreError),
    /// As an ungated transaction would have failed.
    Transact(TransactError),
}
