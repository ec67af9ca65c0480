//! [`LimitStore`] on DynamoDB: rate windows and monthly usage counters.

use async_trait::async_trait;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{ReturnValue, ReturnValuesOnConditionCheckFailure};
use knowledge_core::clock::Timestamp;
use knowledge_core::domain::Usage;
use knowledge_core::ids::OrgId;
use knowledge_core::ports::{RateWindow, StoreError, StoreResult, UsageRefused};
use std::collections::HashMap;

use crate::codec::*;
use crate::{DynamoStore, keys};
use knowledge_core::ports::LimitStore;

#[async_trait]
impl LimitStore for DynamoStore {
    async fn get_rate_window(&self, key: &str) -> StoreResult<RateWindow> {
        match self.get(keys::rate_window(key)).await? {
            None => Ok(RateWindow::default()),
            Some(item) => Ok(RateWindow {
                hits: get_json(&item, "hits")?,
                version: get_n(&item, "version")?,
            }),
        }
    }

    async fn put_rate_window(
        &self, key: &str, hits: &[Timestamp], expected_version: u64, expires_at: Timestamp,
    ) -> StoreResult<()> {
        let mut item = key_item(keys::rate_window(key));
        item.insert("hits".into(), s(to_json(&hits)?));
        item.insert("version".into(), n(expected_version + 1));
        // DynamoDB's TTL reads epoch seconds; round up so the item outlives its last hit.
        item.insert(
            keys::TTL.into(),
            n((expires_at.millis() + 999).div_euclid(1000)),
        );
        let request = self.client.put_item().set_item(Some(item));
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
        match self.put_checked(request).await? {
            true => Ok(()),
            false => Err(StoreError::Conflict),
        }
    }

    async fn consume_query(
        &self, org: &OrgId, month: &str, quota: Option<u64>, cap_micros: Option<u64>,
    ) -> StoreResult<Result<Usage, UsageRefused>> {
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

    async fn get_usage(&self, org: &OrgId, month: &str) -> StoreResult<Usage> {
        match self.get(keys::usage(org, month)).await? {
            None => Ok(Usage::default()),
            Some(item) => usage_from(&item),
        }
    }
}
