//! [`OrgStore`] on DynamoDB: one item per organisation.

use async_trait::async_trait;
use aws_sdk_dynamodb::types::{TransactWriteItem, Update};
use knowledge_core::domain::{AuditEntry, Org};
use knowledge_core::ids::OrgId;
use knowledge_core::ports::{StoreError, StoreResult};

use crate::codec::*;
use crate::transact::TransactError;
use crate::{DynamoStore, keys};
use knowledge_core::ports::OrgStore;

#[async_trait]
impl OrgStore for DynamoStore {
    async fn put_org(&self, org: &Org) -> StoreResult<()> {
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

    async fn get_org(&self, org: &OrgId) -> StoreResult<Option<Org>> {
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
        &self, org: &OrgId, sha256: &str, audit: &AuditEntry,
    ) -> StoreResult<()> {
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
}
