//! Group push: the requests Microsoft Entra ID ("Provision groups") and Okta ("Push Groups")
//! send, reproduced from their public documentation, then renames, paging, filters and
//! replacements, and the audit log of it all.

use knowledge_core::domain::AuditAction;
use reqwest::Method;
use serde_json::json;

use super::{GROUP, Scim, assert_scim_error};

const ENTRA_GROUP: &str =
    "http://schemas.microsoft.com/2006/11/ResourceManagement/ADSCIM/2.0/Group";

#[tokio::test]
async fn entra_creates_finds_renames_fills_empties_and_deletes_a_group() {
    let s = Scim::start().await;
    let (ann, bob) = (
        s.provision("ann@x.org").await,
        s.provision("bob@x.org").await,
    );
    // Entra looks the group up by name first, and finds nothing.
    let q = "/Groups?excludedAttributes=members&filter=displayName+eq+%22Sales%22";
    assert_eq!(s.get(q).await.body["totalResults"], 0);
    let r = s
        .create_group(json!({
            "schemas": [GROUP, ENTRA_GROUP],
            "externalId": "8aa1a0c0-c4c3-4bc0-b4a5-2ef676900159",
            "displayName": "Sales",
            "meta": { "resourceType": "Group" },
        }))
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    let id = r.body["id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("grp_"));
    let location = r.headers["location"].to_str().unwrap();
    assert!(
        location.ends_with(&format!("/api/scim/v2/Groups/{id}")),
        "{location}"
    );
    assert_eq!(r.body["members"], json!([]));
    assert_eq!(r.body["externalId"], "8aa1a0c0-c4c3-4bc0-b4a5-2ef676900159");
    assert_eq!(r.body["meta"]["resourceType"], "Group");
    let found = s.get(q).await;
    assert_eq!(found.body["Resources"][0]["id"], id.as_str());
    assert!(found.body["Resources"][0].get("members").is_none());
    let by_external = s
        .get("/Groups?filter=externalId+eq+%228aa1a0c0-c4c3-4bc0-b4a5-2ef676900159%22")
        .await;
    assert_eq!(by_external.body["totalResults"], 1);

    let rename = json!([{ "op": "Replace", "path": "displayName", "value": "Sales EMEA" }]);
    assert_eq!(s.patch_group(&id, rename).await.status, 204);
    let add = json!([{ "op": "Add", "path": "members", "value": [
        { "$ref": null, "value": ann }, { "$ref": null, "value": bob },
    ]}]);
    assert_eq!(s.patch_group(&id, add).await.status, 204);
    let r = s
        .get(&format!("/Groups/{id}?excludedAttributes=members"))
        .await;
    assert_eq!(r.body["displayName"], "Sales EMEA");
    assert!(r.body.get("members").is_none());
    let mut both = vec![ann.clone(), bob.clone()];
    both.sort();
    assert_eq!(s.member_ids(&id).await, both);
    let remove =
        json!([{ "op": "Remove", "path": "members", "value": [{ "$ref": null, "value": ann }] }]);
    assert_eq!(s.patch_group(&id, remove).await.status, 204);
    assert_eq!(s.member_ids(&id).await, [bob.as_str()]);

    assert_eq!(
        s.call(Method::DELETE, &format!("/Groups/{id}"), None)
            .await
            .status,
        204
    );
    assert_scim_error(&s.get(&format!("/Groups/{id}")).await, 404, None);
    assert_scim_error(
        &s.call(Method::DELETE, &format!("/Groups/{id}"), None).await,
        404,
        None,
    );
    assert!(s.groups().await.is_empty());
}

#[tokio::test]
async fn okta_pushes_a_group_renames_it_by_path_less_replace_and_changes_its_members() {
    let s = Scim::start().await;
    let (ann, bob) = (
        s.provision("ann@x.org").await,
        s.provision("bob@x.org").await,
    );
    let r = s
        .create_group(json!({
            "schemas": [GROUP], "displayName": "Test SCIMv2", "members": [{ "value": ann, "display": "ann@x.org" }],
        }))
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    let id = r.body["id"].as_str().unwrap().to_owned();
    assert_eq!(r.body["members"][0]["display"], "ann@x.org");
    let list = s.get("/Groups?startIndex=1&count=100").await;
    assert_eq!(list.body["totalResults"], 3, "the two roles and the group");
    assert_eq!(list.body["Resources"][2]["id"], id.as_str());

    let rename =
        json!([{ "op": "replace", "value": { "id": id, "displayName": "Test SCIMv2 renamed" } }]);
    assert_eq!(s.patch_group(&id, rename).await.status, 204);
    let swap = json!([
        { "op": "remove", "path": format!("members[value eq \"{ann}\"]") },
        { "op": "add", "path": "members", "value": [{ "value": bob, "display": "bob@x.org" }] },
    ]);
    assert_eq!(s.patch_group(&id, swap).await.status, 204);
    assert_eq!(s.member_ids(&id).await, [bob.as_str()]);
    assert_eq!(
        s.get(&format!("/Groups/{id}")).await.body["displayName"],
        "Test SCIMv2 renamed"
    );

    // A full PUT names the members that stay: the others leave.
    let put = json!({ "schemas": [GROUP], "id": id, "displayName": "Test", "members": [{ "value": ann }] });
    let r = s
        .call(Method::PUT, &format!("/Groups/{id}"), Some(put))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["displayName"], "Test");
    assert_eq!(r.body["members"][0]["value"], ann.as_str());
    assert_eq!(r.body["members"].as_array().unwrap().len(), 1);
    assert_eq!(
        s.call(Method::DELETE, &format!("/Groups/{id}"), None)
            .await
            .status,
        204
    );
}

#[tokio::test]
async fn adding_one_member_writes_one_membership_and_leaves_the_group_as_it_was() {
    let s = Scim::start().await;
    let mut members = Vec::new();
    for i in 0..30 {
        members.push(json!({ "value": s.provision(&format!("m{i}@x.org")).await }));
    }
    let newcomer = s.provision("new@x.org").await;
    let r = s
        .create_group(json!({ "displayName": "Big", "members": members }))
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    let id = r.body["id"].as_str().unwrap().to_owned();
    let version = r.body["meta"]["version"].clone();
    let before = s.audit_actions().await.len();
    let add = json!([{ "op": "add", "path": "members", "value": [{ "value": newcomer }] }]);
    assert_eq!(s.patch_group(&id, add).await.status, 204);
    let after = s.audit_actions().await;
    assert_eq!(after[before..], [AuditAction::GroupMemberAdded]);
    let r = s.get(&format!("/Groups/{id}")).await;
    assert_eq!(
        r.body["meta"]["version"], version,
        "the group itself was not rewritten"
    );
    assert_eq!(r.body["members"].as_array().unwrap().len(), 31);
    // The same add again writes nothing.
    let add = json!([{ "op": "add", "path": "members", "value": [{ "value": newcomer }] }]);
    assert_eq!(s.patch_group(&id, add).await.status, 204);
    assert_eq!(s.audit_actions().await.len(), after.len());
    // Replacing the members with none empties the group, member by member.
    let empty = json!([{ "op": "replace", "path": "members", "value": [] }]);
    assert_eq!(s.patch_group(&id, empty).await.status, 204);
    assert!(s.member_ids(&id).await.is_empty());
}

#[tokio::test]
async fn groups_page_and_filter_as_users_do_and_bad_bodies_are_refused_without_writing() {
    let s = Scim::start().await;
    for name in ["A", "B", "C"] {
        assert_eq!(
            s.create_group(json!({ "displayName": name })).await.status,
            201
        );
    }
    let page = s
        .get("/Groups?startIndex=2&count=2&excludedAttributes=members")
        .await;
    assert_eq!(page.body["totalResults"], 5);
    assert_eq!(page.body["itemsPerPage"], 2);
    assert_eq!(page.body["startIndex"], 2);
    let r = s.get("/Groups?filter=displayName+eq+%22b%22").await;
    assert_eq!(r.body["Resources"][0]["displayName"], "B");
    assert_scim_error(
        &s.get("/Groups?filter=displayName+co+%22b%22").await,
        400,
        Some("invalidFilter"),
    );
    let search = json!({ "schemas": ["urn:ietf:params:scim:api:messages:2.0:SearchRequest"], "filter": "displayName eq \"C\"" });
    let r = s.call(Method::POST, "/Groups/.search", Some(search)).await;
    assert_eq!(r.body["totalResults"], 1);

    let before = s.groups().await;
    for (body, scim_type) in [
        (json!({ "members": [] }), "invalidValue"),
        (json!({ "displayName": "" }), "invalidValue"),
        (json!({ "displayName": "D", "owner": "x" }), "invalidSyntax"),
        (json!([1]), "invalidSyntax"),
    ] {
        assert_scim_error(&s.create_group(body).await, 400, Some(scim_type));
    }
    let a = before.iter().find(|(g, _)| g.display_name == "A");
    let id = a.unwrap().0.id.to_string();
    for (ops, scim_type) in [
        (
            json!([{ "op": "remove", "path": "displayName" }]),
            "mutability",
        ),
        (
            json!([{ "op": "add", "path": "owner", "value": "x" }]),
            "invalidPath",
        ),
        (
            json!([{ "op": "replace", "path": "displayName", "value": "B" }]),
            "uniqueness",
        ),
    ] {
        let r = s.patch_group(&id, ops).await;
        let status = if scim_type == "uniqueness" { 409 } else { 400 };
        assert_scim_error(&r, status, Some(scim_type));
    }
    assert_scim_error(
        &s.patch_group(
            "grp_00000000000000000000000000000000",
            json!([{ "op": "remove", "path": "members" }]),
        )
        .await,
        404,
        None,
    );
    assert_eq!(s.groups().await, before);
}

#[tokio::test]
async fn every_group_change_is_in_the_audit_log_as_the_identity_providers() {
    let s = Scim::start().await;
    let ann = s.provision("ann@x.org").await;
    let r = s
        .create_group(json!({ "displayName": "Sales", "members": [{ "value": ann }] }))
        .await;
    let id = r.body["id"].as_str().unwrap().to_owned();
    s.patch_group(
        &id,
        json!([{ "op": "replace", "path": "displayName", "value": "Revenue" }]),
    )
    .await;
    s.patch_group(&id, json!([{ "op": "remove", "path": "members" }]))
        .await;
    s.call(Method::DELETE, &format!("/Groups/{id}"), None).await;
    let log = s.api.admin().audit_log(s.org(), 5).await.unwrap();
    let actions: Vec<AuditAction> = log.iter().rev().map(|e| e.action).collect();
    assert_eq!(
        actions,
        [
            AuditAction::GroupCreated,
            AuditAction::GroupMemberAdded,
            AuditAction::GroupRenamed,
            AuditAction::GroupMemberRemoved,
            AuditAction::GroupDeleted,
        ]
    );
    assert!(
        log.iter()
            .all(|e| e.actor == knowledge_core::domain::Actor::Scim)
    );
    assert_eq!(log[2].detail.to.as_deref(), Some("Revenue"));
}
