//! [`LimitStore`] on DynamoDB: rate windows and monthly usage counters, per organisation and
//! per member.

use async_trait::async_trait;
use aws_sdk_dynamodb::types::Put;
use knowledge_core::domain::{MonthUsage, Usage};
use knowledge_core::ids::{OrgId, UserId};
use knowledge_core::ports::{RateUpdate, RateWindow, StoreError, StoreResult};

use crate::codec::*;
use crate::tally::month_usage_from;
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
        let request = self.put_item(self.rate_window_put(&update)?);
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

    async fn get_member_usage(
        &self, org: &OrgId, user: &UserId, month: &str,
    ) -> StoreResult<MonthUsage> {
        match self.get(keys::member_usage(org, user, month)).await? {
            None => Ok(MonthUsage::default()),
            Some(item) => month_usage_from(&item),
        }
    }

    async fn list_member_usage_after(
        &self, org: &OrgId, month: &str, after: Option<&UserId>, limit: usize,
    ) -> StoreResult<Vec<(UserId, MonthUsage)>> {
        let (pk, prefix) = keys::member_usage_prefix(org, month);
        let start = after.map(|user| keys::member_usage(org, user, month));
        let items = self.query_page(pk, &prefix, start, limit).await?;
        items.iter().map(Self::member_month).collect()
    }
}

impl DynamoStore {
    /// The member of a member usage item, with its month.
    fn member_month(item: &Item) -> StoreResult<(UserId, MonthUsage)> {
        let user = keys::member_of_usage(get_s(item, keys::SK)?)
            .and_then(|u| UserId::parse(u).ok())
            .ok_or_else(|| corrupt("member usage key"))?;
        Ok((user, month_usage_from(item)?))
    }

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
        let put = match update.expected_version {
            0 => self.new_put(item),
            // Without the stored window back: a moved window is only `Conflict`.
            expected => self
                .versioned_put(item, expected)
                .set_return_values_on_condition_check_failure(None),
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
