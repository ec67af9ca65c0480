//! Cases of [`GrantStore`](knowledge_core::ports::GrantStore): a member's OAuth grant and the
//! organisation's, swapped only from the value they were read at, and removed with what they
//! belong to.

use std::sync::Arc;

use knowledge_core::domain::{
    Actor, AuditAction, AuditEntry, GrantOwner, IntegrationAuth, IntegrationConfig, MemberDataKind,
};
use knowledge_core::ids::{OrgId, UserId};
use knowledge_core::ports::StoreError;

use crate::{NOW, Tested, audit, business_org, landed, provisioned};

fn oauth(name: &str) -> IntegrationConfig {
    IntegrationConfig {
        name: name.into(),
        url: format!("https://{name}.example/mcp"),
        auth: IntegrationAuth::OauthOrganisation,
        created_at: NOW,
        oauth: None,
        org_grant_sealed: None,
        tool_rules: Default::default(),
    }
}

pub async fn a_members_grant_moves_only_from_the_value_it_was_read_at_and_leaves_with_the_member(
    store: Arc<dyn Tested>,
) {
    let org = OrgId::generate();
    let ann = provisioned(&org, "ann@example.org");
    let created = audit(&org, AuditAction::UserProvisioned, ann.user.as_str());
    store.create_member(&ann, &created).await.unwrap();
    let owner = GrantOwner::Member(ann.user.clone());
    let connected = audit(&org, AuditAction::AccountConnected, "wiki");

    let stranger = GrantOwner::Member(UserId::generate());
    let refused = store.swap_grant(&org, &stranger, "wiki", None, Some("g1"), None);
    assert!(matches!(refused.await, Err(StoreError::Gone)));

    store
        .swap_grant(&org, &owner, "wiki", None, Some("g1"), Some(&connected))
        .await
        .unwrap();
    let again = store.swap_grant(&org, &owner, "wiki", None, Some("g0"), None);
    assert!(
        matches!(again.await, Err(StoreError::Conflict)),
        "it exists"
    );
    let stale = store.swap_grant(&org, &owner, "wiki", Some("g0"), Some("g2"), None);
    assert!(matches!(stale.await, Err(StoreError::Conflict)));
    store
        .swap_grant(&org, &owner, "wiki", Some("g1"), Some("g2"), None)
        .await
        .unwrap();
    let read = store.get_grant(&org, &owner, "wiki").await.unwrap();
    assert_eq!(read.as_deref(), Some("g2"));
    assert_eq!(store.get_grant(&org, &owner, "crm").await.unwrap(), None);

    // It is the member's data, listed with the rest of it.
    let data = store.list_member_data(&org, &ann.user).await.unwrap();
    assert_eq!(data.len(), 1);
    assert_eq!(
        (data[0].kind, data[0].name.as_str()),
        (MemberDataKind::OAuthGrant, "wiki")
    );
    assert_eq!(data[0].value, "g2");
    // Only creating it moved the member's version; a refresh does not.
    let member = store.get_member(&org, &ann.user).await.unwrap().unwrap();
    assert_eq!(member.version, ann.version + 1);

    let removed = audit(&org, AuditAction::UserDeactivated, ann.user.as_str());
    store
        .remove_member(&org, &ann.user, &removed)
        .await
        .unwrap();
    assert_eq!(store.get_grant(&org, &owner, "wiki").await.unwrap(), None);
    let late = store.swap_grant(&org, &owner, "wiki", Some("g2"), Some("g3"), None);
    assert!(
        matches!(late.await, Err(StoreError::Conflict)),
        "the grant left"
    );
    let log = store.list_audit(&org, None, 10).await.unwrap();
    let actions: Vec<_> = log.iter().map(|a| a.action).collect();
    assert_eq!(
        actions,
        [
            AuditAction::UserDeactivated,
            AuditAction::AccountConnected,
            AuditAction::UserProvisioned
        ],
        "only a swap given an entry records one"
    );
}

pub async fn a_member_grant_is_removed_only_from_the_value_it_was_read_at(store: Arc<dyn Tested>) {
    let org = OrgId::generate();
    let ann = provisioned(&org, "ann@example.org");
    let created = audit(&org, AuditAction::UserProvisioned, ann.user.as_str());
    store.create_member(&ann, &created).await.unwrap();
    let owner = GrantOwner::Member(ann.user.clone());
    store
        .swap_grant(&org, &owner, "wiki", None, Some("g1"), None)
        .await
        .unwrap();
    let stale = store.swap_grant(&org, &owner, "wiki", Some("g0"), None, None);
    assert!(matches!(stale.await, Err(StoreError::Conflict)));
    assert!(
        store
            .get_grant(&org, &owner, "wiki")
            .await
            .unwrap()
            .is_some()
    );
    let gone = audit(&org, AuditAction::AccountDisconnected, "wiki");
    store
        .swap_grant(&org, &owner, "wiki", Some("g1"), None, Some(&gone))
        .await
        .unwrap();
    assert_eq!(store.get_grant(&org, &owner, "wiki").await.unwrap(), None);
    assert!(
        store
            .list_member_data(&org, &ann.user)
            .await
            .unwrap()
            .is_empty()
    );
}

pub async fn the_organisations_grant_stays_through_setting_changes_and_leaves_with_its_integration(
    store: Arc<dyn Tested>,
) {
    let org = business_org(&*store).await;
    let other = business_org(&*store).await;
    let entry = |action, target: &str| AuditEntry::new(&org.id, NOW, Actor::Admin, action, target);
    let owner = GrantOwner::Organisation;

    let none = store.swap_grant(&org.id, &owner, "wiki", None, Some("g1"), None);
    assert!(
        matches!(none.await, Err(StoreError::Gone)),
        "no such integration"
    );

    let connect = || entry(AuditAction::IntegrationConnected, "wiki");
    store
        .put_integration(&org.id, &oauth("wiki"), &connect())
        .await
        .unwrap();
    store
        .swap_grant(&org.id, &owner, "wiki", None, Some("g1"), None)
        .await
        .unwrap();
    let stale = store.swap_grant(&org.id, &owner, "wiki", None, Some("g9"), None);
    assert!(matches!(stale.await, Err(StoreError::Conflict)));

    // Changing the settings keeps the grant, and the one read lists it.
    let moved = IntegrationConfig {
        url: "https://wiki2.example/mcp".into(),
        ..oauth("wiki")
    };
    store
        .put_integration(&org.id, &moved, &connect())
        .await
        .unwrap();
    let listed = store.list_integrations(&org.id).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].url, moved.url);
    assert_eq!(listed[0].org_grant_sealed.as_deref(), Some("g1"));
    let read = store.get_grant(&org.id, &owner, "wiki").await.unwrap();
    assert_eq!(read.as_deref(), Some("g1"));
    assert_eq!(
        store.get_grant(&other.id, &owner, "wiki").await.unwrap(),
        None
    );

    store
        .swap_grant(&org.id, &owner, "wiki", Some("g1"), Some("g2"), None)
        .await
        .unwrap();
    let disconnect = entry(AuditAction::IntegrationDisconnected, "wiki");
    assert!(
        store
            .remove_integration(&org.id, "wiki", &disconnect)
            .await
            .unwrap()
    );
    store
        .put_integration(&org.id, &oauth("wiki"), &connect())
        .await
        .unwrap();
    assert_eq!(
        store.get_grant(&org.id, &owner, "wiki").await.unwrap(),
        None,
        "a grant does not outlive its integration"
    );
    assert_eq!(
        store.list_integrations(&org.id).await.unwrap()[0].org_grant_sealed,
        None
    );
}

pub async fn of_concurrent_swaps_from_one_grant_exactly_one_lands(store: Arc<dyn Tested>) {
    let org = business_org(&*store).await;
    let ann = provisioned(&org.id, "ann@example.org");
    let created = audit(&org.id, AuditAction::UserProvisioned, ann.user.as_str());
    store.create_member(&ann, &created).await.unwrap();
    let connect = audit(&org.id, AuditAction::IntegrationConnected, "wiki");
    store
        .put_integration(&org.id, &oauth("wiki"), &connect)
        .await
        .unwrap();
    for owner in [
        GrantOwner::Member(ann.user.clone()),
        GrantOwner::Organisation,
    ] {
        store
            .swap_grant(&org.id, &owner, "wiki", None, Some("start"), None)
            .await
            .unwrap();
        let tasks = (0..8)
            .map(|i| {
                let (store, org, owner) = (store.clone(), org.id.clone(), owner.clone());
                tokio::spawn(async move {
                    let next = format!("next-{i}");
                    store
                        .swap_grant(&org, &owner, "wiki", Some("start"), Some(&next), None)
                        .await
                })
            })
            .collect();
        assert_eq!(landed(tasks).await, 1, "{owner:?}");
        let now = store.get_grant(&org.id, &owner, "wiki").await.unwrap();
        assert!(now.is_some_and(|g| g.starts_with("next-")));
    }
}
