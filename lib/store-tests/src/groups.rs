//! Cases of [`GroupStore`](knowledge_core::ports::GroupStore): groups, their unique names,
//! memberships written one at a time, a member's groups in one read, and members leaving every
//! group when they are removed.

use std::sync::Arc;

use knowledge_core::domain::{AuditAction, Group, GroupSource, Member, Role, group_name_key};
use knowledge_core::ids::{GroupId, OrgId, UserId};
use knowledge_core::ports::StoreError;

use crate::{NOW, Tested, audit, business_org, provisioned};

async fn group(store: &dyn Tested, org: &OrgId, name: &str) -> Group {
    let group = Group::new(org.clone(), name.into(), GroupSource::Scim, NOW);
    let created = audit(org, AuditAction::GroupCreated, group.id.as_str());
    store.create_group(&group, &created).await.unwrap();
    group
}

async fn member(store: &dyn Tested, org: &OrgId, name: &str) -> Member {
    let member = provisioned(org, name);
    let added = audit(org, AuditAction::UserProvisioned, member.user.as_str());
    store.create_member(&member, &added).await.unwrap();
    store.get_member(org, &member.user).await.unwrap().unwrap()
}

/// Adds `user` to `group` as they are stored now.
async fn join(store: &dyn Tested, group: &Group, user: &UserId) -> bool {
    let member = store.get_member(&group.org, user).await.unwrap().unwrap();
    let added = audit(&group.org, AuditAction::GroupMemberAdded, user.as_str());
    store
        .add_group_member(&group.id, &member, &added)
        .await
        .unwrap()
}

async fn members_of(store: &dyn Tested, group: &Group) -> Vec<UserId> {
    let mut all: Vec<UserId> = Vec::new();
    loop {
        let page = (store.list_group_members(&group.org, &group.id, all.last(), 7))
            .await
            .unwrap();
        let done = page.len() < 7;
        all.extend(page);
        if done {
            return all;
        }
    }
}

pub async fn groups_read_back_by_id_and_name_and_a_name_is_taken_once_per_organisation_in_any_case(
    store: Arc<dyn Tested>,
) {
    let (org, other) = (business_org(&*store).await, business_org(&*store).await);
    let sales = group(&*store, &org.id, "Sales").await;
    assert_eq!(
        store.get_group(&org.id, &sales.id).await.unwrap(),
        Some(sales.clone())
    );
    assert_eq!(store.get_group(&other.id, &sales.id).await.unwrap(), None);
    let found = store
        .find_group_by_name(&org.id, &group_name_key("SALES"))
        .await;
    assert_eq!(found.unwrap(), Some(sales.clone()));

    let twin = Group::new(org.id.clone(), "sALES".into(), GroupSource::Admin, NOW);
    let created = audit(&org.id, AuditAction::GroupCreated, twin.id.as_str());
    let refused = store.create_group(&twin, &created).await;
    assert!(
        matches!(refused, Err(StoreError::AlreadyExists)),
        "{refused:?}"
    );
    assert_eq!(store.get_group(&org.id, &twin.id).await.unwrap(), None);
    let elsewhere = group(&*store, &other.id, "Sales").await;
    let support = group(&*store, &org.id, "Support").await;
    let mut ids = vec![sales.id.clone(), support.id.clone()];
    ids.sort();
    let listed: Vec<GroupId> = store
        .list_groups(&org.id)
        .await
        .unwrap()
        .into_iter()
        .map(|g| g.id)
        .collect();
    assert_eq!(listed, ids);
    assert!(!listed.contains(&elsewhere.id));

    // A rename moves the claim: the old name is free, the new one taken, another's refused.
    let mut renamed = sales.clone();
    renamed.display_name = "Revenue".into();
    renamed.version += 1;
    let audit_rename = audit(&org.id, AuditAction::GroupRenamed, sales.id.as_str());
    let clash = Group {
        display_name: "support".into(),
        ..renamed.clone()
    };
    let refused = store.update_group(&sales, &clash, &audit_rename).await;
    assert!(
        matches!(refused, Err(StoreError::AlreadyExists)),
        "{refused:?}"
    );
    store
        .update_group(&sales, &renamed, &audit_rename)
        .await
        .unwrap();
    let stale = store.update_group(&sales, &renamed, &audit_rename).await;
    assert!(matches!(stale, Err(StoreError::Conflict)), "{stale:?}");
    assert_eq!(
        store.get_group(&org.id, &sales.id).await.unwrap(),
        Some(renamed.clone())
    );
    assert_eq!(
        store.find_group_by_name(&org.id, "sales").await.unwrap(),
        None
    );
    group(&*store, &org.id, "Sales").await;

    let deleted = audit(&org.id, AuditAction::GroupDeleted, sales.id.as_str());
    assert!(
        store
            .delete_group(&org.id, &sales.id, &deleted)
            .await
            .unwrap()
    );
    assert!(
        !store
            .delete_group(&org.id, &sales.id, &deleted)
            .await
            .unwrap()
    );
    assert!(
        !store
            .delete_group(&other.id, &support.id, &deleted)
            .await
            .unwrap()
    );
    assert_eq!(store.get_group(&org.id, &sales.id).await.unwrap(), None);
    let gone = store
        .update_group(
            &renamed,
            &Group {
                version: 3,
                ..renamed.clone()
            },
            &audit_rename,
        )
        .await;
    assert!(matches!(gone, Err(StoreError::Gone)), "{gone:?}");
    group(&*store, &org.id, "revenue").await;
    let actions: Vec<AuditAction> = (store.list_audit(&org.id, None, 20).await.unwrap())
        .iter()
        .map(|e| e.action)
        .filter(|a| *a != AuditAction::GroupCreated)
        .collect();
    assert_eq!(
        actions,
        [AuditAction::GroupDeleted, AuditAction::GroupRenamed]
    );
}

pub async fn memberships_are_written_one_at_a_time_listed_by_user_id_and_read_per_member_at_once(
    store: Arc<dyn Tested>,
) {
    let org = business_org(&*store).await;
    let (sales, support) = (
        group(&*store, &org.id, "Sales").await,
        group(&*store, &org.id, "Support").await,
    );
    let mut users = Vec::new();
    for i in 0..16 {
        users.push(
            member(&*store, &org.id, &format!("m{i}@example.com"))
                .await
                .user,
        );
    }
    for user in &users {
        assert!(join(&*store, &sales, user).await);
    }
    assert!(
        !join(&*store, &sales, &users[0]).await,
        "a second add writes nothing"
    );
    assert!(join(&*store, &support, &users[0]).await);
    let mut sorted = users.clone();
    sorted.sort();
    assert_eq!(members_of(&*store, &sales).await, sorted);
    assert_eq!(members_of(&*store, &support).await, [users[0].clone()]);
    let mut both = vec![sales.id.clone(), support.id.clone()];
    both.sort();
    assert_eq!(store.member_groups(&org.id, &users[0]).await.unwrap(), both);
    assert_eq!(
        store.member_groups(&org.id, &users[1]).await.unwrap(),
        std::slice::from_ref(&sales.id)
    );
    assert!(
        store
            .member_groups(&OrgId::generate(), &users[0])
            .await
            .unwrap()
            .is_empty()
    );

    let left = audit(&org.id, AuditAction::GroupMemberRemoved, users[0].as_str());
    assert!(
        store
            .remove_group_member(&org.id, &sales.id, &users[0], &left)
            .await
            .unwrap()
    );
    assert!(
        !store
            .remove_group_member(&org.id, &sales.id, &users[0], &left)
            .await
            .unwrap()
    );
    assert_eq!(
        store.member_groups(&org.id, &users[0]).await.unwrap(),
        std::slice::from_ref(&support.id)
    );
    assert_eq!(members_of(&*store, &sales).await.len(), 15);
    let entries = store.list_audit(&org.id, None, 2).await.unwrap();
    assert_eq!(entries[0].action, AuditAction::GroupMemberRemoved);
    assert_eq!(entries[1].action, AuditAction::GroupMemberAdded);
}

pub async fn an_addition_needs_the_group_and_the_member_as_read_in_the_same_organisation(
    store: Arc<dyn Tested>,
) {
    let (org, other) = (business_org(&*store).await, business_org(&*store).await);
    let sales = group(&*store, &org.id, "Sales").await;
    let ada = member(&*store, &org.id, "ada@example.com").await;
    let added = audit(&org.id, AuditAction::GroupMemberAdded, ada.user.as_str());

    let stranger = member(&*store, &other.id, "eve@example.com").await;
    let refused = store.add_group_member(&sales.id, &stranger, &added).await;
    assert!(matches!(refused, Err(StoreError::Gone)), "{refused:?}");
    assert!(
        store
            .member_groups(&other.id, &stranger.user)
            .await
            .unwrap()
            .is_empty()
    );
    let nowhere = store
        .add_group_member(&GroupId::generate(), &ada, &added)
        .await;
    assert!(matches!(nowhere, Err(StoreError::Gone)), "{nowhere:?}");

    assert!(
        store
            .add_group_member(&sales.id, &ada, &added)
            .await
            .unwrap()
    );
    let moved = store.get_member(&org.id, &ada.user).await.unwrap().unwrap();
    assert!(
        moved.version > ada.version,
        "an addition moves the member's version"
    );
    let support = group(&*store, &org.id, "Support").await;
    let stale = store.add_group_member(&support.id, &ada, &added).await;
    assert!(matches!(stale, Err(StoreError::Conflict)), "{stale:?}");
    assert_eq!(
        store.member_groups(&org.id, &ada.user).await.unwrap(),
        std::slice::from_ref(&sales.id)
    );

    let removed = audit(&org.id, AuditAction::UserDeleted, ada.user.as_str());
    store
        .remove_member(&org.id, &ada.user, &removed)
        .await
        .unwrap();
    let gone = store.add_group_member(&support.id, &moved, &added).await;
    assert!(matches!(gone, Err(StoreError::Gone)), "{gone:?}");
    assert!(members_of(&*store, &support).await.is_empty());
}

pub async fn a_removed_member_leaves_every_group_in_the_same_step(store: Arc<dyn Tested>) {
    let org = business_org(&*store).await;
    let mut groups = Vec::new();
    for i in 0..knowledge_core::domain::GROUPS_PER_MEMBER {
        groups.push(group(&*store, &org.id, &format!("g{i}")).await);
    }
    let ada = member(&*store, &org.id, "ada@example.com").await;
    let bob = member(&*store, &org.id, "bob@example.com").await;
    for g in &groups {
        join(&*store, g, &ada.user).await;
    }
    join(&*store, &groups[0], &bob.user).await;
    let removed = audit(&org.id, AuditAction::UserDeleted, ada.user.as_str());
    assert!(
        store
            .remove_member(&org.id, &ada.user, &removed)
            .await
            .unwrap()
    );
    assert!(
        store
            .member_groups(&org.id, &ada.user)
            .await
            .unwrap()
            .is_empty()
    );
    for g in &groups[1..] {
        assert!(members_of(&*store, g).await.is_empty());
    }
    assert_eq!(
        members_of(&*store, &groups[0]).await,
        std::slice::from_ref(&bob.user)
    );

    // An admin removed with a keeper leaves them too.
    let mut admin = member(&*store, &org.id, "carol@example.com").await;
    let keeper = Member::new(org.id.clone(), UserId::generate(), Role::Admin, NOW);
    let kept = audit(&org.id, AuditAction::MemberAdded, keeper.user.as_str());
    store.create_member(&keeper, &kept).await.unwrap();
    join(&*store, &groups[1], &admin.user).await;
    admin = store
        .get_member(&org.id, &admin.user)
        .await
        .unwrap()
        .unwrap();
    let keeper = store
        .get_member(&org.id, &keeper.user)
        .await
        .unwrap()
        .unwrap();
    let gone = audit(&org.id, AuditAction::MemberRemoved, admin.user.as_str());
    assert!(
        store
            .remove_member_keeping(&admin, &gone, &keeper)
            .await
            .unwrap()
    );
    assert!(
        store
            .member_groups(&org.id, &admin.user)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(members_of(&*store, &groups[1]).await.is_empty());
}

pub async fn deleting_a_large_group_removes_every_membership_and_frees_its_name(
    store: Arc<dyn Tested>,
) {
    let org = business_org(&*store).await;
    let (big, kept) = (
        group(&*store, &org.id, "Everyone").await,
        group(&*store, &org.id, "Kept").await,
    );
    let mut users = Vec::new();
    for i in 0..60 {
        let user = member(&*store, &org.id, &format!("m{i}@example.com"))
            .await
            .user;
        join(&*store, &big, &user).await;
        users.push(user);
    }
    join(&*store, &kept, &users[0]).await;
    let deleted = audit(&org.id, AuditAction::GroupDeleted, big.id.as_str());
    assert!(
        store
            .delete_group(&org.id, &big.id, &deleted)
            .await
            .unwrap()
    );
    assert!(members_of(&*store, &big).await.is_empty());
    for user in &users[1..] {
        assert!(store.member_groups(&org.id, user).await.unwrap().is_empty());
    }
    assert_eq!(
        store.member_groups(&org.id, &users[0]).await.unwrap(),
        std::slice::from_ref(&kept.id)
    );
    assert_eq!(
        store.list_groups(&org.id).await.unwrap(),
        std::slice::from_ref(&kept)
    );
    group(&*store, &org.id, "everyone").await;
    // A member of the deleted group may join another at once: nothing of it is left.
    let removed = audit(&org.id, AuditAction::UserDeleted, users[1].as_str());
    assert!(
        store
            .remove_member(&org.id, &users[1], &removed)
            .await
            .unwrap()
    );
}
