//! The administration functions: SCIM and admin.

use knowledge_aws::functions;
use knowledge_core::clock::{Clock, SystemClock};
use knowledge_core::domain::{
    Actor, AuditAction, AuditEntry, Member, MemberCaps, NewEvent, Role, Session, ToolPolicy,
};
use knowledge_core::ids::{OrgId, SessionId, SessionKey, UserId};
use knowledge_core::ports::{
    DirectoryStore, Gate, GroupStore, QueryCount, RateUpdate, SessionStore,
};
use serde_json::Value;
use tower::ServiceExt;

use crate::support::{Deployment, ORG, USER, requests};

#[tokio::test]
async fn scim_event_provisions_the_entra_user_with_one_read_and_one_transaction() {
    knowledge_test_support::skip_without_dynamodb!();
    let d = Deployment::new().await;
    let (status, body, made) = d.invoke(functions::SCIM).await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(
        body["userName"],
        "Test_User_ab6490ee-1e48-479e-a20b-2d77186b5dd1"
    );
    assert_eq!(made, requests(&[("GetItem", 1), ("TransactWriteItems", 1)]));
    let org = OrgId::parse(ORG).unwrap();
    let user = UserId::parse(body["id"].as_str().unwrap()).unwrap();
    let member = d.store.get_member(&org, &user).await.unwrap().unwrap();
    assert_eq!(member.role, Role::Viewer);
    let profile = member.profile.unwrap();
    assert_eq!(
        profile.external_id.as_deref(),
        Some("0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef")
    );
    let audit = d.store.list_audit(&org, None, 1).await.unwrap();
    assert_eq!(
        (audit[0].action, audit[0].target.as_str()),
        (AuditAction::UserProvisioned, user.as_str())
    );
    // The same token on the function of another endpoint is an unknown route there.
    let response = d
        .router(functions::TRANSCRIPT)
        .await
        .oneshot(d.event(functions::SCIM))
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 404);
}

#[tokio::test]
async fn scim_group_pushes_make_only_the_requests_the_scim_row_declares() {
    knowledge_test_support::skip_without_dynamodb!();
    let d = Deployment::new().await;
    let (status, user, _) = d.invoke(functions::SCIM).await;
    assert_eq!(status, 201, "{user}");
    let user = user["id"].as_str().unwrap().to_owned();
    let group = serde_json::json!({
        "schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group"],
        "displayName": "Finance", "externalId": "8aa1a0c0-c4c3-4bc0-b4a5-2ef676900159",
        "members": [{"value": user}],
    });
    // Each step's requests are checked against the row (`take_checked`): moto does not enforce
    // IAM, so an operation the row leaves out would fail only on AWS.
    let (status, created, _) = d
        .send(functions::SCIM, "POST", "/api/scim/v2/Groups", group)
        .await;
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_str().unwrap().to_owned();
    let path = format!("/api/scim/v2/Groups/{id}");
    let rename = serde_json::json!({
        "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
        "Operations": [{"op": "Replace", "path": "displayName", "value": "Finance EMEA"}],
    });
    let (status, body, _) = d.send(functions::SCIM, "PATCH", &path, rename).await;
    assert_eq!(status, 204, "{body}");
    let remove = serde_json::json!({
        "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
        "Operations": [{"op": "Remove", "path": format!("members[value eq \"{user}\"]")}],
    });
    let (status, body, _) = d.send(functions::SCIM, "PATCH", &path, remove).await;
    assert_eq!(status, 204, "{body}");
    let add = serde_json::json!({
        "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
        "Operations": [{"op": "Add", "path": "members", "value": [{"value": user}]}],
    });
    let (status, body, _) = d.send(functions::SCIM, "PATCH", &path, add).await;
    assert_eq!(status, 204, "{body}");
    let (status, listed, _) = d
        .send(
            functions::SCIM,
            "GET",
            &format!("{path}?attributes=members"),
            Value::Null,
        )
        .await;
    assert_eq!(status, 200, "{listed}");
    assert_eq!(listed["members"][0]["value"], user.as_str());
    // Deprovisioning takes the member out of the group in the same transaction.
    let gone = format!("/api/scim/v2/Users/{user}");
    let (status, body, made) = d.send(functions::SCIM, "DELETE", &gone, Value::Null).await;
    assert_eq!(status, 204, "{body}");
    assert_eq!(made.get("TransactWriteItems"), Some(&1), "{made:?}");
    let org = OrgId::parse(ORG).unwrap();
    let user = UserId::parse(&user).unwrap();
    assert!(d.store.member_groups(&org, &user).await.unwrap().is_empty());
    let (status, body, _) = d.send(functions::SCIM, "DELETE", &path, Value::Null).await;
    assert_eq!(status, 204, "{body}");
    let (status, _, _) = d.send(functions::SCIM, "GET", &path, Value::Null).await;
    assert_eq!(status, 404);
}

/// The sample user becomes an admin of the sample organisation.
pub(crate) async fn promote_the_sample_user(d: &Deployment) {
    let org = OrgId::parse(ORG).unwrap();
    let admin = d
        .store
        .get_member(&org, &d.key.user)
        .await
        .unwrap()
        .unwrap();
    let mut promoted = admin.clone();
    promoted.role = Role::Admin;
    promoted.version += 1;
    let now = SystemClock.now();
    let audit = AuditEntry::new(
        &org,
        now,
        Actor::Admin,
        AuditAction::MemberRoleChanged,
        USER,
    );
    d.store
        .update_member(&admin, &promoted, &audit)
        .await
        .unwrap();
}

/// `user` joins the sample organisation as a viewer.
async fn add_viewer(d: &Deployment, user: &UserId) {
    let org = OrgId::parse(ORG).unwrap();
    let now = SystemClock.now();
    let added = AuditEntry::new(&org, now, Actor::Admin, AuditAction::MemberAdded, USER);
    let viewer = Member::new(org, user.clone(), Role::Viewer, now);
    d.store.create_member(&viewer, &added).await.unwrap();
}

#[tokio::test]
async fn admin_event_promotes_the_member_with_its_audit_entry_naming_the_admin() {
    knowledge_test_support::skip_without_dynamodb!();
    let d = Deployment::new().await;
    let org = OrgId::parse(ORG).unwrap();
    // The sample user administers the organisation; the event promotes another member.
    promote_the_sample_user(&d).await;
    let target = UserId::parse("usr_0123456789abcdef0123456789abcdef").unwrap();
    add_viewer(&d, &target).await;
    d.counter.take();

    let (status, body, _) = d.invoke(functions::ADMIN).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["role"], "admin");
    let stored = d.store.get_member(&org, &target).await.unwrap().unwrap();
    assert_eq!(stored.role, Role::Admin);
    let log = d.store.list_audit(&org, None, 1).await.unwrap();
    assert_eq!(log[0].action, AuditAction::MemberRoleChanged);
    assert_eq!(log[0].by.as_ref(), Some(&d.key.user));
}

#[tokio::test]
async fn admin_usage_reads_the_months_member_counters_in_one_query_and_the_top_members_at_once() {
    knowledge_test_support::skip_without_dynamodb!();
    let d = Deployment::new().await;
    let org = OrgId::parse(ORG).unwrap();
    let now = SystemClock.now();
    promote_the_sample_user(&d).await;
    // Three members asked this month: the report reads all three counters, names the top.
    let month = now.month();
    for n in 0..3 {
        let user = UserId::generate();
        add_viewer(&d, &user).await;
        let key = SessionKey::new(&user, &org, &SessionId::generate());
        let mut session = Session::new(key, "q".into(), now);
        let events = session.place(now, vec![NewEvent::user_message(&format!("q{n}"))]);
        let window = format!("create#{user}");
        let gate = Gate {
            rate: RateUpdate {
                key: &window,
                hits: &[now],
                expected_version: 0,
                expires_at: now,
            },
            query: Some(QueryCount {
                month: &month,
                day: now.day(),
                quota: None,
                cap_micros: None,
                member: MemberCaps::UNLIMITED,
            }),
        };
        d.store
            .create_session(&session, &events, Some(&gate))
            .await
            .unwrap();
    }
    d.counter.take();

    let (status, text, made) = d.invoke_get(functions::ADMIN, "/api/admin/usage").await;
    assert_eq!(status, 200, "{text}");
    let body: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        (body["activeMembers"].clone(), body["queries"].clone()),
        (3.into(), 3.into())
    );
    assert_eq!(body["members"].as_array().unwrap().len(), 3);
    // The days come with the members' counters, in the same Query.
    assert_eq!(body["days"][0]["questions"], serde_json::json!(3));
    // The membership, the organisation and its month's counter; one Query of the members'
    // counters; the members named, at once.
    assert_eq!(
        made,
        requests(&[("GetItem", 3), ("Query", 1), ("BatchGetItem", 1)])
    );

    // The month's export: the membership (guard); a page of the member counters, then its
    // members at once.
    let path = format!("/api/admin/usage/export?month={month}");
    let (status, text, made) = d.invoke_get(functions::ADMIN, &path).await;
    assert_eq!(status, 200, "{text}");
    assert_eq!(text.lines().count(), 1 + 3);
    assert_eq!(
        made,
        requests(&[("GetItem", 1), ("Query", 1), ("BatchGetItem", 1)])
    );

    // A member's own month: the membership (checked, and their allowance) and the
    // organisation together; then their month.
    let (status, text, made) = d.invoke_get(functions::USAGE, "/api/usage").await;
    assert_eq!(status, 200, "{text}");
    assert_eq!(made, requests(&[("GetItem", 1), ("BatchGetItem", 1)]));
}

#[tokio::test]
async fn admin_event_sets_a_tools_rule_in_one_transaction_the_rows_policy_allows() {
    knowledge_test_support::skip_without_dynamodb!();
    let d = Deployment::new().await;
    promote_the_sample_user(&d).await;
    let put = serde_json::json!({ "url": "https://mcp.example.com/mcp" });
    let (status, body, _) = d
        .send(functions::ADMIN, "PUT", "/api/admin/integrations/kb", put)
        .await;
    assert_eq!(status, 200, "{body}");
    let rule = serde_json::json!({ "policy": "block" });
    let path = "/api/admin/integrations/kb/tools/kb_delete";
    let (status, body, made) = d.send(functions::ADMIN, "PUT", path, rule).await;
    assert_eq!(status, 200, "{body}");
    // The membership, the rate window, the organisation, the integrations; then the rule
    // and its audit entry in one transaction.
    assert_eq!(made.get("TransactWriteItems"), Some(&1), "{made:?}");
    assert_eq!(made.get("Query"), Some(&1), "{made:?}");
    let org = OrgId::parse(ORG).unwrap();
    let listed = d.store.list_integrations(&org).await.unwrap();
    assert_eq!(listed[0].tool_rules["kb_delete"].policy, ToolPolicy::Block);
}
