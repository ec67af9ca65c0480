//! `DynamoStore`: the storage port on one DynamoDB table (keys in [`keys`]).
//!
//! Every port method is one request, except `delete_session`, which pages through the events.
//! Reads that decide a write are strongly consistent; only the session list reads the index
//! (GSI1), which is eventually consistent, so a session can take a moment to appear there.

pub mod counter;
pub mod keys;
mod table;

use std::collections::HashMap;
use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::error::{DisplayErrorContext, SdkError};
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{
    AttributeValue, CancellationReason, Delete, DeleteRequest, Put, ReturnValue,
    ReturnValuesOnConditionCheckFailure, TransactWriteItem, Update, WriteRequest,
};
use knowledge_core::clock::Timestamp;
use knowledge_core::domain::{
    AuditEntry, Event, IntegrationConfig, MEMBER_DATA_LIMIT, Member, MemberData, Org, Session,
    SessionSummary, TurnProgress, Usage,
};
use knowledge_core::ids::{OrgId, RunId, SessionId, SessionKey, UserId};
use knowledge_core::ports::{Charge, RateWindow, Store, StoreError, UsageRefused};

pub use crate::counter::RequestCounter;
pub use crate::table::{TableError, config, connect, create_table_if_missing};

type Item = HashMap<String, AttributeValue>;

/// Items one BatchWriteItem request takes at most.
const BATCH: usize = 25;
/// Event keys a delete reads per page: four batches, so memory stays bounded however long the
/// log is.
const DELETE_PAGE: i32 = 100;
/// Rounds of retrying a batch's unprocessed items before giving up.
const BATCH_ROUNDS: u32 = 8;

/// The storage port on a DynamoDB table. Cheap to clone.
#[derive(Clone, Debug)]
pub struct DynamoStore {
    client: Client,
    table: String,
}

fn backend<E, R>(e: SdkError<E, R>) -> StoreError
where
    E: std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug + Send + Sync + 'static,
{
    StoreError::Backend(DisplayErrorContext(e).to_string())
}

fn s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}

fn n(v: impl ToString) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

fn key_item((pk, sk): (String, String)) -> Item {
    HashMap::from([(keys::PK.to_owned(), s(pk)), (keys::SK.to_owned(), s(sk))])
}

fn corrupt(what: &str) -> StoreError {
    StoreError::Backend(format!("stored item has a missing or malformed {what}"))
}

fn get_s<'a>(item: &'a Item, name: &str) -> Result<&'a str, StoreError> {
    match item.get(name) {
        Some(AttributeValue::S(v)) => Ok(v),
        _ => Err(corrupt(name)),
    }
}

fn get_n<T: std::str::FromStr>(item: &Item, name: &str) -> Result<T, StoreError> {
    match item.get(name) {
        Some(AttributeValue::N(v)) => v.parse().map_err(|_| corrupt(name)),
        _ => Err(corrupt(name)),
    }
}

fn get_n_or_zero(item: &Item, name: &str) -> Result<u64, StoreError> {
    if item.contains_key(name) {
        get_n(item, name)
    } else {
        Ok(0)
    }
}

fn get_json<T: serde::de::DeserializeOwned>(item: &Item, name: &str) -> Result<T, StoreError> {
    serde_json::from_str(get_s(item, name)?).map_err(|_| corrupt(name))
}

fn to_json(v: &impl serde::Serialize) -> Result<String, StoreError> {
    serde_json::to_string(v).map_err(|e| StoreError::Backend(e.to_string()))
}

fn session_item(session: &Session) -> Result<Item, StoreError> {
    let mut item = key_item(keys::session(&session.key));
    item.insert("title".into(), s(&session.title));
    item.insert("createdAt".into(), n(session.created_at.millis()));
    item.insert("updatedAt".into(), n(session.updated_at.millis()));
    if let Some(at) = session.cancelled_at {
        item.insert("cancelledAt".into(), n(at.millis()));
    }
    if let Some(run) = &session.run_id {
        item.insert("runId".into(), s(run.as_str()));
    }
    item.insert("deleting".into(), AttributeValue::Bool(session.deleting));
    item.insert("pending".into(), s(to_json(&session.pending)?));
    if let Some(turn) = &session.turn {
        item.insert("turn".into(), s(to_json(turn)?));
    }
    item.insert("nextSeq".into(), n(session.next_seq));
    item.insert("version".into(), n(session.version));
    // A session being deleted leaves the user's list at once, for the list of deletes to
    // finish.
    let (gpk, gsk) = if session.deleting {
        keys::deleting_listing(&session.key)
    } else {
        keys::session_listing(&session.key, session.updated_at)
    };
    item.insert(keys::GSI1PK.into(), s(gpk));
    item.insert(keys::GSI1SK.into(), s(gsk));
    Ok(item)
}

fn session_from(key: &SessionKey, item: &Item) -> Result<Session, StoreError> {
    let optional_n = |name: &str| -> Result<Option<i64>, StoreError> {
        item.contains_key(name)
            .then(|| get_n(item, name))
            .transpose()
    };
    Ok(Session {
        key: key.clone(),
        title: get_s(item, "title")?.to_owned(),
        created_at: Timestamp(get_n(item, "createdAt")?),
        updated_at: Timestamp(get_n(item, "updatedAt")?),
        cancelled_at: optional_n("cancelledAt")?.map(Timestamp),
        run_id: match item.get("runId") {
            None => None,
            Some(_) => Some(RunId::parse(get_s(item, "runId")?).map_err(|_| corrupt("runId"))?),
        },
        deleting: matches!(item.get("deleting"), Some(AttributeValue::Bool(true))),
        pending: get_json(item, "pending")?,
        turn: match item.get("turn") {
            None => None,
            Some(_) => Some(get_json::<TurnProgress>(item, "turn")?),
        },
        next_seq: get_n(item, "nextSeq")?,
        version: get_n(item, "version")?,
    })
}

fn event_item(key: &SessionKey, e: &Event) -> Result<Item, StoreError> {
    let mut item = key_item(keys::event(key, e.seq));
    item.insert("seq".into(), n(e.seq));
    item.insert("kind".into(), s(e.kind.as_str()));
    item.insert("payload".into(), s(to_json(&e.payload)?));
    item.insert("occurredAt".into(), n(e.occurred_at.millis()));
    Ok(item)
}

fn event_from(item: &Item) -> Result<Event, StoreError> {
    Ok(Event {
        seq: get_n(item, "seq")?,
        kind: get_s(item, "kind")?.parse().map_err(|_| corrupt("kind"))?,
        payload: get_json(item, "payload")?,
        occurred_at: Timestamp(get_n(item, "occurredAt")?),
    })
}

/// The organisation item's attribute holding its SCIM token hash.
const SCIM_TOKEN: &str = "scimTokenSha256";
/// Reads and retries of a member removal that lost a race before it fails.
const REMOVE_ATTEMPTS: usize = 16;

/// A member item: the record as JSON in `doc`, and its version as an attribute that conditions
/// can read (the one in `doc` is ignored).
fn member_item(member: &Member) -> Result<Item, StoreError> {
    let mut item = key_item(keys::member(&member.org, &member.user));
    item.insert("doc".into(), s(to_json(member)?));
    item.insert("version".into(), n(member.version));
    Ok(item)
}

fn member_from(item: &Item) -> Result<Member, StoreError> {
    let mut member: Member = get_json(item, "doc")?;
    member.version = get_n(item, "version")?;
    Ok(member)
}

fn user_name_item(member: &Member, key: &str) -> Item {
    let mut item = key_item(keys::user_name(&member.org, key));
    item.insert("user".into(), s(member.user.as_str()));
    item
}

fn audit_item(a: &AuditEntry) -> Item {
    let mut item = key_item(keys::audit(&a.org, a.at, &a.id));
    item.insert("at".into(), n(a.at.millis()));
    item.insert("id".into(), s(&a.id));
    item.insert("actor".into(), s(a.actor.as_str()));
    item.insert("action".into(), s(a.action.as_str()));
    item.insert("target".into(), s(&a.target));
    item
}

fn usage_from(item: &Item) -> Result<Usage, StoreError> {
    Ok(Usage {
        queries: get_n_or_zero(item, "queries")?,
        cost_micros: get_n_or_zero(item, "costMicros")?,
    })
}

fn built<T>(r: Result<T, aws_sdk_dynamodb::error::BuildError>) -> Result<T, StoreError> {
    r.map_err(|e| StoreError::Backend(e.to_string()))
}

fn reason_code(r: &CancellationReason) -> &str {
    r.code().unwrap_or("None")
}

/// Why a transaction was not applied. Every transaction puts the record it is about first, so
/// the first item's condition is the record's (exists, not exists, or its version).
enum TransactError {
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
    /// Classifies a cancellation by its reasons, one per item in order (code `None` for the
    /// items that were fine).
    fn cancelled(reasons: &[CancellationReason], error: StoreError) -> Self {
        let failed = |code: &str| reasons.iter().any(|r| reason_code(r) == code);
        match reasons.first() {
            Some(first) if reason_code(first) == "ConditionalCheckFailed" => Self::FirstCondition {
                stored: first.item().is_some_and(|i| !i.is_empty()),
            },
            _ if failed("ConditionalCheckFailed") => Self::OtherCondition(error),
            _ if failed("TransactionConflict") => Self::Contended,
            _ => Self::Backend(error),
        }
    }
}

impl DynamoStore {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self {
            client,
            table: table.into(),
        }
    }

    pub fn table(&self) -> &str {
        &self.table
    }

    /// A transaction item that writes `item` only where nothing is stored yet.
    fn put_new(&self, item: Item) -> Result<TransactWriteItem, StoreError> {
        let put = Put::builder()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression("attribute_not_exists(#pk)")
            .expression_attribute_names("#pk", keys::PK);
        Ok(TransactWriteItem::builder()
            .put(built(put.build())?)
            .build())
    }

    /// A transaction item that replaces a record only at `expected` version, returning the
    /// stored record when the condition fails.
    fn put_versioned(&self, item: Item, expected: u64) -> Result<TransactWriteItem, StoreError> {
        let put = Put::builder()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression("#v = :expected")
            .expression_attribute_names("#v", "version")
            .expression_attribute_values(":expected", n(expected))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
        Ok(TransactWriteItem::builder()
            .put(built(put.build())?)
            .build())
    }

    /// The puts of new events. The session's version check already makes their numbers free;
    /// the condition keeps a bug from overwriting an event all the same.
    fn event_puts(
        &self,
        key: &SessionKey,
        events: &[Event],
    ) -> Result<Vec<TransactWriteItem>, StoreError> {
        events
            .iter()
            .map(|e| self.put_new(event_item(key, e)?))
            .collect()
    }

    /// A transaction item that deletes whatever is stored under `key`.
    fn delete(&self, key: (String, String)) -> Result<TransactWriteItem, StoreError> {
        let delete = Delete::builder()
            .table_name(&self.table)
            .set_key(Some(key_item(key)));
        Ok(TransactWriteItem::builder()
            .delete(built(delete.build())?)
            .build())
    }

    /// The keys of the member's data items.
    async fn member_data_keys(
        &self,
        org: &OrgId,
        user: &UserId,
    ) -> Result<Vec<(String, String)>, StoreError> {
        self.partition(keys::member_data_partition(org, user), None)
            .await?
            .iter()
            .map(|item| {
                Ok((
                    get_s(item, keys::PK)?.to_owned(),
                    get_s(item, keys::SK)?.to_owned(),
                ))
            })
            .collect()
    }

    /// The items of a partition, strongly consistent: all of them in key order, or the newest
    /// `newest` in reverse key order.
    async fn partition(&self, pk: String, newest: Option<usize>) -> Result<Vec<Item>, StoreError> {
        self.query_items(pk, None, newest).await
    }

    /// The items of partition `pk` whose sort key starts with `sk_prefix` (all when `None`),
    /// strongly consistent, read page by page: all of them in key order, or the newest
    /// `newest` in reverse key order.
    async fn query_items(
        &self,
        pk: String,
        sk_prefix: Option<&str>,
        newest: Option<usize>,
    ) -> Result<Vec<Item>, StoreError> {
        let mut items = Vec::new();
        let mut start = None;
        loop {
            let mut query = self
                .client
                .query()
                .table_name(&self.table)
                .key_condition_expression("#pk = :pk")
                .expression_attribute_names("#pk", keys::PK)
                .expression_attribute_values(":pk", s(&pk));
            if let Some(prefix) = sk_prefix {
                query = query
                    .key_condition_expression("#pk = :pk AND begins_with(#sk, :prefix)")
                    .expression_attribute_names("#sk", keys::SK)
                    .expression_attribute_values(":prefix", s(prefix));
            }
            let out = query
                .consistent_read(true)
                .scan_index_forward(newest.is_none())
                .set_limit(newest.map(|l| i32::try_from(l - items.len()).unwrap_or(i32::MAX)))
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(backend)?;
            items.extend(out.items.unwrap_or_default());
            match out.last_evaluated_key {
                Some(k) if newest.is_none_or(|l| items.len() < l) => start = Some(k),
                _ => return Ok(items),
            }
        }
    }

    async fn transact(&self, writes: Vec<TransactWriteItem>) -> Result<(), TransactError> {
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
                    let reasons = c.cancellation_reasons().to_vec();
                    Err(TransactError::cancelled(&reasons, backend(e)))
                }
                _ => Err(TransactError::Backend(backend(e))),
            },
        }
    }

    /// A query of at most `limit` items of GSI1's partition `pk` (eventually consistent, as
    /// every index read is).
    fn index_query(
        &self,
        pk: String,
        limit: usize,
    ) -> aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder {
        self.client
            .query()
            .table_name(&self.table)
            .index_name(keys::GSI1)
            .key_condition_expression("#pk = :pk")
            .expression_attribute_names("#pk", keys::GSI1PK)
            .expression_attribute_values(":pk", s(pk))
            .limit(i32::try_from(limit).unwrap_or(i32::MAX))
    }

    /// A strongly consistent query of the session's events numbered above `after`, in order.
    fn events_query(
        &self,
        key: &SessionKey,
        after: u64,
    ) -> aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder {
        let (from, to) = keys::events_after(after);
        self.client
            .query()
            .table_name(&self.table)
            .key_condition_expression("#pk = :pk AND #sk BETWEEN :from AND :to")
            .expression_attribute_names("#pk", keys::PK)
            .expression_attribute_names("#sk", keys::SK)
            .expression_attribute_values(":pk", s(keys::session_partition(key)))
            .expression_attribute_values(":from", s(from))
            .expression_attribute_values(":to", s(to))
            .consistent_read(true)
    }

    async fn get(&self, key: (String, String)) -> Result<Option<Item>, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(key_item(key)))
            .consistent_read(true)
            .send()
            .await
            .map_err(backend)?;
        Ok(out.item)
    }

    /// How many session items and event items the session's partition holds; tests use it to
    /// show that a delete leaves nothing behind.
    pub async fn rows_for(&self, key: &SessionKey) -> Result<(u64, u64), StoreError> {
        let (mut sessions, mut events) = (0, 0);
        let mut start = None;
        loop {
            let out = self
                .client
                .query()
                .table_name(&self.table)
                .key_condition_expression("#pk = :pk")
                .expression_attribute_names("#pk", keys::PK)
                .expression_attribute_values(":pk", s(keys::session_partition(key)))
                .projection_expression("#sk")
                .expression_attribute_names("#sk", keys::SK)
                .consistent_read(true)
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(backend)?;
            for item in out.items() {
                if keys::is_event_sort(get_s(item, keys::SK)?) {
                    events += 1;
                } else {
                    sessions += 1;
                }
            }
            match out.last_evaluated_key {
                Some(k) => start = Some(k),
                None => return Ok((sessions, events)),
            }
        }
    }

    /// Deletes `keys` in batches of [`BATCH`], retrying unprocessed items with backoff.
    async fn delete_all(&self, mut items: Vec<Item>) -> Result<(), StoreError> {
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
                if round == BATCH_ROUNDS {
                    return Err(StoreError::Backend(format!(
                        "{} deletes still unprocessed after {BATCH_ROUNDS} rounds",
                        requests.len()
                    )));
                }
                if round > 0 {
                    tokio::time::sleep(Duration::from_millis(25 << round.min(6))).await;
                }
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
}

#[async_trait]
impl Store for DynamoStore {
    async fn put_org(&self, org: &Org) -> Result<(), StoreError> {
        // An update, not a put: the SCIM token hash beside `doc` stays.
        self.client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(key_item(keys::org(&org.id))))
            .update_expression("SET doc = :doc")
            .expression_attribute_values(":doc", s(to_json(org)?))
            .send()
            .await
            .map_err(backend)?;
        Ok(())
    }

    async fn get_org(&self, org: &OrgId) -> Result<Option<Org>, StoreError> {
        let Some(item) = self.get(keys::org(org)).await? else {
            return Ok(None);
        };
        let mut org: Org = get_json(&item, "doc")?;
        org.scim_token_sha256 = match item.get(SCIM_TOKEN) {
            None => None,
            Some(_) => Some(get_s(&item, SCIM_TOKEN)?.to_owned()),
        };
        Ok(Some(org))
    }

    async fn set_scim_token(
        &self,
        org: &OrgId,
        sha256: &str,
        audit: &AuditEntry,
    ) -> Result<(), StoreError> {
        let update = Update::builder()
            .table_name(&self.table)
            .set_key(Some(key_item(keys::org(org))))
            .update_expression("SET #t = :h")
            .condition_expression("attribute_exists(#pk)")
            .expression_attribute_names("#t", SCIM_TOKEN)
            .expression_attribute_names("#pk", keys::PK)
            .expression_attribute_values(":h", s(sha256));
        let writes = vec![
            TransactWriteItem::builder()
                .update(built(update.build())?)
                .build(),
            self.put_new(audit_item(audit))?,
        ];
        match self.transact(writes).await {
            Ok(()) => Ok(()),
            Err(TransactError::FirstCondition { .. }) => Err(StoreError::Gone),
            Err(TransactError::Contended) => Err(StoreError::Conflict),
            Err(TransactError::OtherCondition(e) | TransactError::Backend(e)) => Err(e),
        }
    }

    async fn create_member(&self, member: &Member, audit: &AuditEntry) -> Result<(), StoreError> {
        let mut writes = vec![self.put_new(member_item(member)?)?];
        if let Some(profile) = &member.profile {
            writes.push(self.put_new(user_name_item(member, &profile.user_name_key()))?);
        }
        writes.push(self.put_new(audit_item(audit))?);
        match self.transact(writes).await {
            Ok(()) => Ok(()),
            Err(TransactError::FirstCondition { .. } | TransactError::OtherCondition(_)) => {
                Err(StoreError::AlreadyExists)
            }
            Err(TransactError::Contended) => Err(StoreError::Conflict),
            Err(TransactError::Backend(e)) => Err(e),
        }
    }

    async fn get_member(&self, org: &OrgId, user: &UserId) -> Result<Option<Member>, StoreError> {
        self.get(keys::member(org, user))
            .await?
            .map(|item| member_from(&item))
            .transpose()
    }

    async fn find_member_by_user_name(
        &self,
        org: &OrgId,
        key: &str,
    ) -> Result<Option<Member>, StoreError> {
        let Some(claim) = self.get(keys::user_name(org, key)).await? else {
            return Ok(None);
        };
        let user = UserId::parse(get_s(&claim, "user")?).map_err(|_| corrupt("user"))?;
        // The claim and the member change in one transaction; the check only guards a bug.
        Ok(self
            .get_member(org, &user)
            .await?
            .filter(|m| m.profile.as_ref().is_some_and(|p| p.user_name_key() == key)))
    }

    async fn list_members(&self, org: &OrgId) -> Result<Vec<Member>, StoreError> {
        let (pk, prefix) = keys::members(org);
        self.query_items(pk, Some(prefix), None)
            .await?
            .iter()
            .map(member_from)
            .collect()
    }

    async fn update_member(
        &self,
        previous: &Member,
        next: &Member,
        audit: &AuditEntry,
    ) -> Result<(), StoreError> {
        let mut writes = vec![self.put_versioned(member_item(next)?, previous.version)?];
        let old_key = previous.profile.as_ref().map(|p| p.user_name_key());
        let new_key = next.profile.as_ref().map(|p| p.user_name_key());
        if old_key != new_key {
            if let Some(old) = &old_key {
                writes.push(self.delete(keys::user_name(&previous.org, old))?);
            }
            if let Some(new) = &new_key {
                writes.push(self.put_new(user_name_item(next, new))?);
            }
        }
        writes.push(self.put_new(audit_item(audit))?);
        match self.transact(writes).await {
            Ok(()) => Ok(()),
            Err(TransactError::FirstCondition { stored: true } | TransactError::Contended) => {
                Err(StoreError::Conflict)
            }
            Err(TransactError::FirstCondition { stored: false }) => Err(StoreError::Gone),
            // The new claim: another member has the name.
            Err(TransactError::OtherCondition(_)) => Err(StoreError::AlreadyExists),
            Err(TransactError::Backend(e)) => Err(e),
        }
    }

    async fn remove_member(
        &self,
        org: &OrgId,
        user: &UserId,
        audit: &AuditEntry,
    ) -> Result<bool, StoreError> {
        // Read the member and its data, then delete all of it on the condition that the
        // member's version has not moved: a data item written meanwhile moves it, so nothing
        // can be left behind. A lost race reads again.
        for _ in 0..REMOVE_ATTEMPTS {
            let Some(member) = self.get_member(org, user).await? else {
                return Ok(false);
            };
            let data = self.member_data_keys(org, user).await?;
            if data.len() > MEMBER_DATA_LIMIT {
                return Err(StoreError::Backend(format!(
                    "member holds {} data items, more than the {MEMBER_DATA_LIMIT} one removal takes",
                    data.len()
                )));
            }
            let delete = Delete::builder()
                .table_name(&self.table)
                .set_key(Some(key_item(keys::member(org, user))))
                .condition_expression("#v = :expected")
                .expression_attribute_names("#v", "version")
                .expression_attribute_values(":expected", n(member.version));
            let mut writes = vec![
                TransactWriteItem::builder()
                    .delete(built(delete.build())?)
                    .build(),
            ];
            if let Some(profile) = &member.profile {
                writes.push(self.delete(keys::user_name(org, &profile.user_name_key()))?);
            }
            for key in data {
                writes.push(self.delete(key)?);
            }
            writes.push(self.put_new(audit_item(audit))?);
            match self.transact(writes).await {
                Ok(()) => return Ok(true),
                Err(TransactError::Backend(e)) => return Err(e),
                Err(_) => {}
            }
        }
        Err(StoreError::Conflict)
    }

    async fn put_member_data(
        &self,
        org: &OrgId,
        user: &UserId,
        data: &MemberData,
    ) -> Result<(), StoreError> {
        let bump = Update::builder()
            .table_name(&self.table)
            .set_key(Some(key_item(keys::member(org, user))))
            .update_expression("ADD #v :one")
            .condition_expression("attribute_exists(#pk)")
            .expression_attribute_names("#v", "version")
            .expression_attribute_names("#pk", keys::PK)
            .expression_attribute_values(":one", n(1));
        let mut item = key_item(keys::member_data(org, user, data.kind.as_str(), &data.name));
        item.insert("value".into(), s(&data.value));
        let put = Put::builder().table_name(&self.table).set_item(Some(item));
        let writes = vec![
            TransactWriteItem::builder()
                .update(built(bump.build())?)
                .build(),
            TransactWriteItem::builder()
                .put(built(put.build())?)
                .build(),
        ];
        match self.transact(writes).await {
            Ok(()) => Ok(()),
            Err(TransactError::FirstCondition { .. }) => Err(StoreError::Gone),
            Err(TransactError::Contended) => Err(StoreError::Conflict),
            Err(TransactError::OtherCondition(e) | TransactError::Backend(e)) => Err(e),
        }
    }

    async fn list_member_data(
        &self,
        org: &OrgId,
        user: &UserId,
    ) -> Result<Vec<MemberData>, StoreError> {
        let items = self
            .partition(keys::member_data_partition(org, user), None)
            .await?;
        let mut data = items
            .iter()
            .map(|item| {
                let sk = get_s(item, keys::SK)?;
                let (kind, name) = sk.split_once('#').ok_or_else(|| corrupt(keys::SK))?;
                Ok(MemberData {
                    kind: kind.parse().map_err(|_| corrupt(keys::SK))?,
                    name: name.to_owned(),
                    value: get_s(item, "value")?.to_owned(),
                })
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        data.sort_by(|a, b| (a.kind, &a.name).cmp(&(b.kind, &b.name)));
        Ok(data)
    }

    async fn put_integration(
        &self,
        org: &OrgId,
        integration: &IntegrationConfig,
        audit: &AuditEntry,
    ) -> Result<(), StoreError> {
        let mut item = key_item(keys::integration(org, &integration.name));
        let config =
            serde_json::to_string(integration).map_err(|e| StoreError::Backend(e.to_string()))?;
        item.insert("config".into(), s(&config));
        let put = Put::builder().table_name(&self.table).set_item(Some(item));
        let writes = vec![
            TransactWriteItem::builder()
                .put(built(put.build())?)
                .build(),
            self.put_new(audit_item(audit))?,
        ];
        match self.transact(writes).await {
            Ok(()) => Ok(()),
            Err(TransactError::Contended) => Err(StoreError::Conflict),
            Err(TransactError::FirstCondition { .. }) => Err(StoreError::Backend(
                "an unconditional put was refused".into(),
            )),
            Err(TransactError::OtherCondition(e) | TransactError::Backend(e)) => Err(e),
        }
    }

    async fn list_integrations(&self, org: &OrgId) -> Result<Vec<IntegrationConfig>, StoreError> {
        self.partition(keys::integrations_partition(org), None)
            .await?
            .iter()
            .map(|item| serde_json::from_str(get_s(item, "config")?).map_err(|_| corrupt("config")))
            .collect()
    }

    async fn remove_integration(
        &self,
        org: &OrgId,
        name: &str,
        audit: &AuditEntry,
    ) -> Result<bool, StoreError> {
        let delete = Delete::builder()
            .table_name(&self.table)
            .set_key(Some(key_item(keys::integration(org, name))))
            .condition_expression("attribute_exists(#pk)")
            .expression_attribute_names("#pk", keys::PK);
        let writes = vec![
            TransactWriteItem::builder()
                .delete(built(delete.build())?)
                .build(),
            self.put_new(audit_item(audit))?,
        ];
        match self.transact(writes).await {
            Ok(()) => Ok(true),
            Err(TransactError::FirstCondition { .. }) => Ok(false),
            Err(TransactError::Contended) => Err(StoreError::Conflict),
            Err(TransactError::OtherCondition(e) | TransactError::Backend(e)) => Err(e),
        }
    }

    async fn list_audit(&self, org: &OrgId, limit: usize) -> Result<Vec<AuditEntry>, StoreError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let items = self
            .partition(keys::audit_partition(org), Some(limit))
            .await?;
        items
            .iter()
            .map(|item| {
                Ok(AuditEntry {
                    org: org.clone(),
                    at: Timestamp(get_n(item, "at")?),
                    id: get_s(item, "id")?.to_owned(),
                    actor: get_s(item, "actor")?
                        .parse()
                        .map_err(|_| corrupt("actor"))?,
                    action: get_s(item, "action")?
                        .parse()
                        .map_err(|_| corrupt("action"))?,
                    target: get_s(item, "target")?.to_owned(),
                })
            })
            .collect()
    }

    async fn create_session(&self, session: &Session, events: &[Event]) -> Result<(), StoreError> {
        let mut writes = vec![self.put_new(session_item(session)?)?];
        writes.extend(self.event_puts(&session.key, events)?);
        match self.transact(writes).await {
            Ok(()) => Ok(()),
            Err(TransactError::FirstCondition { .. }) => Err(StoreError::AlreadyExists),
            Err(TransactError::Contended) => Err(StoreError::Conflict),
            Err(TransactError::OtherCondition(e) | TransactError::Backend(e)) => Err(e),
        }
    }

    async fn get_session(&self, key: &SessionKey) -> Result<Option<Session>, StoreError> {
        self.get(keys::session(key))
            .await?
            .map(|item| session_from(key, &item))
            .transpose()
    }

    async fn commit_session(
        &self,
        session: &Session,
        expected_version: u64,
        events: &[Event],
        charge: Option<&Charge>,
    ) -> Result<(), StoreError> {
        let mut writes = vec![self.put_versioned(session_item(session)?, expected_version)?];
        writes.extend(self.event_puts(&session.key, events)?);
        if let Some(charge) = charge {
            writes.push(
                TransactWriteItem::builder()
                    .update(built(
                        Update::builder()
                            .table_name(&self.table)
                            .set_key(Some(key_item(keys::usage(&session.key.org, &charge.month))))
                            .update_expression("ADD costMicros :m")
                            .expression_attribute_values(":m", n(charge.micros))
                            .build(),
                    )?)
                    .build(),
            );
        }
        match self.transact(writes).await {
            Ok(()) => Ok(()),
            // The old record comes back when there was one: then only its version moved.
            Err(TransactError::FirstCondition { stored: true }) => Err(StoreError::Conflict),
            Err(TransactError::FirstCondition { stored: false }) => Err(StoreError::Gone),
            // A concurrent transaction on one of the items, or (only through a bug) an event
            // number taken: re-read and try again.
            Err(TransactError::Contended | TransactError::OtherCondition(_)) => {
                Err(StoreError::Conflict)
            }
            Err(TransactError::Backend(e)) => Err(e),
        }
    }

    async fn list_events(
        &self,
        key: &SessionKey,
        after: u64,
        limit: usize,
    ) -> Result<Vec<Event>, StoreError> {
        let out = self
            .events_query(key, after)
            .limit(i32::try_from(limit).unwrap_or(i32::MAX))
            .send()
            .await
            .map_err(backend)?;
        out.items().iter().map(event_from).collect()
    }

    async fn list_sessions(
        &self,
        user: &UserId,
        org: &OrgId,
        limit: usize,
    ) -> Result<Vec<SessionSummary>, StoreError> {
        let out = self
            .index_query(keys::user_org(user, org), limit)
            .scan_index_forward(false)
            .send()
            .await
            .map_err(backend)?;
        out.items()
            .iter()
            .map(|item| {
                let listing = get_s(item, keys::GSI1SK)?;
                let id = listing
                    .rsplit('#')
                    .next()
                    .and_then(|id| SessionId::parse(id).ok())
                    .ok_or_else(|| corrupt(keys::GSI1SK))?;
                Ok(SessionSummary {
                    id,
                    title: get_s(item, "title")?.to_owned(),
                    updated_at: Timestamp(get_n(item, "updatedAt")?),
                })
            })
            .collect()
    }

    async fn delete_session(&self, key: &SessionKey) -> Result<bool, StoreError> {
        // Events first, page by page; the session item last, so that a delete cut short
        // leaves a session that is still `deleting` and can be deleted again.
        let mut start = None;
        loop {
            let out = self
                .events_query(key, 0)
                .projection_expression("#pk, #sk")
                .limit(DELETE_PAGE)
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(backend)?;
            let page: Vec<Item> = out.items.unwrap_or_default();
            self.delete_all(page).await?;
            match out.last_evaluated_key {
                Some(k) => start = Some(k),
                None => break,
            }
        }
        let out = self
            .client
            .delete_item()
            .table_name(&self.table)
            .set_key(Some(key_item(keys::session(key))))
            .return_values(ReturnValue::AllOld)
            .send()
            .await
            .map_err(backend)?;
        Ok(out.attributes.is_some_and(|a| !a.is_empty()))
    }

    async fn deleting_sessions(&self, limit: usize) -> Result<Vec<SessionKey>, StoreError> {
        let out = self
            .index_query(keys::DELETING.to_owned(), limit)
            .send()
            .await
            .map_err(backend)?;
        // An entry that does not name a session is skipped (and logged): it must not keep
        // every other unfinished delete from being finished.
        Ok(out
            .items()
            .iter()
            .filter_map(|item| {
                let key = get_s(item, keys::GSI1SK)
                    .ok()
                    .and_then(keys::session_key_of);
                if key.is_none() {
                    tracing::warn!("an entry of the DELETING index does not name a session");
                }
                key
            })
            .collect())
    }

    async fn get_rate_window(&self, key: &str) -> Result<RateWindow, StoreError> {
        match self.get(keys::rate_window(key)).await? {
            None => Ok(RateWindow::default()),
            Some(item) => Ok(RateWindow {
                hits: get_json(&item, "hits")?,
                version: get_n(&item, "version")?,
            }),
        }
    }

    async fn put_rate_window(
        &self,
        key: &str,
        hits: &[Timestamp],
        expected_version: u64,
        expires_at: Timestamp,
    ) -> Result<(), StoreError> {
        let mut item = key_item(keys::rate_window(key));
        item.insert("hits".into(), s(to_json(&hits)?));
        item.insert("version".into(), n(expected_version + 1));
        // DynamoDB's TTL reads epoch seconds; round up so the item outlives its last hit.
        item.insert(
            keys::TTL.into(),
            n((expires_at.millis() + 999).div_euclid(1000)),
        );
        let request = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item));
        let request = if expected_version == 0 {
            request
                .condition_expression("attribute_not_exists(#pk)")
                .expression_attribute_names("#pk", keys::PK)
        } else {
            request
                .condition_expression("#v = :expected")
                .expression_attribute_names("#v", "version")
                .expression_attribute_values(":expected", n(expected_version))
        };
        match request.send().await {
            Ok(_) => Ok(()),
            Err(e)
                if e.as_service_error()
                    .is_some_and(|e| e.is_conditional_check_failed_exception()) =>
            {
                Err(StoreError::Conflict)
            }
            Err(e) => Err(backend(e)),
        }
    }

    async fn consume_query(
        &self,
        org: &OrgId,
        month: &str,
        quota: Option<u64>,
        cap_micros: Option<u64>,
    ) -> Result<Result<Usage, UsageRefused>, StoreError> {
        // A zero limit refuses even a month with no item yet, which the conditions below
        // (written for an item that may not exist) would let through.
        if quota == Some(0) || cap_micros == Some(0) {
            return Ok(Err(UsageRefused(self.get_usage(org, month).await?)));
        }
        let mut conditions = Vec::new();
        let mut request = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(key_item(keys::usage(org, month))))
            .update_expression("ADD queries :one")
            .expression_attribute_values(":one", n(1))
            .return_values(ReturnValue::AllNew)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
        if let Some(quota) = quota {
            conditions.push("(attribute_not_exists(queries) OR queries < :quota)");
            request = request.expression_attribute_values(":quota", n(quota));
        }
        if let Some(cap) = cap_micros {
            conditions.push("(attribute_not_exists(costMicros) OR costMicros < :cap)");
            request = request.expression_attribute_values(":cap", n(cap));
        }
        if !conditions.is_empty() {
            request = request.condition_expression(conditions.join(" AND "));
        }
        match request.send().await {
            Ok(out) => Ok(Ok(usage_from(&out.attributes.unwrap_or_default())?)),
            Err(e) => match e.as_service_error() {
                Some(UpdateItemError::ConditionalCheckFailedException(c)) => Ok(Err(UsageRefused(
                    usage_from(c.item.as_ref().unwrap_or(&HashMap::new()))?,
                ))),
                _ => Err(backend(e)),
            },
        }
    }

    async fn get_usage(&self, org: &OrgId, month: &str) -> Result<Usage, StoreError> {
        match self.get(keys::usage(org, month)).await? {
            None => Ok(Usage::default()),
            Some(item) => usage_from(&item),
        }
    }
}
