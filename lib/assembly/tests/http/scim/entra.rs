//! The request sequences Microsoft Entra ID sends, from its public documentation.

use knowledge_core::domain::{AuditAction, Role};
use reqwest::Method;
use serde_json::{Value, json};

use super::{CORE, ENTERPRISE, Scim, assert_scim_error};

/// The create body of Microsoft's "Develop a SCIM endpoint" tutorial (request 1 of its user
/// operations), with the enterprise extension.
fn entra_create_body(user_name: &str) -> Value {
    json!({
        "schemas": [CORE, ENTERPRISE],
        "externalId": "0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef",
        "userName": user_name,
        "active": true,
        "emails": [{
            "primary": true,
            "type": "work",
            "value": "Test_User_fd0ea19b-0777-472c-9f96-4f70d2226f2e@testuser.com"
        }],
        "meta": { "resourceType": "User" },
        "name": { "formatted": "givenName familyName", "familyName": "familyName", "givenName": "givenName" },
        "roles": []
    })
}

#[tokio::test]
async fn entra_test_connection_with_a_random_user_name_gets_an_empty_list() {
    let s = Scim::start().await;
    let r = s
        .get("/Users?filter=userName+eq+%22b6e6b0e3-6e3a-4d7e-9c24-b87b7a1c8a93%22")
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["totalResults"], 0);
    assert_eq!(r.body["Resources"], json!([]));
    assert_eq!(
        r.body["schemas"],
        json!(["urn:ietf:params:scim:api:messages:2.0:ListResponse"])
    );
}

#[tokio::test]
async fn entra_creates_a_user_by_searching_its_user_name_then_posting_with_the_enterprise_schema() {
    let s = Scim::start().await;
    let user_name = "Test_User_ab6490ee-1e48-479e-a20b-2d77186b5dd1";
    let search = format!("/Users?filter=userName+eq+%22{user_name}%22");
    assert_eq!(s.get(&search).await.body["totalResults"], 0);
    let mut body = entra_create_body(user_name);
    body[ENTERPRISE] = json!({ "employeeNumber": "701984", "department": "Tour Operations" });
    let r = s.post(body).await;
    assert_eq!(r.status, 201, "{}", r.body);
    let id = r.body["id"].as_str().unwrap();
    assert_eq!(
        r.headers["location"].to_str().unwrap(),
        format!("{}/api/scim/v2/Users/{id}", s.api.base)
    );
    assert_eq!(r.body["schemas"], json!([CORE, ENTERPRISE]));
    assert_eq!(r.body["userName"], user_name);
    assert_eq!(r.body["externalId"], "0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef");
    assert_eq!(r.body["active"], true);
    assert_eq!(
        r.body["name"],
        json!({ "formatted": "givenName familyName" })
    );
    assert_eq!(r.body[ENTERPRISE]["department"], "Tour Operations");
    assert_eq!(r.body["meta"]["resourceType"], "User");
    let found = s.get(&search).await;
    assert_eq!(found.body["totalResults"], 1);
    assert_eq!(found.body["Resources"][0]["id"], id);
    assert_eq!(
        found.body["Resources"][0]["name"]["givenName"], "givenName",
        "reads return the whole name"
    );
    let member = s.member(id).await.unwrap();
    assert_eq!(member.role, Role::Viewer);
}

#[tokio::test]
async fn entra_patch_forms_apply_capitalised_ops_string_booleans_and_filtered_email_paths() {
    let s = Scim::start().await;
    let r = s.post(entra_create_body("ryan@contoso.com")).await;
    let id = r.body["id"].as_str().unwrap().to_owned();
    let boss = s.provision("boss@contoso.com").await;
    let r = s
        .patch(
            &id,
            json!([
                { "op": "Replace", "path": "emails[type eq \"work\"].value", "value": "updatedEmail@microsoft.com" },
                { "op": "Replace", "path": "name.familyName", "value": "updatedFamilyName" },
                { "op": "Replace", "path": "name.givenName", "value": "Ryan" },
                { "op": "Replace", "path": "userName", "value": "ryan.l@contoso.com" },
                { "op": "Replace", "path": "displayName", "value": "Ryan L" },
                { "op": "Replace", "path": "externalId", "value": "ryan-ext" },
                { "op": "Add", "path": format!("{ENTERPRISE}:manager"), "value": boss },
                { "op": "Replace", "path": "active", "value": "True" },
            ]),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["emails"][0]["value"], "updatedEmail@microsoft.com");
    assert_eq!(r.body["emails"][0]["primary"], true);
    assert_eq!(r.body["name"]["familyName"], "updatedFamilyName");
    assert_eq!(r.body["name"]["givenName"], "Ryan");
    assert_eq!(r.body["userName"], "ryan.l@contoso.com");
    assert_eq!(r.body["displayName"], "Ryan L");
    assert_eq!(r.body["externalId"], "ryan-ext");
    assert_eq!(r.body[ENTERPRISE]["manager"]["value"], boss.as_str());
    assert_eq!(r.body["active"], true);
    assert_eq!(s.get(&format!("/Users/{id}")).await.body, r.body);

    let r = s
        .patch(
            &id,
            json!([{ "op": "Replace", "path": "active", "value": "False" }]),
        )
        .await;
    assert_eq!(r.status, 204);
    assert_eq!(r.body, Value::Null, "no body");
    assert_scim_error(&s.get(&format!("/Users/{id}")).await, 404, None);
}

#[tokio::test]
async fn entra_patch_without_path_may_use_dotted_keys_and_deactivate() {
    let s = Scim::start().await;
    let id = s.provision("kim@contoso.com").await;
    let r = s
        .patch(
            &id,
            json!([{ "op": "replace", "value": {
                "name.givenName": "Kim", "name.familyName": "Akers", "title": "Engineer",
                format!("{ENTERPRISE}:department"): "Research",
            } }]),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.body["name"],
        json!({ "givenName": "Kim", "familyName": "Akers", "formatted": "Kim Akers" })
    );
    assert_eq!(r.body["title"], "Engineer");
    assert_eq!(r.body[ENTERPRISE]["department"], "Research");
    let r = s
        .patch(
            &id,
            json!([{ "op": "replace", "value": { "active": false } }]),
        )
        .await;
    assert_eq!(r.status, 204);
    assert_eq!(s.member(&id).await, None);
}

#[tokio::test]
async fn entra_deletes_a_user_with_delete_and_a_second_delete_is_not_found() {
    let s = Scim::start().await;
    let id = s.provision("gone@contoso.com").await;
    let r = s.call(Method::DELETE, &format!("/Users/{id}"), None).await;
    assert_eq!(r.status, 204);
    assert_scim_error(&s.get(&format!("/Users/{id}")).await, 404, None);
    let again = s.call(Method::DELETE, &format!("/Users/{id}"), None).await;
    assert_scim_error(&again, 404, None);
    assert_eq!(
        s.audit_actions().await[3..],
        [AuditAction::UserProvisioned, AuditAction::UserDeleted]
    );
}
