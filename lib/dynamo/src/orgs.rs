//! [`OrgStore`] on DynamoDB: one item per organisation, and the e-mail domains its single
//! sign-on claims.

use async_trait::async_trait;
use aws_sdk_dynamodb::types::{ReturnValuesOnConditionCheckFailure, TransactWriteItem, Update};
use knowledge_core::domain::{AuditEntry, Org, SsoConfig};
use knowledge_core::ids::OrgId;
use knowledge_core::ports::{StoreError, StoreResult};

use crate::codec::*;
use crate::transact::{TransactError, applied};
use crate::{DynamoStore, keys};
use knowledge_core::ports::{OrgChanges, OrgLimits, OrgStore};

/// Rounds of reading and replacing the settings before giving up under contention.
const LIMITS_ATTEMPTS: usize = 8;

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
        self.get(keys::org(org))
            .await?
            .map(|item| org_from(&item))
            .transpose()
    }

    async fn set_scim_token(
        &self, org: &OrgId, sha256: &str, audit: &AuditEntry,
    ) -> StoreResult<()> {
        let update = Update::builder()
            .table_name(&self.table)
            .set_key(Some(key_item(keys::org(org))))
            .update_expression("SET #t = :h, #at = :at")
            .condition_expression("attribute_exists(#pk)")
            .expression_attribute_names("#t", SCIM_TOKEN)
            .expression_attribute_names("#at", SCIM_TOKEN_AT)
            .expression_attribute_values(":at", n(audit.at.millis()))
            .expression_attribute_names("#pk", keys::PK)
            .expression_attribute_values(":h", s(sha256));
        let writes = vec![
            TransactWriteItem::builder()
                .update(built(update.build())?)
                .build(),
            self.put_new(audit_item(audit))?,
        ];
        match applied(self.transact(writes).await)? {
            true => Ok(()),
            false => Err(StoreError::Gone),
        }
    }

    async fn set_sso(
        &self, org: &OrgId, previous: Option<&SsoConfig>, next: &SsoConfig, audit: &AuditEntry,
    ) -> StoreResult<()> {
        // The configuration's version sits beside it as an attribute conditions can read.
        let update = Update::builder()
            .table_name(&self.table)
            .set_key(Some(key_item(keys::org(org))))
            .update_expression("SET #sso = :sso, #v = :v")
            .expression_attribute_names("#sso", SSO)
            .expression_attribute_names("#v", SSO_VERSION)
            .expression_attribute_names("#pk", keys::PK)
            .expression_attribute_values(":sso", s(to_json(next)?))
            .expression_attribute_values(":v", n(next.version))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
        let update = match previous {
            None => {
                update.condition_expression("attribute_exists(#pk) AND attribute_not_exists(#v)")
            }
            Some(p) => update
                .condition_expression("attribute_exists(#pk) AND #v = :expected")
                .expression_attribute_values(":expected", n(p.version)),
        };
        let mut writes = vec![
            TransactWriteItem::builder()
                .update(built(update.build())?)
                .build(),
        ];
        let old: &[String] = previous.map_or(&[], |p| &p.email_domains);
        for domain in old.iter().filter(|d| !next.email_domains.contains(d)) {
            writes.push(self.delete(keys::domain(domain))?);
        }
        for domain in next.email_domains.iter().filter(|d| !old.contains(d)) {
            let mut item = key_item(keys::domain(domain));
            item.insert("org".into(), s(org.as_str()));
            writes.push(self.put_new(item)?);
        }
        writes.push(self.put_new(audit_item(audit))?);
        // A domain claim taken: another organisation has it.
        self.transact(writes)
            .await
            .map_err(TransactError::of_replace)
    }

    async fn set_limits(
        &self, org: &OrgId, limits: &OrgLimits, audit: &AuditEntry,
    ) -> StoreResult<()> {
        self.change_settings(org, audit, |settings| {
            settings.monthly_query_quota = limits.quota;
            settings.cost_cap_micros = limits.cap_micros;
            settings.member_caps = limits.member;
        })
        .await
    }

    async fn change_org(
        &self, org: &OrgId, changes: &OrgChanges, audit: &AuditEntry,
    ) -> StoreResult<()> {
        self.change_settings(org, audit, |settings| changes.apply(settings))
            .await
    }

    async fn set_memory(&self, org: &OrgId, on: bool, audit: &AuditEntry) -> StoreResult<()> {
        self.change_settings(org, audit, |settings| settings.memory_off = !on)
            .await
    }

    async fn org_for_domain(&self, domain: &str) -> StoreResult<Option<OrgId>> {
        let Some(item) = self.get(keys::domain(domain)).await? else {
            return Ok(None);
        };
        OrgId::parse(get_s(&item, "org")?)
            .map(Some)
            .map_err(|_| corrupt("org"))
    }
}

impl DynamoStore {
    /// Applies `change` to the organisation's settings and writes `audit`, all or nothing.
    /// The settings are one JSON document: it is replaced on the condition that it is still
    /// the one read, so a concurrent change of another setting is read again, not lost.
    /// Errors: `Gone` (no such organisation), `Conflict` (contended throughout).
    async fn change_settings(
        &self, org: &OrgId, audit: &AuditEntry, change: impl Fn(&mut Org),
    ) -> StoreResult<()> {
        for _ in 0..LIMITS_ATTEMPTS {
            let Some(item) = self.get(keys::org(org)).await? else {
                return Err(StoreError::Gone);
            };
            let read = get_s(&item, "doc")?.to_owned();
            let mut settings: Org = get_json(&item, "doc")?;
            change(&mut settings);
            let update = Update::builder()
                .table_name(&self.table)
                .set_key(Some(key_item(keys::org(org))))
                .update_expression("SET doc = :doc")
                .condition_expression("doc = :read")
                .expression_attribute_values(":doc", s(to_json(&settings)?))
                .expression_attribute_values(":read", s(read))
                .return_values_on_condition_check_failure(
                    ReturnValuesOnConditionCheckFailure::AllOld,
                );
            let writes = vec![
                TransactWriteItem::builder()
                    .update(built(update.build())?)
                    .build(),
                self.put_new(audit_item(audit))?,
            ];
            match self.transact(writes).await {
                Ok(()) => return Ok(()),
                Err(TransactError::FirstCondition { stored: false }) => {
                    return Err(StoreError::Gone);
                }
                Err(TransactError::FirstCondition { stored: true } | TransactError::Contended) => {}
                Err(TransactError::OtherCondition(e) | TransactError::Backend(e)) => return Err(e),
            }
        }
        Err(StoreError::Conflict)
    }
}

/// The organisation an item holds: its settings document, with the SCIM token hash, its
/// creation time and the SSO configuration from their own attributes.
pub(crate) fn org_from(item: &Item) -> StoreResult<Org> {
    let mut org: Org = get_json(item, "doc")?;
    org.scim_token_sha256 = match item.get(SCIM_TOKEN) {
        None => None,
        Some(_) => Some(get_s(item, SCIM_TOKEN)?.to_owned()),
    };
    org.scim_token_created_at = match item.get(SCIM_TOKEN_AT) {
        None => None,
        Some(_) => Some(knowledge_core::clock::Timestamp(get_n(
            item,
            SCIM_TOKEN_AT,
        )?)),
    };
    org.sso = match item.get(SSO) {
        None => None,
        Some(_) => Some(get_json(item, SSO)?),
    };
    Ok(org)
}
