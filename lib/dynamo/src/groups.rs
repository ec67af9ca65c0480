//! [`GroupStore`] on DynamoDB: a group and its name's claim in the organisation's groups
//! partition, and each membership as two items, the group's side (listed by user id) and the
//! member's side (a member's groups in one query). A membership is written alone, in a
//! transaction with the member's version and the group's check; a group is never rewritten
//! for its members.

use async_trait::async_trait;
use aws_sdk_dynamodb::types::{ConditionCheck, TransactWriteItem, Update};
use knowledge_core::clock::Timestamp;
use knowledge_core::domain::{AuditEntry, GROUPS_PER_MEMBER, Group, Member};
use knowledge_core::ids::{GroupId, OrgId, UserId};
use knowledge_core::ports::{GroupStore, StoreError, StoreResult};

use crate::codec::*;
use crate::transact::{TransactError, applied};
use crate::{DynamoStore, keys};

/// Memberships a deletion reads and removes a page at a time.
const DELETE_PAGE: usize = 100;

fn group_item(g: &Group) -> Item {
    let mut item = key_item(keys::group(&g.org, &g.id));
    item.insert("displayName".into(), s(&g.display_name));
    item.insert("nameKey".into(), s(g.name_key()));
    if let Some(external) = &g.external_id {
        item.insert("externalId".into(), s(external));
    }
    item.insert("source".into(), s(g.source.as_str()));
    item.insert("version".into(), n(g.version));
    item.insert("createdAt".into(), n(g.created_at.millis()));
    item.insert("updatedAt".into(), n(g.updated_at.millis()));
    item
}

fn group_from(org: &OrgId, item: &Item) -> StoreResult<Group> {
    let sk = get_s(item, keys::SK)?;
    let id = sk
        .strip_prefix(keys::GROUP)
        .ok_or_else(|| corrupt(keys::SK))?;
    Ok(Group {
        org: org.clone(),
        id: GroupId::parse(id).map_err(|_| corrupt(keys::SK))?,
        display_name: get_s(item, "displayName")?.to_owned(),
        external_id: match item.get("externalId") {
            None => None,
            Some(_) => Some(get_s(item, "externalId")?.to_owned()),
        },
        source: get_s(item, "source")?
            .parse()
            .map_err(|_| corrupt("source"))?,
        version: get_n(item, "version")?,
        created_at: Timestamp(get_n(item, "createdAt")?),
        updated_at: Timestamp(get_n(item, "updatedAt")?),
    })
}

fn claim(g: &Group) -> Item {
    let mut item = key_item(keys::group_name(&g.org, &g.name_key()));
    item.insert("group".into(), s(g.id.as_str()));
    item
}

fn deleting(item: &Item) -> bool {
    item.contains_key("deleting")
}

impl DynamoStore {
    /// The group's item, being deleted or not.
    async fn group_item(&self, org: &OrgId, id: &GroupId) -> StoreResult<Option<Item>> {
        self.get(keys::group(org, id)).await
    }

    /// The deletes of both sides of the memberships of `user` in `groups`.
    pub(crate) fn membership_deletes(
        &self, org: &OrgId, user: &UserId, groups: &[GroupId],
    ) -> StoreResult<Vec<TransactWriteItem>> {
        let mut writes = Vec::with_capacity(groups.len() * 2);
        for group in groups {
            writes.push(self.delete(keys::group_member(org, group, user))?);
            writes.push(self.delete(keys::member_group(org, user, group))?);
        }
        Ok(writes)
    }

    /// The groups `user` is in, for their removal: at most [`GROUPS_PER_MEMBER`].
    pub(crate) async fn groups_to_leave(
        &self, org: &OrgId, user: &UserId,
    ) -> StoreResult<Vec<GroupId>> {
        let groups = self.member_groups(org, user).await?;
        if groups.len() > GROUPS_PER_MEMBER {
            return Err(StoreError::backend(format!(
                "member is in {} groups, more than the {GROUPS_PER_MEMBER} one removal takes",
                groups.len()
            )));
        }
        Ok(groups)
    }

    /// Removes the memberships of a group being deleted, a page at a time, then the group.
    async fn finish_deletion(&self, org: &OrgId, id: &GroupId) -> StoreResult<()> {
        loop {
            let pk = keys::group_members_partition(org, id);
            let page = self
                .query_page(pk, keys::GROUP_MEMBER, None, DELETE_PAGE)
                .await?;
            if page.is_empty() {
                break;
            }
            let mut doomed = Vec::with_capacity(page.len() * 2);
            for item in &page {
                let sk = get_s(item, keys::SK)?;
                let user = sk
                    .strip_prefix(keys::GROUP_MEMBER)
                    .ok_or_else(|| corrupt(keys::SK))?;
                let user = UserId::parse(user).map_err(|_| corrupt(keys::SK))?;
                doomed.push(key_item(keys::member_group(org, &user, id)));
                doomed.push(key_item(keys::group_member(org, id, &user)));
            }
            self.delete_all(doomed).await?;
        }
        self.delete_all(vec![key_item(keys::group(org, id))]).await
    }
}

#[async_trait]
impl GroupStore for DynamoStore {
    async fn create_group(&self, group: &Group, audit: &AuditEntry) -> StoreResult<()> {
        let stored = Group {
            version: 1,
            ..group.clone()
        };
        let writes = vec![
            self.put_new(group_item(&stored))?,
            self.put_new(claim(group))?,
            self.put_new(audit_item(audit))?,
        ];
        self.transact(writes)
            .await
            .map_err(TransactError::of_create)
    }

    async fn get_group(&self, org: &OrgId, id: &GroupId) -> StoreResult<Option<Group>> {
        match self.group_item(org, id).await? {
            Some(item) if !deleting(&item) => Ok(Some(group_from(org, &item)?)),
            _ => Ok(None),
        }
    }

    async fn find_group_by_name(&self, org: &OrgId, key: &str) -> StoreResult<Option<Group>> {
        let Some(claim) = self.get(keys::group_name(org, key)).await? else {
            return Ok(None);
        };
        let id = GroupId::parse(get_s(&claim, "group")?).map_err(|_| corrupt("group"))?;
        Ok(self
            .get_group(org, &id)
            .await?
            .filter(|g| g.name_key() == key))
    }

    async fn list_groups(&self, org: &OrgId) -> StoreResult<Vec<Group>> {
        let items =
            (self.query_items(keys::groups_partition(org), Some(keys::GROUP), None)).await?;
        items
            .iter()
            .filter(|item| !deleting(item))
            .map(|item| group_from(org, item))
            .collect()
    }

    async fn update_group(
        &self, previous: &Group, next: &Group, audit: &AuditEntry,
    ) -> StoreResult<()> {
        let mut writes = vec![self.put_versioned(group_item(next), previous.version)?];
        if previous.name_key() != next.name_key() {
            writes.push(self.delete(keys::group_name(&previous.org, &previous.name_key()))?);
            writes.push(self.put_new(claim(next))?);
        }
        writes.push(self.put_new(audit_item(audit))?);
        self.transact(writes)
            .await
            .map_err(TransactError::of_replace)
    }

    async fn delete_group(
        &self, org: &OrgId, id: &GroupId, audit: &AuditEntry,
    ) -> StoreResult<bool> {
        // First the group is marked as being deleted (its version moved, so no update lands)
        // with its name released and the audit entry; then the memberships go a page at a
        // time, the group's item last, so a deletion cut short is finished by the next call.
        for _ in 0..REMOVE_ATTEMPTS {
            let Some(item) = self.group_item(org, id).await? else {
                return Ok(false);
            };
            if deleting(&item) {
                self.finish_deletion(org, id).await?;
                return Ok(true);
            }
            let group = group_from(org, &item)?;
            let mark = Update::builder()
                .table_name(&self.table)
                .set_key(Some(key_item(keys::group(org, id))))
                .update_expression("SET #d = :d ADD #v :one")
                .condition_expression("#v = :expected")
                .expression_attribute_names("#d", "deleting")
                .expression_attribute_names("#v", "version")
                .expression_attribute_values(":d", n(1))
                .expression_attribute_values(":one", n(1))
                .expression_attribute_values(":expected", n(group.version));
            let writes = vec![
                TransactWriteItem::builder()
                    .update(built(mark.build())?)
                    .build(),
                self.delete(keys::group_name(org, &group.name_key()))?,
                self.put_new(audit_item(audit))?,
            ];
            match self.transact(writes).await {
                Ok(()) => {
                    self.finish_deletion(org, id).await?;
                    return Ok(true);
                }
                Err(TransactError::Backend(e)) => return Err(e),
                Err(_) => continue,
            }
        }
        Err(StoreError::Conflict)
    }

    async fn add_group_member(
        &self, group: &GroupId, member: &Member, audit: &AuditEntry,
    ) -> StoreResult<bool> {
        let (org, user) = (&member.org, &member.user);
        if self
            .get(keys::group_member(org, group, user))
            .await?
            .is_some()
        {
            return Ok(false);
        }
        let bump = Update::builder()
            .table_name(&self.table)
            .set_key(Some(key_item(keys::member(org, user))))
            .update_expression("ADD #v :one")
            .condition_expression("#v = :expected")
            .expression_attribute_names("#v", "version")
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":expected", n(member.version))
            .return_values_on_condition_check_failure(
                aws_sdk_dynamodb::types::ReturnValuesOnConditionCheckFailure::AllOld,
            );
        let check = ConditionCheck::builder()
            .table_name(&self.table)
            .set_key(Some(key_item(keys::group(org, group))))
            .condition_expression("attribute_exists(#pk) AND attribute_not_exists(#d)")
            .expression_attribute_names("#pk", keys::PK)
            .expression_attribute_names("#d", "deleting");
        let writes = vec![
            TransactWriteItem::builder()
                .update(built(bump.build())?)
                .build(),
            TransactWriteItem::builder()
                .condition_check(built(check.build())?)
                .build(),
            self.put_new(key_item(keys::group_member(org, group, user)))?,
            self.put_new(key_item(keys::member_group(org, user, group)))?,
            self.put_new(audit_item(audit))?,
        ];
        match self.transact(writes).await {
            Ok(()) => Ok(true),
            Err(TransactError::FirstCondition { stored: true } | TransactError::Contended) => {
                Err(StoreError::Conflict)
            }
            // The member is gone, or the group (an existing membership moves the version).
            Err(
                TransactError::FirstCondition { stored: false } | TransactError::OtherCondition(_),
            ) => Err(StoreError::Gone),
            Err(TransactError::Backend(e)) => Err(e),
        }
    }

    async fn remove_group_member(
        &self, org: &OrgId, group: &GroupId, user: &UserId, audit: &AuditEntry,
    ) -> StoreResult<bool> {
        let delete = aws_sdk_dynamodb::types::Delete::builder()
            .table_name(&self.table)
            .set_key(Some(key_item(keys::group_member(org, group, user))))
            .condition_expression("attribute_exists(#pk)")
            .expression_attribute_names("#pk", keys::PK);
        let writes = vec![
            TransactWriteItem::builder()
                .delete(built(delete.build())?)
                .build(),
            self.delete(keys::member_group(org, user, group))?,
            self.put_new(audit_item(audit))?,
        ];
        applied(self.transact(writes).await)
    }

    async fn list_group_members(
        &self, org: &OrgId, group: &GroupId, after: Option<&UserId>, limit: usize,
    ) -> StoreResult<Vec<UserId>> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let pk = keys::group_members_partition(org, group);
        let start = after.map(|user| keys::group_member(org, group, user));
        let items = self
            .query_page(pk, keys::GROUP_MEMBER, start, limit)
            .await?;
        items
            .iter()
            .map(|item| {
                let sk = get_s(item, keys::SK)?;
                let user = sk
                    .strip_prefix(keys::GROUP_MEMBER)
                    .ok_or_else(|| corrupt(keys::SK))?;
                UserId::parse(user).map_err(|_| corrupt(keys::SK))
            })
            .collect()
    }

    async fn member_groups(&self, org: &OrgId, user: &UserId) -> StoreResult<Vec<GroupId>> {
        let items = self
            .partition(keys::member_groups_partition(org, user), None)
            .await?;
        items
            .iter()
            .map(|item| GroupId::parse(get_s(item, keys::SK)?).map_err(|_| corrupt(keys::SK)))
            .collect()
    }
}
