//! Transactions: the conditional items they are made of, their submission, and why one was
//! cancelled; and batched deletes.

use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::builders::PutBuilder;
use aws_sdk_dynamodb::types::{
    CancellationReason, ConditionCheck, Delete, DeleteRequest, Put, ReturnValue,
    ReturnValuesOnConditionCheckFailure, TransactWriteItem, WriteRequest,
};
use knowledge_core::domain::{Event, Member};
use knowledge_core::ids::SessionKey;
use knowledge_core::ports::{StoreError, StoreResult};
use std::time::Duration;

use aws_sdk_dynamodb::operation::put_item::builders::PutItemFluentBuilder;

use crate::codec::*;
use crate::{DynamoStore, keys};

/// Items one BatchWriteItem request takes at most.
const BATCH: usize = 25;
/// Rounds of retrying a batch's unprocessed items before giving up.
const BATCH_ROUNDS: u32 = 8;

/// Before `round` of a batch request (0 first) whose earlier rounds left items unprocessed
/// (throttling): waits a backoff that doubles from 50 ms up to 1.6 s, or gives up after
/// [`BATCH_ROUNDS`] rounds with an error naming what was `left`.
pub(crate) async fn next_round(round: u32, left: impl FnOnce() -> String) -> StoreResult<()> {
    if round == BATCH_ROUNDS {
        return Err(StoreError::backend(format!(
            "{} still unprocessed after {BATCH_ROUNDS} rounds",
            left()
        )));
    }
    if round > 0 {
        tokio::time::sleep(Duration::from_millis(25 << round.min(6))).await;
    }
    Ok(())
}

pub(crate) fn reason_code(r: &CancellationReason) -> &str {
    r.code().unwrap_or("None")
}

/// Why a transaction was not applied. Every transaction puts the record it is about first, so
/// the first item's condition is the record's (exists, not exists, or its version).
pub(crate) enum TransactError {
    /// The first item's condition failed; `stored` when it returned the stored item
    /// (`ReturnValuesOnConditionCheckFailure=ALL_OLD`), so the record exists but moved.
    FirstCondition {
        stored: bool,
    },
    /// Another item's condition failed (a claim or key taken); the error is for logs.
    OtherCondition(StoreError),
    /// A concurrent transaction touched one of the items: re-read and try again.
    Contended,
    Backend(StoreError),
}

impl TransactError {
    /// The store's error for a transaction that creates a record (first) with its claims: the
    /// record or a claim already there is `AlreadyExists`, a concurrent one `Conflict`.
    pub(crate) fn of_create(self) -> StoreError {
        match self {
            Self::FirstCondition { .. } | Self::OtherCondition(_) => StoreError::AlreadyExists,
            Self::Contended => StoreError::Conflict,
            Self::Backend(e) => e,
        }
    }

    /// The store's error for a transaction that replaces a record (first, at its version)
    /// and claims what it newly holds: the record moved is `Conflict`, gone `Gone`, and a new
    /// claim taken by another record `AlreadyExists`.
    pub(crate) fn of_replace(self) -> StoreError {
        match self {
            Self::FirstCondition { stored: true } | Self::Contended => StoreError::Conflict,
            Self::FirstCondition { stored: false } => StoreError::Gone,
            Self::OtherCondition(_) => StoreError::AlreadyExists,
            Self::Backend(e) => e,
        }
    }
}

/// Whether a transaction whose first write is conditional on its record existing was
/// applied: `Ok(false)` when the record is not there (its condition failed), `Conflict` when
/// the transaction was contended, another condition's or the backend's error otherwise.
pub(crate) fn applied(result: Result<(), TransactError>) -> StoreResult<bool> {
    match result {
        Ok(()) => Ok(true),
        Err(TransactError::FirstCondition { .. }) => Ok(false),
        Err(TransactError::Contended) => Err(StoreError::Conflict),
        Err(TransactError::OtherCondition(e) | TransactError::Backend(e)) => Err(e),
    }
}

/// Why a transaction was not applied, unclassified.
pub(crate) enum Refusal {
    /// Cancelled: the reasons, one per item in order, and the error for logs.
    Cancelled {
        reasons: Vec<CancellationReason>,
        error: StoreError,
    },
    Backend(StoreError),
}

impl TransactError {
    /// Classifies a cancellation by its reasons, one per item in order (code `None` for the
    /// items that were fine).
    /// With `keeper_last`, the last item is a keeper's check ([`DynamoStore::transact_keeping`]),
    /// whose failure is `Contended`: the keeper moved, read again.
    pub(crate) fn cancelled(
        reasons: &[CancellationReason], error: StoreError, keeper_last: bool,
    ) -> Self {
        let failed = |code: &str| reasons.iter().any(|r| reason_code(r) == code);
        let keeper_moved = keeper_last
            && reasons
                .last()
                .is_some_and(|r| reason_code(r) == "ConditionalCheckFailed");
        match reasons.first() {
            Some(first) if reason_code(first) == "ConditionalCheckFailed" => Self::FirstCondition {
                stored: first.item().is_some_and(|i| !i.is_empty()),
            },
            _ if keeper_moved => Self::Contended,
            _ if failed("ConditionalCheckFailed") => Self::OtherCondition(error),
            _ if failed("TransactionConflict") => Self::Contended,
            _ => Self::Backend(error),
        }
    }
}

impl DynamoStore {
    /// A put of `item` only where nothing is stored yet.
    pub(crate) fn new_put(&self, item: Item) -> PutBuilder {
        Put::builder()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression("attribute_not_exists(#pk)")
            .expression_attribute_names("#pk", keys::PK)
    }

    /// A put of `item` over a record only at `expected` version, returning the stored record
    /// when the condition fails.
    pub(crate) fn versioned_put(&self, item: Item, expected: u64) -> PutBuilder {
        Put::builder()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression("#v = :expected")
            .expression_attribute_names("#v", "version")
            .expression_attribute_values(":expected", n(expected))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
    }

    /// A transaction item that writes `item` only where nothing is stored yet.
    pub(crate) fn put_new(&self, item: Item) -> StoreResult<TransactWriteItem> {
        let put = built(self.new_put(item).build())?;
        Ok(TransactWriteItem::builder().put(put).build())
    }

    /// A transaction item that replaces `item` only where one is stored.
    pub(crate) fn put_existing(&self, item: Item) -> StoreResult<TransactWriteItem> {
        let put = Put::builder()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression("attribute_exists(#pk)")
            .expression_attribute_names("#pk", keys::PK);
        Ok(TransactWriteItem::builder()
            .put(built(put.build())?)
            .build())
    }

    /// A transaction item of [`DynamoStore::versioned_put`].
    pub(crate) fn put_versioned(
        &self, item: Item, expected: u64,
    ) -> StoreResult<TransactWriteItem> {
        let put = built(self.versioned_put(item, expected).build())?;
        Ok(TransactWriteItem::builder().put(put).build())
    }

    /// `put` as a request of its own (`PutItem`, 1 WRU), where no transaction is needed.
    pub(crate) fn put_item(&self, put: Put) -> PutItemFluentBuilder {
        self.client
            .put_item()
            .table_name(put.table_name)
            .set_item(Some(put.item))
            .set_condition_expression(put.condition_expression)
            .set_expression_attribute_names(put.expression_attribute_names)
            .set_expression_attribute_values(put.expression_attribute_values)
            .set_return_values_on_condition_check_failure(
                put.return_values_on_condition_check_failure,
            )
    }

    /// The puts of new events. The session's version check already makes their numbers free;
    /// the condition keeps a bug from overwriting an event all the same.
    pub(crate) fn event_puts(
        &self, key: &SessionKey, events: &[Event],
    ) -> StoreResult<Vec<TransactWriteItem>> {
        events
            .iter()
            .map(|e| self.put_new(event_item(key, e)?))
            .collect()
    }

    /// A transaction item that deletes whatever is stored under `key`.
    pub(crate) fn delete(&self, key: (String, String)) -> StoreResult<TransactWriteItem> {
        let delete = Delete::builder()
            .table_name(&self.table)
            .set_key(Some(key_item(key)));
        Ok(TransactWriteItem::builder()
            .delete(built(delete.build())?)
            .build())
    }

    pub(crate) async fn transact(
        &self, writes: Vec<TransactWriteItem>,
    ) -> Result<(), TransactError> {
        self.submit(writes, false).await
    }

    /// [`DynamoStore::transact`] with one more item last: the check that `keeper` is still
    /// stored at its version. The keeper having moved (or gone) is `Contended`.
    pub(crate) async fn transact_keeping(
        &self, mut writes: Vec<TransactWriteItem>, keeper: &Member,
    ) -> Result<(), TransactError> {
        let check = ConditionCheck::builder()
            .table_name(&self.table)
            .set_key(Some(key_item(keys::member(&keeper.org, &keeper.user))))
            .condition_expression("#v = :expected")
            .expression_attribute_names("#v", "version")
            .expression_attribute_values(":expected", n(keeper.version));
        let check = built(check.build()).map_err(TransactError::Backend)?;
        writes.push(TransactWriteItem::builder().condition_check(check).build());
        self.submit(writes, true).await
    }

    async fn submit(
        &self, writes: Vec<TransactWriteItem>, keeper_last: bool,
    ) -> Result<(), TransactError> {
        self.send_transaction(writes)
            .await
            .map_err(|refusal| match refusal {
                Refusal::Cancelled { reasons, error } => {
                    TransactError::cancelled(&reasons, error, keeper_last)
                }
                Refusal::Backend(e) => TransactError::Backend(e),
            })
    }

    /// Sends a transaction; a cancelled one comes back with its reasons, one per item in order.
    pub(crate) async fn send_transaction(
        &self, writes: Vec<TransactWriteItem>,
    ) -> Result<(), Refusal> {
        match self
            .client
            .transact_write_items()
            .set_transact_items(Some(writes))
            .send()
            .await
        {
            Ok(_) => Ok(()),
            Err(e) => match e.as_service_error() {
                Some(TransactWriteItemsError::TransactionCanceledException(c)) => {
                    Err(Refusal::Cancelled {
                        reasons: c.cancellation_reasons().to_vec(),
                        error: backend(e),
                    })
                }
                _ => Err(Refusal::Backend(backend(e))),
            },
        }
    }

    /// Deletes `keys` in batches of [`BATCH`], retrying unprocessed items with backoff.
    pub(crate) async fn delete_all(&self, mut items: Vec<Item>) -> StoreResult<()> {
        while !items.is_empty() {
            let rest = items.split_off(items.len().min(BATCH));
            let mut requests: Vec<WriteRequest> = items
                .drain(..)
                .map(|key| {
                    built(DeleteRequest::builder().set_key(Some(key)).build())
                        .map(|d| WriteRequest::builder().delete_request(d).build())
                })
                .collect::<Result<_, _>>()?;
            let mut round = 0;
            while !requests.is_empty() {
                next_round(round, || format!("{} deletes", requests.len())).await?;
                let out = self
                    .client
                    .batch_write_item()
                    .request_items(&self.table, std::mem::take(&mut requests))
                    .send()
                    .await
                    .map_err(backend)?;
                requests = out
                    .unprocessed_items
                    .and_then(|mut u| u.remove(&self.table))
                    .unwrap_or_default();
                round += 1;
            }
            items = rest;
        }
        Ok(())
    }

    /// Sends a conditional put: `Ok(false)`, writing nothing, when its condition failed.
    pub(crate) async fn put_checked(&self, put: PutItemFluentBuilder) -> StoreResult<bool> {
        match put.table_name(&self.table).send().await {
            Ok(_) => Ok(true),
            Err(e)
                if e.as_service_error()
                    .is_some_and(|e| e.is_conditional_check_failed_exception()) =>
            {
                Ok(false)
            }
            Err(e) => Err(backend(e)),
        }
    }

    /// Deletes the item under `key` and returns what it held, `None` when there was none.
    pub(crate) async fn take(&self, key: (String, String)) -> StoreResult<Option<Item>> {
        let delete = self.client.delete_item().set_key(Some(key_item(key)));
        let out = delete
            .return_values(ReturnValue::AllOld)
            .table_name(&self.table)
            .send()
            .await
            .map_err(backend)?;
        Ok(out.attributes.filter(|a| !a.is_empty()))
    }
}
