//! Reads: one item, a partition page by page, an index partition, a session's events.

use knowledge_core::clock::Timestamp;
use knowledge_core::ids::{OrgId, SessionKey, UserId};
use knowledge_core::ports::StoreResult;

use crate::codec::*;
use crate::{DynamoStore, keys};

impl DynamoStore {
    /// The keys of the member's data items.
    pub(crate) async fn member_data_keys(
        &self, org: &OrgId, user: &UserId,
    ) -> StoreResult<Vec<(String, String)>> {
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
    pub(crate) async fn partition(
        &self, pk: String, newest: Option<usize>,
    ) -> StoreResult<Vec<Item>> {
        self.query_items(pk, None, newest).await
    }

    /// The items of partition `pk` whose sort key starts with `sk_prefix` (all when `None`),
    /// strongly consistent, read page by page: all of them in key order, or the newest
    /// `newest` in reverse key order.
    pub(crate) async fn query_items(
        &self, pk: String, sk_prefix: Option<&str>, newest: Option<usize>,
    ) -> StoreResult<Vec<Item>> {
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
    /// At most `limit` items of partition `pk` whose sort key starts with `sk_prefix`, in key
    /// order after the item at `start` (from the first when `None`), strongly consistent.
    pub(crate) async fn query_page(
        &self, pk: String, sk_prefix: &str, start: Option<(String, String)>, limit: usize,
    ) -> StoreResult<Vec<Item>> {
        let mut items = Vec::new();
        let mut start = start.map(key_item);
        while items.len() < limit {
            let out = self
                .client
                .query()
                .table_name(&self.table)
                .key_condition_expression("#pk = :pk AND begins_with(#sk, :prefix)")
                .expression_attribute_names("#pk", keys::PK)
                .expression_attribute_names("#sk", keys::SK)
                .expression_attribute_values(":pk", s(&pk))
                .expression_attribute_values(":prefix", s(sk_prefix))
                .consistent_read(true)
                .limit(i32::try_from(limit - items.len()).unwrap_or(i32::MAX))
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(backend)?;
            items.extend(out.items.unwrap_or_default());
            match out.last_evaluated_key {
                Some(k) => start = Some(k),
                None => break,
            }
        }
        Ok(items)
    }

    /// At most `limit` items of partition `pk` whose sort key is below `before` (any when
    /// `None`), in reverse key order, strongly consistent.
    pub(crate) async fn query_before(
        &self, pk: String, before: Option<String>, limit: usize,
    ) -> StoreResult<Vec<Item>> {
        let mut items = Vec::new();
        let mut start = None;
        while items.len() < limit {
            let mut query = self
                .client
                .query()
                .table_name(&self.table)
                .key_condition_expression("#pk = :pk")
                .expression_attribute_names("#pk", keys::PK)
                .expression_attribute_values(":pk", s(&pk));
            if let Some(before) = &before {
                query = query
                    .key_condition_expression("#pk = :pk AND #sk < :before")
                    .expression_attribute_names("#sk", keys::SK)
                    .expression_attribute_values(":before", s(before));
            }
            let out = query
                .consistent_read(true)
                .scan_index_forward(false)
                .limit(i32::try_from(limit - items.len()).unwrap_or(i32::MAX))
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(backend)?;
            items.extend(out.items.unwrap_or_default());
            match out.last_evaluated_key {
                Some(k) => start = Some(k),
                None => break,
            }
        }
        Ok(items)
    }

    /// A query of at most `limit` items of GSI1's partition `pk` (eventually consistent, as
    /// every index read is).
    pub(crate) fn index_query(
        &self, pk: String, limit: usize,
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

    /// A query of at most `limit` entries of GSI2's shard `shard` whose run went stale before
    /// `before`, the stalest first (eventually consistent).
    pub(crate) fn stale_query(
        &self, shard: u32, before: Timestamp, limit: usize,
    ) -> aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder {
        self.client
            .query()
            .table_name(&self.table)
            .index_name(keys::GSI2)
            .key_condition_expression("#pk = :pk AND #sk < :before")
            .expression_attribute_names("#pk", keys::GSI2PK)
            .expression_attribute_names("#sk", keys::GSI2SK)
            .expression_attribute_values(":pk", s(keys::stale_shard(shard)))
            .expression_attribute_values(":before", s(keys::stale_before(before)))
            .limit(i32::try_from(limit).unwrap_or(i32::MAX))
    }

    /// A strongly consistent query of the session's events numbered above `after`, in order.
    pub(crate) fn events_query(
        &self, key: &SessionKey, after: u64,
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

    pub(crate) async fn get(&self, key: (String, String)) -> StoreResult<Option<Item>> {
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
}
