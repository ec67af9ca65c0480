//! Cases of [`DirectoryStore`](knowledge_core::ports::DirectoryStore): members, their data and
//! identity claims, integrations and the audit log.

use std::sync::Arc;

use knowledge_core::domain::{AuditAction, FederatedId, Member, MemberData, MemberDataKind, Role};
use knowledge_core::ids::{OrgId, UserId};
use knowledge_core::ports::StoreError;

use crate::{NOW, Tested, audit, business_org, provisioned};

pub async fn organisations_and_memberships_read_back_and_are_removed_once(store: Arc<dyn Tested>) {
    let org = business_org(&*store).await;
    assert_eq!(store.get_org(&org.id).await.unwrap(), Some(org.clone()));
    assert_eq!(store.get_org(&OrgId::generate()).await.unwrap(), None);

    let member = Member::new(org.id.clone(), UserId::generate(), Role::Admin, NOW);
    let added = audit(&org.id, AuditAction::MemberAdded, member.user.as_str());
    store.create_member(&member, &added).await.unwrap();
    assert!(matches!(
        store.create_member(&member, &added).await,
        Err(StoreError::AlreadyExists)
    ));
    let other_org = OrgId::generate();
    assert_eq!(
        store.get_member(&other_org, &member.user).await.unwrap(),
        None
    );
    assert_eq!(
        store.get_member(&org.id, &member.user).await.unwrap(),
        Some(member.clone())
    );
    let removed = audit(&org.id, AuditAction::MemberRemoved, member.user.as_str());
    assert!(
        store
            .remove_member(&org.id, &member.user, &removed)
            .await
            .unwrap()
    );
    assert!(
        !store
            .remove_member(&org.id, &member.user, &removed)
            .await
            .unwrap()
    );
    assert_eq!(store.get_member(&org.id, &member.user).await.unwrap(), None);
    let actions = audit_actions(&*store, &org.id, 10).await;
    assert_eq!(
        actions,
        [AuditAction::MemberRemoved, AuditAction::MemberAdded]
    );
}

pub async fn a_user_name_is_claimed_once_per_organisation_in_any_case_and_moves_with_updates(
    store: Arc<dyn Tested>,
) {
    let (org, other) = (OrgId::generate(), OrgId::generate());
    let ann = provisioned(&org, "Ann@Example.org");
    let created = || audit(&org, AuditAction::UserProvisioned, "new");
    store.create_member(&ann, &created()).await.unwrap();
    assert!(matches!(
        store
            .create_member(&provisioned(&org, "ann@example.ORG"), &created())
            .await,
        Err(StoreError::AlreadyExists)
    ));
    // Another organisation has its own names.
    store
        .create_member(&provisioned(&other, "ann@example.org"), &created())
        .await
        .unwrap();
    let found = store
        .find_member_by_user_name(&org, "ann@example.org")
        .await
        .unwrap();
    assert_eq!(found, Some(ann.clone()));

    let bob = provisioned(&org, "bob@example.org");
    store.create_member(&bob, &created()).await.unwrap();
    let listed: Vec<UserId> = store
        .list_members(&org)
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.user)
        .collect();
    let mut expected = vec![ann.user.clone(), bob.user.clone()];
    expected.sort();
    assert_eq!(listed, expected);

    // Renaming Ann frees her old name and claims the new one; taking Bob's is refused.
    let updated = || audit(&org, AuditAction::UserUpdated, "changed");
    let mut renamed = ann.clone();
    renamed.version += 1;
    renamed.profile.as_mut().unwrap().user_name = "ann.lee@example.org".into();
    store
        .update_member(&ann, &renamed, &updated())
        .await
        .unwrap();
    assert_eq!(
        store
            .find_member_by_user_name(&org, "ann@example.org")
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        store
            .find_member_by_user_name(&org, "ann.lee@example.org")
            .await
            .unwrap()
            .map(|m| m.user),
        Some(ann.user.clone())
    );
    let mut taking = renamed.clone();
    taking.version += 1;
    taking.profile.as_mut().unwrap().user_name = "BOB@example.org".into();
    assert!(matches!(
        store.update_member(&renamed, &taking, &updated()).await,
        Err(StoreError::AlreadyExists)
    ));
    // A stale version conflicts; a removed member is gone.
    assert!(matches!(
        store.update_member(&ann, &renamed, &updated()).await,
        Err(StoreError::Conflict)
    ));
    let removed = audit(&org, AuditAction::UserDeleted, bob.user.as_str());
    store
        .remove_member(&org, &bob.user, &removed)
        .await
        .unwrap();
    let mut stale = bob.clone();
    stale.version += 1;
    assert!(matches!(
        store.update_member(&bob, &stale, &updated()).await,
        Err(StoreError::Gone)
    ));
    // Bob's name is free again.
    store
        .create_member(&provisioned(&org, "bob@example.org"), &created())
        .await
        .unwrap();
}

pub async fn concurrent_creates_of_one_user_name_claim_it_once(store: Arc<dyn Tested>) {
    let org = OrgId::generate();
    let attempts: Vec<_> = (0..8)
        .map(|_| {
            let store = store.clone();
            let member = provisioned(&org, "same@example.org");
            // Each with its own audit entry, so only the name can collide.
            let created = audit(&org, AuditAction::UserProvisioned, member.user.as_str());
            tokio::spawn(async move { store.create_member(&member, &created).await })
        })
        .collect();
    let mut won = 0;
    for attempt in attempts {
        match attempt.await.unwrap() {
            Ok(()) => won += 1,
            Err(StoreError::AlreadyExists | StoreError::Conflict) => {}
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!(won, 1);
    assert_eq!(store.list_members(&org).await.unwrap().len(), 1);
}

pub async fn removing_a_member_removes_their_data_in_the_same_step(store: Arc<dyn Tested>) {
    let org = OrgId::generate();
    let ann = provisioned(&org, "ann@example.org");
    let created = audit(&org, AuditAction::UserProvisioned, ann.user.as_str());
    store.create_member(&ann, &created).await.unwrap();
    let stranger = UserId::generate();
    let token = MemberData {
        kind: MemberDataKind::IntegrationToken,
        name: "crm".into(),
        value: "sealed:abc".into(),
    };
    let memory = MemberData {
        kind: MemberDataKind::AgentMemory,
        name: "notes".into(),
        value: "prefers short answers".into(),
    };
    let stored = || audit(&org, AuditAction::MemberDataStored, ann.user.as_str());
    assert!(matches!(
        store
            .put_member_data(&org, &stranger, &token, &stored())
            .await,
        Err(StoreError::Gone)
    ));
    for d in [&token, &memory] {
        store
            .put_member_data(&org, &ann.user, d, &stored())
            .await
            .unwrap();
    }
    let mut held = store.list_member_data(&org, &ann.user).await.unwrap();
    held.sort_by_key(|d| d.kind);
    assert_eq!(held, [token.clone(), memory.clone()]);
    // Writing data moves the member's version, so a removal prepared before it retries.
    let now = store.get_member(&org, &ann.user).await.unwrap().unwrap();
    assert_eq!(now.version, ann.version + 2);

    let removed = audit(&org, AuditAction::UserDeactivated, ann.user.as_str());
    assert!(
        store
            .remove_member(&org, &ann.user, &removed)
            .await
            .unwrap()
    );
    assert_eq!(store.list_member_data(&org, &ann.user).await.unwrap(), []);
    assert_eq!(store.get_member(&org, &ann.user).await.unwrap(), None);
    assert_eq!(
        store
            .find_member_by_user_name(&org, "ann@example.org")
            .await
            .unwrap(),
        None
    );
    let log = store.list_audit(&org, None, 10).await.unwrap();
    assert_eq!(
        log.iter().map(|a| a.action).collect::<Vec<_>>(),
        [
            AuditAction::UserDeactivated,
            AuditAction::MemberDataStored,
            AuditAction::MemberDataStored,
            AuditAction::UserProvisioned
        ],
        "a refused write records nothing"
    );
}

pub async fn a_users_organisations_are_listed_by_id_and_follow_their_memberships(
    store: Arc<dyn Tested>,
) {
    let user = UserId::generate();
    let (first, second) = (business_org(&*store).await, business_org(&*store).await);
    for org in [&first, &second] {
        let member = Member::new(org.id.clone(), user.clone(), Role::Viewer, NOW);
        let added = audit(&org.id, AuditAction::MemberAdded, user.as_str());
        store.create_member(&member, &added).await.unwrap();
    }
    let other = Member::new(first.id.clone(), UserId::generate(), Role::Admin, NOW);
    let added = audit(&first.id, AuditAction::MemberAdded, other.user.as_str());
    store.create_member(&other, &added).await.unwrap();
    let mut both = vec![first.id.clone(), second.id.clone()];
    both.sort();
    assert_eq!(store.orgs_of(&user).await.unwrap(), both);
    assert_eq!(
        store.orgs_of(&other.user).await.unwrap(),
        vec![first.id.clone()]
    );
    let removed = audit(&first.id, AuditAction::MemberRemoved, user.as_str());
    assert!(
        store
            .remove_member(&first.id, &user, &removed)
            .await
            .unwrap()
    );
    assert_eq!(store.orgs_of(&user).await.unwrap(), vec![second.id.clone()]);
    assert!(store.orgs_of(&UserId::generate()).await.unwrap().is_empty());
}

pub async fn a_sign_out_stamp_reads_back_and_stays_through_later_updates(store: Arc<dyn Tested>) {
    let org = business_org(&*store).await;
    let member = provisioned(&org.id, "ann@example.com");
    let added = audit(&org.id, AuditAction::UserProvisioned, member.user.as_str());
    store.create_member(&member, &added).await.unwrap();
    let stored = store
        .get_member(&org.id, &member.user)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.signed_out_at, None);
    let mut out = stored.clone();
    out.version += 1;
    out.signed_out_at = Some(NOW.plus_millis(5));
    let signed_out = audit(&org.id, AuditAction::MemberSignedOut, member.user.as_str());
    store
        .update_member(&stored, &out, &signed_out)
        .await
        .unwrap();
    assert_eq!(
        store.get_member(&org.id, &member.user).await.unwrap(),
        Some(out.clone())
    );
    let mut promoted = out.clone();
    promoted.version += 1;
    promoted.role = Role::Admin;
    let changed = audit(
        &org.id,
        AuditAction::MemberRoleChanged,
        member.user.as_str(),
    );
    store
        .update_member(&out, &promoted, &changed)
        .await
        .unwrap();
    let read = store
        .get_member(&org.id, &member.user)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(read.signed_out_at, Some(NOW.plus_millis(5)));
}

/// The actions of the organisation's newest `limit` audit entries, newest first.
pub(crate) async fn audit_actions(
    store: &dyn Tested, org: &OrgId, limit: usize,
) -> Vec<AuditAction> {
    let entries = store.list_audit(org, None, limit).await.unwrap();
    entries.iter().map(|e| e.action).collect()
}

/// `member` at its next version, bound to `identity`.
fn bound(member: &Member, identity: &FederatedId) -> Member {
    let mut next = member.clone();
    next.version += 1;
    next.identity = Some(identity.clone());
    next
}

pub async fn a_provider_identity_is_bound_to_one_member_per_organisation_until_removed(
    store: Arc<dyn Tested>,
) {
    let (org, elsewhere) = (business_org(&*store).await, business_org(&*store).await);
    let identity = FederatedId {
        issuer: "https://idp.example.com".into(),
        subject: "00u1".into(),
    };
    let (ann, bob) = (
        provisioned(&org.id, "ann@example.com"),
        provisioned(&org.id, "bob@example.com"),
    );
    for m in [&ann, &bob] {
        let added = audit(&org.id, AuditAction::UserProvisioned, m.user.as_str());
        store.create_member(m, &added).await.unwrap();
    }
    let entry = || audit(&org.id, AuditAction::MemberIdentityBound, ann.user.as_str());
    let ann_bound = bound(&ann, &identity);
    store
        .update_member(&ann, &ann_bound, &entry())
        .await
        .unwrap();
    let read = store.get_member(&org.id, &ann.user).await.unwrap();
    assert_eq!(read.and_then(|m| m.identity), Some(identity.clone()));

    assert!(matches!(
        store
            .update_member(&bob, &bound(&bob, &identity), &entry())
            .await,
        Err(StoreError::AlreadyExists)
    ));
    assert_eq!(
        store.get_member(&org.id, &bob.user).await.unwrap(),
        Some(bob.clone())
    );
    let mut carol = provisioned(&org.id, "carol@example.com");
    carol.identity = Some(identity.clone());
    let added = audit(&org.id, AuditAction::MemberAdded, carol.user.as_str());
    assert!(matches!(
        store.create_member(&carol, &added).await,
        Err(StoreError::AlreadyExists)
    ));
    let mut other = provisioned(&elsewhere.id, "ann@example.com");
    other.identity = Some(identity.clone());
    let added = audit(&elsewhere.id, AuditAction::MemberAdded, other.user.as_str());
    store.create_member(&other, &added).await.unwrap();

    let removed = audit(&org.id, AuditAction::MemberRemoved, ann.user.as_str());
    assert!(
        store
            .remove_member(&org.id, &ann.user, &removed)
            .await
            .unwrap()
    );
    store
        .update_member(&bob, &bound(&bob, &identity), &entry())
        .await
        .unwrap();
    let read = store.get_member(&org.id, &bob.user).await.unwrap();
    assert_eq!(read.and_then(|m| m.identity), Some(identity));
}
