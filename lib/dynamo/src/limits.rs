//! [`LimitStore`] on DynamoDB: rate windows and monthly usage counters.

use async_trait::async_trait;
use aws_sdk_dynamodb::types::Put;
use knowledge_core::domain::Usage;
use knowledge_core::ids::OrgId;
use knowledge_core::ports::{RateUpdate, RateWindow, StoreError, StoreResult};

use crate::codec::*;
use crate::{DynamoStore, keys};
use knowledge_core::ports::LimitStore;

#[async_trait]
impl LimitStore for DynamoStore {
    async fn get_rate_window(&self, key: &str) -> StoreResult<RateWindow> {
        match self.get(keys::rate_window(key)).await? {
            None => Ok(RateWindow::default()),
            Some(item) => rate_window_from(&item),
        }
    }

    async fn put_rate_window(&self, update: RateUpdate<'_>) -> StoreResult<()> {
        let put = self.rate_window_put(&update)?;
        let request = self
            .client
            .put_item()
            .set_item(Some(put.item))
            .set_condition_expression(put.condition_expression)
            .set_expression_attribute_names(put.expression_attribute_names)
            .set_expression_attribute_values(put.expression_attribute_values);
        match self.put_checked(request).await? {
            true => Ok(()),
            false => Err(StoreError::Conflict),
        }
    }

    async fn get_usage(&self, org: &OrgId, month: &str) -> StoreResult<Usage> {
        match self.get(keys::usage(org, month)).await? {
            None => Ok(Usage::default()),
            Some(item) => usage_from(&item),
        }
    }
}

impl DynamoStore {
    /// The conditional put of a rate window: at version 1 where none is stored, else only at
    /// the expected version. Its time to live lets DynamoDB drop it once its last hit is out
    /// of every window.
    pub(crate) fn rate_window_put(&self, update: &RateUpdate<'_>) -> StoreResult<Put> {
        let mut item = key_item(keys::rate_window(update.key));
        item.insert("hits".into(), s(to_json(&update.hits)?));
        item.insert("version".into(), n(update.expected_version + 1));
        // DynamoDB's TTL reads epoch seconds; round up so the item outlives its last hit.
        item.insert(
            keys::TTL.into(),
            n((update.expires_at.millis() + 999).div_euclid(1000)),
        );
        let put = Put::builder().table_name(&self.table).set_item(Some(item));
        let put = if update.expected_version == 0 {
            put.condition_expression("attribute_not_exists(#pk)")
                .expression_attribute_names("#pk", keys::PK)
        } else {
            put.condition_expression("#v = :expected")
                .expression_attribute_names("#v", "version")
                .expression_attribute_values(":expected", n(update.expected_version))
        };
        built(put.build())
    }
}

pub(crate) fn rate_window_from(item: &Item) -> StoreResult<RateWindow> {
    Ok(RateWindow {
        hits: get_json(item, "hits")?,
        version: get_n(item, "version")?,
    })
}
