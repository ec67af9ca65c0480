//! The groups an admin makes: names refused as the SCIM ones are, members added and removed
//! once, every change audited, and a group the identity provider pushed left to it.

use std::sync::Arc;

use knowledge_core::CoreError;
use knowledge_core::admin::{Admin, AdminStores, Administration};
use knowledge_core::clock::{Clock, SystemClock};
use knowledge_core::domain::{
    Actor, AuditAction, AuditEntry, Group, GroupSource, Member, Org, Plan, Role,
};
use knowledge_core::ids::{GroupId, OrgId, UserId};
use knowledge_core::ports::Store;
use knowledge_core::testing::TransientStore;

const ORG: &str = "org_0123456789abcdef0123456789abcdef";
const OTHER: &str = "org_fedcba9876543210fedcba9876543210";

struct Rig {
    store: Arc<dyn Store>,
    admin: Administration,
}

async fn rig() -> Rig {
    let store: Arc<dyn Store> = Arc::new(TransientStore::default());
    for id in [ORG, OTHER] {
        let org = Org::new(
            OrgId::parse(id).unwrap(),
            "Acme",
            Plan::Business,
            SystemClock.now(),
        );
        store.put_org(&org).await.unwrap();
    }
    let admin = Administration::new(AdminStores::of(&store), Arc::new(SystemClock));
    Rig { store, admin }
}

fn operator(org: &str) -> Admin {
    Admin::operator(OrgId::parse(org).unwrap())
}

async fn member(store: &Arc<dyn Store>, org: &str) -> UserId {
    let org = OrgId::parse(org).unwrap();
    let user = UserId::generate();
    let now = SystemClock.now();
    let member = Member::new(org.clone(), user.clone(), Role::Viewer, now);
    let audit = AuditEntry::new(
        &org,
        now,
        Actor::Admin,
        AuditAction::MemberAdded,
        user.as_str(),
    );
    store.create_member(&member, &audit).await.unwrap();
    user
}

fn conflict(result: Result<impl std::fmt::Debug, CoreError>) -> &'static str {
    match result {
        Err(CoreError::Conflict { code, .. }) => code,
        other => panic!("expected a conflict, got {other:?}"),
    }
}

#[tokio::test]
async fn an_admin_makes_a_group_and_its_members_join_and_leave_once_each() {
    let r = rig().await;
    let admin = operator(ORG);
    let group = r.admin.create_group(&admin, "  Finance ").await.unwrap();
    assert_eq!(
        (group.display_name.as_str(), group.source),
        ("Finance", GroupSource::Admin)
    );
    let user = member(&r.store, ORG).await;
    assert!(
        r.admin
            .add_group_member(&admin, &group.id, &user)
            .await
            .unwrap()
    );
    assert!(
        !r.admin
            .add_group_member(&admin, &group.id, &user)
            .await
            .unwrap()
    );
    let org = OrgId::parse(ORG).unwrap();
    assert_eq!(
        r.store.member_groups(&org, &user).await.unwrap(),
        std::slice::from_ref(&group.id)
    );
    let renamed = r
        .admin
        .rename_group(&admin, &group.id, "Finance EMEA")
        .await
        .unwrap();
    assert_eq!(renamed.version, 2);
    assert!(
        r.admin
            .remove_group_member(&admin, &group.id, &user)
            .await
            .unwrap()
    );
    assert!(
        !r.admin
            .remove_group_member(&admin, &group.id, &user)
            .await
            .unwrap()
    );
    assert!(r.store.member_groups(&org, &user).await.unwrap().is_empty());
    r.admin.delete_group(&admin, &group.id).await.unwrap();
    assert!(r.admin.groups(&admin).await.unwrap().is_empty());
    let actions: Vec<AuditAction> = r
        .store
        .list_audit(&org, None, 10)
        .await
        .unwrap()
        .iter()
        .map(|e| e.action)
        .collect();
    for action in [
        AuditAction::GroupCreated,
        AuditAction::GroupMemberAdded,
        AuditAction::GroupRenamed,
        AuditAction::GroupMemberRemoved,
        AuditAction::GroupDeleted,
    ] {
        assert_eq!(
            actions.iter().filter(|a| **a == action).count(),
            1,
            "{action:?} in {actions:?}"
        );
    }
}

#[tokio::test]
async fn a_name_taken_by_another_group_or_a_role_is_refused_in_any_case() {
    let r = rig().await;
    let admin = operator(ORG);
    r.admin.create_group(&admin, "Finance").await.unwrap();
    assert_eq!(
        conflict(r.admin.create_group(&admin, "FINANCE").await),
        "group_name_taken"
    );
    assert_eq!(
        conflict(r.admin.create_group(&admin, "Admin").await),
        "group_name_taken"
    );
    let other = r.admin.create_group(&admin, "Legal").await.unwrap();
    assert_eq!(
        conflict(r.admin.rename_group(&admin, &other.id, "finance").await),
        "group_name_taken"
    );
    assert!(matches!(
        r.admin.create_group(&admin, "\u{7}").await,
        Err(CoreError::InvalidInput { .. })
    ));
}

#[tokio::test]
async fn a_group_the_identity_provider_pushed_is_read_only_to_admins() {
    let r = rig().await;
    let admin = operator(ORG);
    let org = OrgId::parse(ORG).unwrap();
    let pushed = Group::new(
        org.clone(),
        "Engineering".into(),
        GroupSource::Scim,
        SystemClock.now(),
    );
    let audit = AuditEntry::new(
        &org,
        SystemClock.now(),
        Actor::Scim,
        AuditAction::GroupCreated,
        pushed.id.as_str(),
    );
    r.store.create_group(&pushed, &audit).await.unwrap();
    let user = member(&r.store, ORG).await;
    let code = "group_pushed_by_scim";
    assert_eq!(
        conflict(r.admin.rename_group(&admin, &pushed.id, "Eng").await),
        code
    );
    assert_eq!(
        conflict(r.admin.add_group_member(&admin, &pushed.id, &user).await),
        code
    );
    assert_eq!(
        conflict(r.admin.remove_group_member(&admin, &pushed.id, &user).await),
        code
    );
    assert_eq!(
        conflict(r.admin.delete_group(&admin, &pushed.id).await),
        code
    );
    // Still listed, as it is.
    let listed = r.admin.groups(&admin).await.unwrap();
    assert_eq!(listed, [pushed]);
}

#[tokio::test]
async fn another_organisations_group_or_member_is_not_found() {
    let r = rig().await;
    let theirs = r
        .admin
        .create_group(&operator(OTHER), "Theirs")
        .await
        .unwrap();
    let mine = r.admin.create_group(&operator(ORG), "Mine").await.unwrap();
    let their_member = member(&r.store, OTHER).await;
    let admin = operator(ORG);
    let not_found = |result: Result<_, CoreError>| matches!(result, Err(CoreError::NotFound(_)));
    assert!(not_found(
        r.admin
            .rename_group(&admin, &theirs.id, "X")
            .await
            .map(|_| ())
    ));
    assert!(not_found(r.admin.delete_group(&admin, &theirs.id).await));
    assert!(not_found(
        r.admin
            .add_group_member(&admin, &mine.id, &their_member)
            .await
            .map(|_| ())
    ));
    assert!(not_found(
        r.admin
            .add_group_member(&admin, &GroupId::generate(), &their_member)
            .await
            .map(|_| ())
    ));
    assert_eq!(r.admin.groups(&admin).await.unwrap().len(), 1);
}
