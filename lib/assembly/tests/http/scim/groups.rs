//! Groups: the roles, listed with their members and read-only, beside the groups the identity
//! provider pushes; what a push may not do (take a role's name, change a role, name a user of
//! another organisation) and what deprovisioning does to groups.

use knowledge_core::domain::Role;
use knowledge_core::ids::{GroupId, UserId};
use reqwest::Method;
use serde_json::json;

use super::{GROUP, PATCH_OP, Scim, assert_scim_error};

#[tokio::test]
async fn roles_are_listed_first_with_their_members_and_a_promotion_moves_a_member() {
    let s = Scim::start().await;
    let id = s.provision("ann@x.org").await;
    let r = s.get("/Groups").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body["totalResults"], 2);
    let viewer = &r.body["Resources"][1];
    assert_eq!(viewer["displayName"], "viewer");
    assert_eq!(viewer["members"][0]["value"], id.as_str());
    assert_eq!(viewer["members"][0]["display"], "ann@x.org");
    let admin = s.get("/Groups/admin").await;
    assert_eq!(
        admin.body["members"],
        json!([]),
        "only provisioned members are listed"
    );
    let r = s
        .get("/Groups?filter=displayName+eq+%22Viewer%22&excludedAttributes=members")
        .await;
    assert_eq!(r.body["totalResults"], 1);
    assert!(r.body["Resources"][0].get("members").is_none());
    s.api
        .admin()
        .add_member(s.org(), Some(UserId::parse(&id).unwrap()), Role::Admin)
        .await
        .unwrap();
    assert_eq!(
        s.get("/Groups/admin").await.body["members"][0]["value"],
        id.as_str()
    );
}

#[tokio::test]
async fn a_write_to_a_role_is_refused_with_405_and_changes_nothing() {
    let s = Scim::start().await;
    let id = s.provision("ann@x.org").await;
    let before = s.snapshot().await;
    let groups_before = s.groups().await;
    let writes = [
        (
            Method::PATCH,
            "/Groups/admin",
            json!({ "schemas": [PATCH_OP], "Operations": [
                { "op": "replace", "path": "members", "value": [{ "value": id }] },
            ]}),
        ),
        (
            Method::PATCH,
            "/Groups/viewer",
            json!({ "schemas": [PATCH_OP], "Operations": [{ "op": "remove", "path": "members" }] }),
        ),
        (
            Method::PUT,
            "/Groups/admin",
            json!({ "displayName": "admin", "members": [{ "value": id }] }),
        ),
        (Method::DELETE, "/Groups/viewer", json!({})),
    ];
    for (method, path, body) in writes {
        let r = s.call(method, path, Some(body)).await;
        assert_scim_error(&r, 405, None);
        assert_eq!(r.headers["allow"], "GET");
    }
    assert_eq!(s.snapshot().await, before);
    assert_eq!(s.groups().await, groups_before);
    assert!(s.get("/Groups/admin").await.body["members"] == json!([]));
}

#[tokio::test]
async fn a_push_of_a_group_named_as_a_role_is_refused_as_not_unique_in_any_case() {
    let s = Scim::start().await;
    let before = s.snapshot().await;
    for name in ["admin", "Viewer", " ADMIN "] {
        let r = s
            .create_group(json!({ "schemas": [GROUP], "displayName": name }))
            .await;
        assert_scim_error(&r, 409, Some("uniqueness"));
    }
    let sales = s.create_group(json!({ "displayName": "Sales" })).await;
    let id = sales.body["id"].as_str().unwrap().to_owned();
    let rename = json!({ "schemas": [PATCH_OP], "Operations": [
        { "op": "replace", "path": "displayName", "value": "admin" },
    ]});
    let r = s
        .call(Method::PATCH, &format!("/Groups/{id}"), Some(rename))
        .await;
    assert_scim_error(&r, 409, Some("uniqueness"));
    let r = s.create_group(json!({ "displayName": "SALES" })).await;
    assert_scim_error(&r, 409, Some("uniqueness"));
    assert_eq!(
        s.get(&format!("/Groups/{id}")).await.body["displayName"],
        "Sales"
    );
    assert_eq!(s.snapshot().await.0, before.0);
}

#[tokio::test]
async fn a_membership_for_a_user_of_another_organisation_is_refused_and_writes_nothing() {
    let s = Scim::start().await;
    let theirs = s.other_org().await;
    let other = theirs.provision("eve@y.org").await;
    let ann = s.provision("ann@x.org").await;
    let body = json!({ "displayName": "Sales", "members": [{ "value": ann }, { "value": other.as_str() }] });
    let r = s.create_group(body).await;
    assert_scim_error(&r, 400, Some("invalidValue"));
    assert!(s.groups().await.is_empty(), "nothing is created");

    let sales = s.create_group(json!({ "displayName": "Sales" })).await;
    let id = sales.body["id"].as_str().unwrap().to_owned();
    let before = s.groups().await;
    for value in [other.as_str(), "usr_nobody", "not an id"] {
        let add = json!({ "schemas": [PATCH_OP], "Operations": [
            { "op": "add", "path": "members", "value": [{ "value": ann }] },
            { "op": "add", "path": "members", "value": [{ "value": value }] },
        ]});
        let r = s
            .call(Method::PATCH, &format!("/Groups/{id}"), Some(add))
            .await;
        assert_scim_error(&r, 400, Some("invalidValue"));
    }
    assert_eq!(
        s.groups().await,
        before,
        "not even the valid first operation landed"
    );
    let store = &s.api.svc.store;
    assert!(
        store
            .member_groups(s.org(), &ann.parse().unwrap())
            .await
            .unwrap()
            .is_empty()
    );
    // Another organisation's group is not found.
    let theirs = theirs.create_group(json!({ "displayName": "Sales" })).await;
    assert_eq!(
        theirs.status, 201,
        "the name is free in another organisation"
    );
    let theirs = theirs.body["id"].as_str().unwrap();
    assert_scim_error(&s.get(&format!("/Groups/{theirs}")).await, 404, None);
    let r = s
        .call(Method::DELETE, &format!("/Groups/{theirs}"), None)
        .await;
    assert_scim_error(&r, 404, None);
}

#[tokio::test]
async fn a_deprovisioned_member_is_in_no_group_whichever_way_they_were_removed() {
    let s = Scim::start().await;
    let (ann, bob, cat) = (
        s.provision("ann@x.org").await,
        s.provision("bob@x.org").await,
        s.provision("cat@x.org").await,
    );
    let members = json!([{ "value": ann }, { "value": bob }, { "value": cat }]);
    let sales = s
        .create_group(json!({ "displayName": "Sales", "members": members }))
        .await;
    assert_eq!(sales.status, 201, "{}", sales.body);
    let support = s
        .create_group(json!({ "displayName": "Support", "members": [{ "value": ann }] }))
        .await;
    let (sales, support) = (
        sales.body["id"].as_str().unwrap(),
        support.body["id"].as_str().unwrap(),
    );
    assert_eq!(s.member_ids(sales).await, sorted(&[&ann, &bob, &cat]));

    assert_eq!(
        s.call(Method::DELETE, &format!("/Users/{ann}"), None)
            .await
            .status,
        204
    );
    let r = s
        .patch(
            &bob,
            json!([{ "op": "replace", "path": "active", "value": false }]),
        )
        .await;
    assert_eq!(r.status, 204);
    let cat_id = UserId::parse(&cat).unwrap();
    s.api.admin().remove_member(s.org(), &cat_id).await.unwrap();

    assert!(s.member_ids(sales).await.is_empty());
    assert!(s.member_ids(support).await.is_empty());
    for user in [&ann, &bob, &cat] {
        let groups = s
            .api
            .svc
            .store
            .member_groups(s.org(), &user.parse().unwrap())
            .await;
        assert!(groups.unwrap().is_empty(), "{user} left every group");
    }
    let _ = GroupId::parse(sales).unwrap();
}

fn sorted(ids: &[&String]) -> Vec<String> {
    let mut v: Vec<String> = ids.iter().map(|s| s.to_string()).collect();
    v.sort();
    v
}
