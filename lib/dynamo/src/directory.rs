//! [`DirectoryStore`] on DynamoDB: members, their `userName` and identity claims and data,
//! integrations and the audit log, in the organisation's partitions. A member's removal takes
//! their memberships of groups with it.

use async_trait::async_trait;
use aws_sdk_dynamodb::types::{
    Delete, Put, ReturnValuesOnConditionCheckFailure, TransactWriteItem, Update,
};
use knowledge_core::clock::Timestamp;
use knowledge_core::domain::{
    AuditCursor, AuditDetail, AuditEntry, IntegrationConfig, MEMBER_DATA_LIMIT, Member, MemberData,
    MemberDataKind, ToolRule,
};
use knowledge_core::ids::{OrgId, UserId};
use knowledge_core::ports::{StoreError, StoreResult};

use crate::codec::*;
use crate::transact::{TransactError, applied};
use crate::{DynamoStore, keys};
use knowledge_core::ports::DirectoryStore;

/// The prefix of an integration item's attributes that hold its tools' rules.
const RULE_PREFIX: &str = "rule:";

#[async_trait]
impl DirectoryStore for DynamoStore {
    async fn create_member(&self, member: &Member, audit: &AuditEntry) -> StoreResult<()> {
        let mut writes = vec![self.put_new(member_item(member)?)?];
        for key in claim_keys(member) {
            writes.push(self.put_new(claim_item(member, key))?);
        }
        writes.push(self.put_new(audit_item(audit))?);
        self.transact(writes)
            .await
            .map_err(TransactError::of_create)
    }

    async fn get_member(&self, org: &OrgId, user: &UserId) -> StoreResult<Option<Member>> {
        self.get(keys::member(org, user))
            .await?
            .map(|item| member_from(&item))
            .transpose()
    }

    async fn get_members(&self, org: &OrgId, users: &[UserId]) -> StoreResult<Vec<Member>> {
        if users.is_empty() {
            return Ok(Vec::new());
        }
        let wanted = users.iter().map(|u| keys::member(org, u)).collect();
        self.batch_get(wanted)
            .await?
            .values()
            .map(member_from)
            .collect()
    }

    async fn find_member_by_user_name(
        &self, org: &OrgId, key: &str,
    ) -> StoreResult<Option<Member>> {
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

    async fn list_members(&self, org: &OrgId) -> StoreResult<Vec<Member>> {
        let (pk, prefix) = keys::members(org);
        self.query_items(pk, Some(prefix), None)
            .await?
            .iter()
            .map(member_from)
            .collect()
    }

    async fn list_members_after(
        &self, org: &OrgId, after: Option<&UserId>, limit: usize,
    ) -> StoreResult<Vec<Member>> {
        let (pk, prefix) = keys::members(org);
        let start = after.map(|user| keys::member(org, user));
        self.query_page(pk, prefix, start, limit)
            .await?
            .iter()
            .map(member_from)
            .collect()
    }

    async fn orgs_of(&self, user: &UserId) -> StoreResult<Vec<OrgId>> {
        let mut orgs = Vec::new();
        let mut start = None;
        loop {
            let out = self
                .index_query(keys::memberships(user), 100)
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(backend)?;
            for item in out.items() {
                let org = get_s(item, keys::GSI1SK)?;
                orgs.push(OrgId::parse(org).map_err(|_| corrupt(keys::GSI1SK))?);
            }
            match out.last_evaluated_key {
                Some(key) => start = Some(key),
                None => return Ok(orgs),
            }
        }
    }

    async fn update_member(
        &self, previous: &Member, next: &Member, audit: &AuditEntry,
    ) -> StoreResult<()> {
        self.update_member_checked(previous, next, audit, None)
            .await
    }

    async fn update_member_keeping(
        &self, previous: &Member, next: &Member, audit: &AuditEntry, keeper: &Member,
    ) -> StoreResult<()> {
        self.update_member_checked(previous, next, audit, Some(keeper))
            .await
    }

    async fn remove_member_keeping(
        &self, member: &Member, audit: &AuditEntry, keeper: &Member,
    ) -> StoreResult<bool> {
        let writes = self.member_removal(member, audit).await?;
        match self.transact_keeping(writes, keeper).await {
            Ok(()) => Ok(true),
            Err(TransactError::FirstCondition { stored: false }) => Ok(false),
            Err(TransactError::Backend(e)) => Err(e),
            Err(_) => Err(StoreError::Conflict),
        }
    }

    async fn remove_member(
        &self, org: &OrgId, user: &UserId, audit: &AuditEntry,
    ) -> StoreResult<bool> {
        // Read the member and its data, then delete all of it on the condition that the
        // member's version has not moved: a data item written meanwhile moves it, so nothing
        // can be left behind. A lost race reads again.
        for _ in 0..REMOVE_ATTEMPTS {
            let Some(member) = self.get_member(org, user).await? else {
                return Ok(false);
            };
            let writes = self.member_removal(&member, audit).await?;
            match self.transact(writes).await {
                Ok(()) => return Ok(true),
                Err(TransactError::Backend(e)) => return Err(e),
                Err(_) => {}
            }
        }
        Err(StoreError::Conflict)
    }

    async fn put_member_data(
        &self, org: &OrgId, user: &UserId, data: &MemberData, audit: &AuditEntry,
    ) -> StoreResult<()> {
        let mut item = key_item(keys::member_data(org, user, data.kind.as_str(), &data.name));
        item.insert("value".into(), s(&data.value));
        let put = Put::builder().table_name(&self.table).set_item(Some(item));
        let writes = vec![
            self.member_version_bump(org, user)?,
            TransactWriteItem::builder()
                .put(built(put.build())?)
                .build(),
            self.put_new(audit_item(audit))?,
        ];
        match applied(self.transact(writes).await)? {
            true => Ok(()),
            false => Err(StoreError::Gone),
        }
    }

    async fn list_member_data(&self, org: &OrgId, user: &UserId) -> StoreResult<Vec<MemberData>> {
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
            .collect::<StoreResult<Vec<_>>>()?;
        data.sort_by(|a, b| (a.kind, &a.name).cmp(&(b.kind, &b.name)));
        Ok(data)
    }

    async fn get_member_data(
        &self, org: &OrgId, user: &UserId, kind: MemberDataKind, name: &str,
    ) -> StoreResult<Option<String>> {
        let key = keys::member_data(org, user, kind.as_str(), name);
        match self.get(key).await? {
            None => Ok(None),
            Some(item) => Ok(Some(get_s(&item, "value")?.to_owned())),
        }
    }

    async fn swap_member_data(
        &self, org: &OrgId, user: &UserId, kind: MemberDataKind, name: &str,
        previous: Option<&str>, next: Option<&str>,
    ) -> StoreResult<()> {
        let writes = self.member_swap(org, user, kind.as_str(), name, previous, next)?;
        self.transact_member_swap(writes, previous).await
    }

    async fn put_integration(
        &self, org: &OrgId, integration: &IntegrationConfig, audit: &AuditEntry,
    ) -> StoreResult<()> {
        // An update, not a put: the organisation's grant beside the settings stays.
        let config = serde_json::to_string(integration).map_err(StoreError::backend)?;
        let update = Update::builder()
            .table_name(&self.table)
            .set_key(Some(key_item(keys::integration(org, &integration.name))))
            .update_expression("SET #c = :c")
            .expression_attribute_names("#c", "config")
            .expression_attribute_values(":c", s(&config));
        let writes = vec![
            TransactWriteItem::builder()
                .update(built(update.build())?)
                .build(),
            self.put_new(audit_item(audit))?,
        ];
        match self.transact(writes).await {
            Ok(()) => Ok(()),
            Err(TransactError::Contended) => Err(StoreError::Conflict),
            Err(TransactError::FirstCondition { .. }) => {
                Err(StoreError::backend("an unconditional put was refused"))
            }
            Err(TransactError::OtherCondition(e) | TransactError::Backend(e)) => Err(e),
        }
    }

    async fn list_integrations(&self, org: &OrgId) -> StoreResult<Vec<IntegrationConfig>> {
        self.partition(keys::integrations_partition(org), None)
            .await?
            .iter()
            .map(|item| {
                let config: IntegrationConfig =
                    serde_json::from_str(get_s(item, "config")?).map_err(|_| corrupt("config"))?;
                let grant = match item.get("grant") {
                    None => None,
                    Some(_) => Some(get_s(item, "grant")?.to_owned()),
                };
                let mut tool_rules = std::collections::BTreeMap::new();
                for (attribute, value) in item {
                    if let Some(tool) = attribute.strip_prefix(RULE_PREFIX) {
                        let json = value.as_s().map_err(|_| corrupt("rule"))?;
                        let rule = serde_json::from_str(json).map_err(|_| corrupt("rule"))?;
                        tool_rules.insert(tool.to_owned(), rule);
                    }
                }
                Ok(IntegrationConfig {
                    org_grant_sealed: grant,
                    tool_rules,
                    ..config
                })
            })
            .collect()
    }

    /// Each rule is an attribute of the integration's item (`rule:<tool>`, its JSON), so that
    /// one tool's change is one attribute set or removed, on condition that the item exists.
    async fn set_tool_rule(
        &self, org: &OrgId, name: &str, tool: &str, rule: Option<ToolRule>, audit: &AuditEntry,
    ) -> StoreResult<()> {
        let update = Update::builder()
            .table_name(&self.table)
            .set_key(Some(key_item(keys::integration(org, name))))
            .condition_expression("attribute_exists(#pk)")
            .expression_attribute_names("#pk", keys::PK)
            .expression_attribute_names("#r", format!("{RULE_PREFIX}{tool}"));
        let update = match rule {
            Some(rule) => {
                let json = serde_json::to_string(&rule).map_err(StoreError::backend)?;
                update
                    .update_expression("SET #r = :r")
                    .expression_attribute_values(":r", s(&json))
            }
            None => update.update_expression("REMOVE #r"),
        };
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

    async fn remove_integration(
        &self, org: &OrgId, name: &str, audit: &AuditEntry,
    ) -> StoreResult<bool> {
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
        applied(self.transact(writes).await)
    }

    async fn list_audit(
        &self, org: &OrgId, before: Option<&AuditCursor>, limit: usize,
    ) -> StoreResult<Vec<AuditEntry>> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let items = self
            .query_before(
                keys::audit_partition(org),
                before.map(|c| keys::audit(org, c.at, &c.id).1),
                limit,
            )
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
                    by: match item.get("by") {
                        None => None,
                        Some(_) => {
                            Some(UserId::parse(get_s(item, "by")?).map_err(|_| corrupt("by"))?)
                        }
                    },
                    detail: match item.get("detail") {
                        None => AuditDetail::default(),
                        Some(_) => AuditDetail::from_text(get_s(item, "detail")?)
                            .map_err(|_| corrupt("detail"))?,
                    },
                })
            })
            .collect()
    }
}

impl DynamoStore {
    /// The transaction item that moves the member's version (`ADD version 1`), on the condition
    /// that the member exists: a write to their data with it makes a removal that listed the
    /// data before fail and read again.
    pub(crate) fn member_version_bump(
        &self, org: &OrgId, user: &UserId,
    ) -> StoreResult<TransactWriteItem> {
        let bump = Update::builder()
            .table_name(&self.table)
            .set_key(Some(key_item(keys::member(org, user))))
            .update_expression("ADD #v :one")
            .condition_expression("attribute_exists(#pk)")
            .expression_attribute_names("#v", "version")
            .expression_attribute_names("#pk", keys::PK)
            .expression_attribute_values(":one", n(1));
        Ok(TransactWriteItem::builder()
            .update(built(bump.build())?)
            .build())
    }

    /// The transaction that removes `member` at its version with its claims, its data and
    /// both sides of its memberships, and writes `audit`; the member's delete is first. An
    /// addition to a group moves the member's version, so none is left behind.
    async fn member_removal(
        &self, member: &Member, audit: &AuditEntry,
    ) -> StoreResult<Vec<TransactWriteItem>> {
        let (org, user) = (&member.org, &member.user);
        let data = self.member_data_keys(org, user).await?;
        if data.len() > MEMBER_DATA_LIMIT {
            return Err(StoreError::backend(format!(
                "member holds {} data items, more than the {MEMBER_DATA_LIMIT} one removal takes",
                data.len()
            )));
        }
        let delete = Delete::builder()
            .table_name(&self.table)
            .set_key(Some(key_item(keys::member(org, user))))
            .condition_expression("#v = :expected")
            .expression_attribute_names("#v", "version")
            .expression_attribute_values(":expected", n(member.version))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
        let mut writes = vec![
            TransactWriteItem::builder()
                .delete(built(delete.build())?)
                .build(),
        ];
        for key in claim_keys(member) {
            writes.push(self.delete(key)?);
        }
        for key in data {
            writes.push(self.delete(key)?);
        }
        let groups = self.groups_to_leave(org, user).await?;
        writes.extend(self.membership_deletes(org, user, &groups)?);
        writes.push(self.put_new(audit_item(audit))?);
        Ok(writes)
    }

    /// See [`DirectoryStore::update_member`] and [`DirectoryStore::update_member_keeping`].
    async fn update_member_checked(
        &self, previous: &Member, next: &Member, audit: &AuditEntry, keeper: Option<&Member>,
    ) -> StoreResult<()> {
        let mut writes = vec![self.put_versioned(member_item(next)?, previous.version)?];
        let (old, new) = (claim_keys(previous), claim_keys(next));
        for key in old.iter().filter(|k| !new.contains(k)) {
            writes.push(self.delete(key.clone())?);
        }
        for key in new.into_iter().filter(|k| !old.contains(k)) {
            writes.push(self.put_new(claim_item(next, key))?);
        }
        writes.push(self.put_new(audit_item(audit))?);
        let sent = match keeper {
            Some(keeper) => self.transact_keeping(writes, keeper).await,
            None => self.transact(writes).await,
        };
        // A new claim taken: another member has the name or the identity.
        sent.map_err(TransactError::of_replace)
    }
}
