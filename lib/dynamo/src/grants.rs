//! [`GrantStore`] on DynamoDB: a member's grant is a member data item of kind `oauth_grant`,
//! the organisation's the `grant` attribute of its integration's item. Every swap is one
//! transaction whose first item holds the condition on the stored value.

use async_trait::async_trait;
use aws_sdk_dynamodb::types::{Delete, Put, TransactWriteItem, Update};
use knowledge_core::domain::{AuditEntry, GrantOwner, MemberDataKind};
use knowledge_core::ids::{OrgId, UserId};
use knowledge_core::ports::{GrantStore, StoreError, StoreResult};

use crate::codec::*;
use crate::transact::TransactError;
use crate::{DynamoStore, keys};

const KIND: &str = MemberDataKind::OAuthGrant.as_str();
/// The attribute of an integration's item that holds the organisation's grant.
const ORG_GRANT: &str = "grant";

/// The condition that the attribute `#g` holds `previous` (is absent, when `None`).
fn holds(previous: Option<&str>) -> &'static str {
    match previous {
        Some(_) => "#g = :previous",
        None => "attribute_not_exists(#g)",
    }
}

#[async_trait]
impl GrantStore for DynamoStore {
    async fn get_grant(
        &self, org: &OrgId, owner: &GrantOwner, integration: &str,
    ) -> StoreResult<Option<String>> {
        let (key, attribute) = match owner {
            GrantOwner::Member(user) => (keys::member_data(org, user, KIND, integration), "value"),
            GrantOwner::Organisation => (keys::integration(org, integration), ORG_GRANT),
        };
        let Some(item) = self.get(key).await? else {
            return Ok(None);
        };
        match item.get(attribute) {
            None => Ok(None),
            Some(_) => Ok(Some(get_s(&item, attribute)?.to_owned())),
        }
    }

    async fn swap_grant(
        &self, org: &OrgId, owner: &GrantOwner, integration: &str, previous: Option<&str>,
        next: Option<&str>, audit: Option<&AuditEntry>,
    ) -> StoreResult<()> {
        let user = match owner {
            GrantOwner::Member(user) => user,
            GrantOwner::Organisation => {
                return self
                    .swap_org_grant(org, integration, previous, next, audit)
                    .await;
            }
        };
        let mut writes = self.member_swap(org, user, KIND, integration, previous, next)?;
        if let Some(audit) = audit {
            writes.push(self.put_new(audit_item(audit))?);
        }
        self.transact_member_swap(writes, previous).await
    }
}

impl DynamoStore {
    /// The writes of [`knowledge_core::ports::DirectoryStore::swap_member_data`]: the member
    /// data item's put or delete, conditional on its stored value, after the member's version
    /// bump when it is created.
    pub(crate) fn member_swap(
        &self, org: &OrgId, user: &UserId, kind: &str, name: &str, previous: Option<&str>,
        next: Option<&str>,
    ) -> StoreResult<Vec<TransactWriteItem>> {
        let key = keys::member_data(org, user, kind, name);
        let mut writes = Vec::new();
        if previous.is_none() {
            // A new item in the member's data moves the member's version.
            writes.push(self.member_version_bump(org, user)?);
        }
        let mut values = Vec::new();
        if let Some(p) = previous {
            values.push((":previous", s(p)));
        }
        let write = match next {
            Some(value) => {
                let mut item = key_item(key);
                item.insert("value".into(), s(value));
                let put = Put::builder()
                    .table_name(&self.table)
                    .set_item(Some(item))
                    .condition_expression(holds(previous))
                    .expression_attribute_names("#g", "value");
                let put = values
                    .into_iter()
                    .fold(put, |b, (k, v)| b.expression_attribute_values(k, v));
                TransactWriteItem::builder()
                    .put(built(put.build())?)
                    .build()
            }
            None => {
                let delete = Delete::builder()
                    .table_name(&self.table)
                    .set_key(Some(key_item(key)))
                    .condition_expression(holds(previous))
                    .expression_attribute_names("#g", "value");
                let delete = values
                    .into_iter()
                    .fold(delete, |b, (k, v)| b.expression_attribute_values(k, v));
                TransactWriteItem::builder()
                    .delete(built(delete.build())?)
                    .build()
            }
        };
        writes.push(write);
        Ok(writes)
    }

    /// Writes a [`DynamoStore::member_swap`] (and what follows it), telling a member gone
    /// (`Gone`, when creating) from a stored value moved (`Conflict`).
    pub(crate) async fn transact_member_swap(
        &self, writes: Vec<TransactWriteItem>, previous: Option<&str>,
    ) -> StoreResult<()> {
        match self.transact(writes).await {
            Ok(()) => Ok(()),
            // A new item: the first item is the member's (gone), the second the data item.
            Err(TransactError::FirstCondition { .. }) if previous.is_none() => {
                Err(StoreError::Gone)
            }
            Err(TransactError::OtherCondition(_)) if previous.is_none() => {
                Err(StoreError::Conflict)
            }
            Err(TransactError::FirstCondition { .. } | TransactError::Contended) => {
                Err(StoreError::Conflict)
            }
            Err(TransactError::OtherCondition(e) | TransactError::Backend(e)) => Err(e),
        }
    }

    /// The organisation's grant on its integration's item.
    async fn swap_org_grant(
        &self, org: &OrgId, integration: &str, previous: Option<&str>, next: Option<&str>,
        audit: Option<&AuditEntry>,
    ) -> StoreResult<()> {
        let mut update = Update::builder()
            .table_name(&self.table)
            .set_key(Some(key_item(keys::integration(org, integration))))
            .condition_expression(format!("attribute_exists(#pk) AND {}", holds(previous)))
            .expression_attribute_names("#pk", keys::PK)
            .expression_attribute_names("#g", ORG_GRANT);
        update = match next {
            Some(value) => update
                .update_expression("SET #g = :next")
                .expression_attribute_values(":next", s(value)),
            None => update.update_expression("REMOVE #g"),
        };
        if let Some(p) = previous {
            update = update.expression_attribute_values(":previous", s(p));
        }
        let mut writes = vec![
            TransactWriteItem::builder()
                .update(built(update.build())?)
                .build(),
        ];
        if let Some(audit) = audit {
            writes.push(self.put_new(audit_item(audit))?);
        }
        match self.transact(writes).await {
            Ok(()) => Ok(()),
            // A new grant on an integration that does not exist.
            Err(TransactError::FirstCondition { .. }) if previous.is_none() => {
                match self.get(keys::integration(org, integration)).await? {
                    None => Err(StoreError::Gone),
                    Some(_) => Err(StoreError::Conflict),
                }
            }
            Err(TransactError::FirstCondition { .. } | TransactError::Contended) => {
                Err(StoreError::Conflict)
            }
            Err(TransactError::OtherCondition(e) | TransactError::Backend(e)) => Err(e),
        }
    }
}
