//! [`BatchStore`] on DynamoDB: the records a request reads before it writes, in one
//! `BatchGetItem`; and a [`Gate`]'s items in a session's transaction, with the reading of why
//! such a transaction was cancelled.

use std::collections::HashMap;

use async_trait::async_trait;
use aws_sdk_dynamodb::types::{
    KeysAndAttributes, ReturnValuesOnConditionCheckFailure, TransactWriteItem, Update,
};
use knowledge_core::ids::OrgId;
use knowledge_core::ports::{
    BatchStore, Gate, Reads, SessionStore, Snapshot, StoreError, StoreResult,
};

use crate::codec::*;
use crate::limits::rate_window_from;
use crate::orgs::org_from;
use crate::transact::{Refusal, TransactError, next_round, reason_code};
use crate::{DynamoStore, keys};

#[async_trait]
impl BatchStore for DynamoStore {
    async fn read_batch(&self, reads: &Reads<'_>) -> StoreResult<Snapshot> {
        let member = keys::member(reads.org, reads.user);
        let org = reads.org_record.then(|| keys::org(reads.org));
        let usage = reads.usage_month.map(|m| keys::usage(reads.org, m));
        let window = reads.rate_window.map(keys::rate_window);
        let session_key = reads.session_key();
        let session = session_key.as_ref().map(keys::session);
        let wanted: Vec<(String, String)> = [Some(member.clone()), org.clone()]
            .into_iter()
            .chain([usage.clone(), window.clone(), session.clone()])
            .flatten()
            .collect();
        let mut found = self.batch_get(wanted).await?;
        let mut take = |key: Option<(String, String)>| key.and_then(|k| found.remove(&k));
        let mut snapshot = Snapshot {
            member: take(Some(member)).map(|i| member_from(&i)).transpose()?,
            org: take(org).map(|i| org_from(&i)).transpose()?,
            usage: take(usage)
                .map(|i| usage_from(&i))
                .transpose()?
                .unwrap_or_default(),
            rate_window: take(window)
                .map(|i| rate_window_from(&i))
                .transpose()?
                .unwrap_or_default(),
            session: match (take(session), &session_key) {
                (Some(item), Some(key)) => Some(session_from(key, &item)?),
                _ => None,
            },
            events: Vec::new(),
        };
        // The events after the session, and only for a member's session that exists.
        if let (Some(page), Some(session), Some(_)) =
            (reads.events, &snapshot.session, &snapshot.member)
        {
            snapshot.events = self
                .list_events(&session.key, page.after, page.limit)
                .await?;
        }
        Ok(snapshot)
    }
}

impl DynamoStore {
    /// The items stored under `wanted` (at most 100 distinct keys), read strongly consistent,
    /// by key. Keys left unprocessed are asked for again with backoff.
    async fn batch_get(
        &self, wanted: Vec<(String, String)>,
    ) -> StoreResult<HashMap<(String, String), Item>> {
        let mut found = HashMap::with_capacity(wanted.len());
        let keys = wanted.into_iter().map(key_item).collect::<Vec<_>>();
        let mut request = Some(built(
            KeysAndAttributes::builder()
                .set_keys(Some(keys))
                .consistent_read(true)
                .build(),
        )?);
        let mut round = 0;
        while let Some(ask) = request.take() {
            next_round(round, || "keys of a BatchGetItem".to_owned()).await?;
            let out = self
                .client
                .batch_get_item()
                .request_items(&self.table, ask)
                .send()
                .await
                .map_err(backend)?;
            for item in out
                .responses
                .and_then(|mut r| r.remove(&self.table))
                .unwrap_or_default()
            {
                let key = (
                    get_s(&item, keys::PK)?.to_owned(),
                    get_s(&item, keys::SK)?.to_owned(),
                );
                found.insert(key, item);
            }
            request = out
                .unprocessed_keys
                .and_then(|mut u| u.remove(&self.table))
                .filter(|k| !k.keys().is_empty());
            round += 1;
        }
        Ok(found)
    }

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
