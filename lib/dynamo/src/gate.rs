//! A [`Gate`] on DynamoDB: its items (the rate window's conditional put, the month's query count
//! under its limits) in a session's transaction, and the reading of why such a transaction was
//! cancelled: the gate's refusal told apart from the session's own.

use aws_sdk_dynamodb::types::{ReturnValuesOnConditionCheckFailure, TransactWriteItem, Update};
use knowledge_core::ids::OrgId;
use knowledge_core::ports::{Gate, StoreError, StoreResult};

use crate::codec::*;
use crate::transact::{Refusal, TransactError, reason_code};
use crate::{DynamoStore, keys};

impl DynamoStore {
    /// The items of `gate` for a write to a session of `org`, to follow the write's own items:
    /// the rate window's conditional put, then, when the gate counts a query, the month's
    /// conditional count.
    pub(crate) fn gate_items(
        &self, org: &OrgId, gate: &Gate<'_>,
    ) -> StoreResult<Vec<TransactWriteItem>> {
        let mut items = vec![
            TransactWriteItem::builder()
                .put(self.rate_window_put(&gate.rate)?)
                .build(),
        ];
        if let Some(count) = &gate.query {
            let mut update = Update::builder()
                .table_name(&self.table)
                .set_key(Some(key_item(keys::usage(org, count.month))))
                .update_expression("ADD queries :one")
                .expression_attribute_values(":one", n(1))
                .return_values_on_condition_check_failure(
                    ReturnValuesOnConditionCheckFailure::AllOld,
                );
            let mut conditions = Vec::new();
            let limits = [
                ("queries", ":quota", count.quota),
                ("costMicros", ":cap", count.cap_micros),
            ];
            for (attribute, placeholder, limit) in limits {
                if let Some(limit) = limit {
                    conditions.push(under(attribute, placeholder, limit));
                    update = update.expression_attribute_values(placeholder, n(limit));
                }
            }
            if !conditions.is_empty() {
                update = update.condition_expression(conditions.join(" AND "));
            }
            items.push(
                TransactWriteItem::builder()
                    .update(built(update.build())?)
                    .build(),
            );
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
            if let Some(reason) = failed(at + 1) {
                let usage = reason.item().map(usage_from).transpose();
                return Err(Gated::Refused(match usage {
                    Ok(usage) => StoreError::UsageLimit(usage.unwrap_or_default()),
                    Err(e) => e,
                }));
            }
        }
        Err(Gated::Transact(TransactError::cancelled(
            &reasons, error, false,
        )))
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
