//! Cases of what the admin use cases need of the stores: role changes and removals that keep
//! another admin, pages of members and of the audit log, the monthly limits, and the
//! operator's changes of plan, status and limits.

use std::sync::Arc;

use knowledge_core::domain::{
    AuditAction, Member, MemberCaps, MemberData, MemberDataKind, OrgStatus, Plan, Role,
};
use knowledge_core::ids::{OrgId, UserId};
use knowledge_core::ports::{OrgChanges, OrgLimits, StoreError};

use crate::{NOW, Tested, audit, business_org};

async fn admin(store: &dyn Tested, org: &OrgId) -> Member {
    let member = Member::new(org.clone(), UserId::generate(), Role::Admin, NOW);
    let added = audit(org, AuditAction::MemberAdded, member.user.as_str());
    store.create_member(&member, &added).await.unwrap();
    member
}

fn demoted(member: &Member) -> Member {
    let mut next = member.clone();
    next.role = Role::Viewer;
    next.version += 1;
    next
}

pub async fn of_two_admins_demoting_each_other_at_once_exactly_one_lands(store: Arc<dyn Tested>) {
    for _ in 0..5 {
        let org = business_org(&*store).await;
        let (a, b) = (admin(&*store, &org.id).await, admin(&*store, &org.id).await);
        let changed = |m: &Member| audit(&org.id, AuditAction::MemberRoleChanged, m.user.as_str());
        let (next_a, next_b) = (demoted(&a), demoted(&b));
        let (audit_a, audit_b) = (changed(&a), changed(&b));
        let (first, second) = tokio::join!(
            store.update_member_keeping(&a, &next_a, &audit_a, &b),
            store.update_member_keeping(&b, &next_b, &audit_b, &a),
        );
        let landed = [&first, &second].iter().filter(|r| r.is_ok()).count();
        assert_eq!(landed, 1, "{first:?} {second:?}");
        assert!(matches!(
            [first, second].into_iter().find(Result::is_err),
            Some(Err(StoreError::Conflict))
        ));
        let admins = store.list_members(&org.id).await.unwrap();
        assert_eq!(admins.iter().filter(|m| m.role == Role::Admin).count(), 1);
        let log = store.list_audit(&org.id, None, 10).await.unwrap();
        let changes = log
            .iter()
            .filter(|e| e.action == AuditAction::MemberRoleChanged);
        assert_eq!(
            changes.count(),
            1,
            "one audit entry, of the change that landed"
        );
    }
}

pub async fn a_keeper_that_moved_refuses_the_change_and_the_removal_and_nothing_is_written(
    store: Arc<dyn Tested>,
) {
    let org = business_org(&*store).await;
    let (a, b) = (admin(&*store, &org.id).await, admin(&*store, &org.id).await);
    // The keeper signs out: its version moves.
    let mut moved = b.clone();
    moved.version += 1;
    moved.signed_out_at = Some(NOW);
    let out = audit(&org.id, AuditAction::MemberSignedOut, b.user.as_str());
    store.update_member(&b, &moved, &out).await.unwrap();
    let change = audit(&org.id, AuditAction::MemberRoleChanged, a.user.as_str());
    assert!(matches!(
        store
            .update_member_keeping(&a, &demoted(&a), &change, &b)
            .await,
        Err(StoreError::Conflict)
    ));
    let removal = audit(&org.id, AuditAction::MemberRemoved, a.user.as_str());
    assert!(matches!(
        store.remove_member_keeping(&a, &removal, &b).await,
        Err(StoreError::Conflict)
    ));
    assert_eq!(
        store.get_member(&org.id, &a.user).await.unwrap(),
        Some(a.clone())
    );
    // With the keeper as stored now, both go through; the removal takes the member's data.
    let data = MemberData {
        kind: MemberDataKind::AgentMemory,
        name: "notes".into(),
        value: "v".into(),
    };
    store
        .put_member_data(
            &org.id,
            &a.user,
            &data,
            &audit(&org.id, AuditAction::MemberDataStored, a.user.as_str()),
        )
        .await
        .unwrap();
    let a = store.get_member(&org.id, &a.user).await.unwrap().unwrap();
    store
        .update_member_keeping(&a, &demoted(&a), &change, &moved)
        .await
        .unwrap();
    // A removal at a version that moved is refused too.
    assert!(matches!(
        store.remove_member_keeping(&a, &removal, &moved).await,
        Err(StoreError::Conflict)
    ));
    let a = store.get_member(&org.id, &a.user).await.unwrap().unwrap();
    assert!(
        store
            .remove_member_keeping(&a, &removal, &moved)
            .await
            .unwrap()
    );
    assert_eq!(store.get_member(&org.id, &a.user).await.unwrap(), None);
    assert!(
        store
            .list_member_data(&org.id, &a.user)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        !store
            .remove_member_keeping(&a, &removal, &moved)
            .await
            .unwrap()
    );
}

pub async fn members_are_paged_by_user_id_within_their_organisation(store: Arc<dyn Tested>) {
    let (org, other) = (business_org(&*store).await, business_org(&*store).await);
    let mut users = Vec::new();
    for _ in 0..5 {
        users.push(admin(&*store, &org.id).await.user);
    }
    admin(&*store, &other.id).await;
    users.sort();
    let first = store.list_members_after(&org.id, None, 2).await.unwrap();
    let ids = |page: &[Member]| page.iter().map(|m| m.user.clone()).collect::<Vec<_>>();
    assert_eq!(ids(&first), users[..2]);
    let second = store
        .list_members_after(&org.id, Some(&users[1]), 2)
        .await
        .unwrap();
    assert_eq!(ids(&second), users[2..4]);
    let last = store
        .list_members_after(&org.id, Some(&users[3]), 10)
        .await
        .unwrap();
    assert_eq!(ids(&last), users[4..]);
    let after_all = store
        .list_members_after(&org.id, Some(&users[4]), 10)
        .await
        .unwrap();
    assert!(after_all.is_empty());
}

pub async fn the_audit_log_is_paged_newest_first_and_names_who_acted(store: Arc<dyn Tested>) {
    let org = business_org(&*store).await;
    let admin_user = UserId::generate();
    let mut written = Vec::new();
    for i in 0..5 {
        let entry = audit(&org.id, AuditAction::IntegrationConnected, &format!("i{i}"));
        // Entries written by an admin keep the admin's name and what changed.
        let entry = if i % 2 == 0 {
            entry
                .by(&admin_user)
                .by_named(Some("ann@example.com"))
                .target_named(Some(&format!("member{i}@example.com")))
                .changed(Some("viewer"), "admin")
        } else {
            entry
        };
        let integration = knowledge_core::domain::IntegrationConfig {
            name: format!("i{i}"),
            url: "https://mcp.example.com/mcp".into(),
            auth: knowledge_core::domain::IntegrationAuth::None,
            created_at: NOW,
            oauth: None,
            org_grant_sealed: None,
            tool_rules: Default::default(),
        };
        store
            .put_integration(&org.id, &integration, &entry)
            .await
            .unwrap();
        written.push(entry);
    }
    written.reverse();
    let first = store.list_audit(&org.id, None, 2).await.unwrap();
    assert_eq!(first, written[..2]);
    let cursor = first.last().unwrap().cursor();
    let rest = store.list_audit(&org.id, Some(&cursor), 10).await.unwrap();
    assert_eq!(rest, written[2..]);
    // Entries 4, 2 and 0 were written by the admin.
    assert_eq!(rest[0].by.as_ref(), Some(&admin_user));
    assert_eq!(rest[0].detail.by_name.as_deref(), Some("ann@example.com"));
    assert_eq!(rest[0].detail.from.as_deref(), Some("viewer"));
    assert_eq!(rest[1].by, None);
    assert_eq!(rest[1].detail, Default::default());
    let past_the_end = store
        .list_audit(&org.id, Some(&rest.last().unwrap().cursor()), 10)
        .await
        .unwrap();
    assert!(past_the_end.is_empty());
}

pub async fn limits_are_set_with_their_audit_and_keep_the_other_settings(store: Arc<dyn Tested>) {
    let org = business_org(&*store).await;
    let set = audit(&org.id, AuditAction::OrgLimitsChanged, org.id.as_str());
    let limits = OrgLimits {
        quota: Some(7),
        cap_micros: Some(2_500_000),
        member: MemberCaps {
            queries: Some(3),
            cost_micros: Some(500_000),
        },
    };
    store.set_limits(&org.id, &limits, &set).await.unwrap();
    let read = store.get_org(&org.id).await.unwrap().unwrap();
    assert_eq!(read.monthly_query_quota, Some(7));
    assert_eq!(read.cost_cap_micros, Some(2_500_000));
    assert_eq!(read.member_caps, limits.member);
    assert_eq!(
        (read.name.as_str(), read.plan, read.status),
        (org.name.as_str(), org.plan, org.status)
    );
    let unset = audit(&org.id, AuditAction::OrgLimitsChanged, org.id.as_str());
    let none = OrgLimits::default();
    store.set_limits(&org.id, &none, &unset).await.unwrap();
    let read = store.get_org(&org.id).await.unwrap().unwrap();
    assert_eq!(
        (
            read.monthly_query_quota,
            read.cost_cap_micros,
            read.member_caps
        ),
        (None, None, MemberCaps::UNLIMITED)
    );
    let log = store.list_audit(&org.id, None, 10).await.unwrap();
    assert_eq!(log, [unset.clone(), set]);
    assert!(matches!(
        store.set_limits(&OrgId::generate(), &limits, &unset).await,
        Err(StoreError::Gone)
    ));
}

pub async fn the_operators_changes_are_audited_and_keep_every_other_setting(
    store: Arc<dyn Tested>,
) {
    let org = business_org(&*store).await;
    let limits = OrgLimits {
        quota: Some(7),
        cap_micros: Some(2_500_000),
        member: MemberCaps {
            queries: Some(3),
            cost_micros: None,
        },
    };
    let set = audit(&org.id, AuditAction::OrgLimitsChanged, org.id.as_str());
    store.set_limits(&org.id, &limits, &set).await.unwrap();
    let off = audit(&org.id, AuditAction::OrgMemoryChanged, org.id.as_str());
    store.set_memory(&org.id, false, &off).await.unwrap();

    let changes = OrgChanges {
        plan: Some(Plan::Pro),
        quota: Some(None),
        ..OrgChanges::default()
    };
    let changed = audit(&org.id, AuditAction::OrgChanged, org.id.as_str());
    store.change_org(&org.id, &changes, &changed).await.unwrap();
    let read = store.get_org(&org.id).await.unwrap().unwrap();
    assert_eq!((read.plan, read.monthly_query_quota), (Plan::Pro, None));
    assert_eq!(
        (
            read.status,
            read.cost_cap_micros,
            read.member_caps,
            read.memory_off
        ),
        (org.status, Some(2_500_000), limits.member, true)
    );

    let changes = OrgChanges {
        status: Some(OrgStatus::Active),
        cap_micros: Some(Some(1)),
        ..OrgChanges::default()
    };
    let again = audit(&org.id, AuditAction::OrgChanged, org.id.as_str());
    store.change_org(&org.id, &changes, &again).await.unwrap();
    let read = store.get_org(&org.id).await.unwrap().unwrap();
    assert_eq!(
        (
            read.status,
            read.cost_cap_micros,
            read.plan,
            read.monthly_query_quota
        ),
        (OrgStatus::Active, Some(1), Plan::Pro, None)
    );
    let log = store.list_audit(&org.id, None, 10).await.unwrap();
    assert_eq!(log, [again.clone(), changed, off, set]);
    assert!(matches!(
        store.change_org(&OrgId::generate(), &changes, &again).await,
        Err(StoreError::Gone)
    ));
}

pub async fn concurrent_changes_of_different_settings_all_land(store: Arc<dyn Tested>) {
    let org = business_org(&*store).await;
    let member = MemberCaps {
        queries: Some(9),
        cost_micros: None,
    };
    let limits = OrgLimits {
        member,
        ..OrgLimits::default()
    };
    let plan = OrgChanges {
        plan: Some(Plan::Free),
        ..OrgChanges::default()
    };
    let status = OrgChanges {
        status: Some(OrgStatus::Active),
        ..OrgChanges::default()
    };
    let audits = ["a", "b", "c", "d"].map(|by| {
        let action = match by {
            "b" => AuditAction::OrgMemoryChanged,
            "c" => AuditAction::OrgLimitsChanged,
            _ => AuditAction::OrgChanged,
        };
        audit(&org.id, action, by)
    });
    let (a, b, c, d) = tokio::join!(
        store.change_org(&org.id, &plan, &audits[0]),
        store.set_memory(&org.id, false, &audits[1]),
        store.set_limits(&org.id, &limits, &audits[2]),
        store.change_org(&org.id, &status, &audits[3]),
    );
    for landed in [a, b, c, d] {
        landed.unwrap();
    }
    let read = store.get_org(&org.id).await.unwrap().unwrap();
    assert_eq!(
        (read.plan, read.status, read.memory_off, read.member_caps),
        (Plan::Free, OrgStatus::Active, true, member)
    );
    assert_eq!(store.list_audit(&org.id, None, 10).await.unwrap().len(), 4);
}
