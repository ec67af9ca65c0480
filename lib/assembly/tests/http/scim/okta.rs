//! The request sequences Okta sends, from its public documentation.

use knowledge_core::domain::AuditAction;
use serde_json::{Value, json};

use super::{CORE, Scim, assert_scim_error};

/// The create body of Okta's SCIM 2.0 protocol reference.
pub(super) fn okta_create_body(user_name: &str) -> Value {
    json!({
        "schemas": [CORE],
        "userName": user_name,
        "name": { "givenName": "Test", "familyName": "User" },
        "emails": [{ "primary": true, "value": user_name, "type": "work" }],
        "displayName": "Test User",
        "locale": "en-US",
        "externalId": "00ujl29u0le5T6Aj10h7",
        "groups": [],
        "password": "1mz050nq",
        "active": true
    })
}

#[tokio::test]
async fn okta_creates_a_user_after_a_paged_user_name_search() {
    let s = Scim::start().await;
    let search =
        "/Users?filter=userName%20eq%20%22test.user%40okta.local%22&startIndex=1&count=100";
    let r = s.get(search).await;
    assert_eq!(
        (
            r.body["totalResults"].clone(),
            r.body["startIndex"].clone(),
            r.body["itemsPerPage"].clone()
        ),
        (json!(0), json!(1), json!(0))
    );
    let r = s.post(okta_create_body("test.user@okta.local")).await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert!(r.body.get("password").is_none(), "never returned");
    assert_eq!(r.body["locale"], "en-US");
    assert_eq!(
        r.body["groups"],
        json!([{ "value": "viewer", "display": "viewer", "type": "direct",
                 "$ref": format!("{}/api/scim/v2/Groups/viewer", s.api.base) }])
    );
    let id = r.body["id"].as_str().unwrap();
    let stored = serde_json::to_string(&s.member(id).await.unwrap().profile).unwrap();
    assert!(!stored.contains("1mz050nq"), "the password is not stored");
    let r = s.get(search).await;
    assert_eq!(r.body["totalResults"], 1);
    assert_eq!(r.body["Resources"][0]["id"], id);
}

#[tokio::test]
async fn okta_updates_a_profile_by_put() {
    let s = Scim::start().await;
    let r = s.post(okta_create_body("test.user@okta.local")).await;
    let id = r.body["id"].as_str().unwrap().to_owned();
    let mut body = s.get(&format!("/Users/{id}")).await.body;
    body["name"] = json!({ "givenName": "Another", "familyName": "User" });
    body["emails"] = json!([{ "primary": true, "value": "another@okta.local", "type": "work" }]);
    body.as_object_mut().unwrap().remove("locale");
    let r = s.put(&id, body).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["name"]["givenName"], "Another");
    assert_eq!(r.body["emails"][0]["value"], "another@okta.local");
    assert!(
        r.body.get("locale").is_none(),
        "PUT replaces: what is left out is gone"
    );
    assert_eq!(r.body["meta"]["version"], "W/\"2\"");
    assert_eq!(s.get(&format!("/Users/{id}")).await.body, r.body);
}

#[tokio::test]
async fn okta_deactivates_by_patch() {
    let s = Scim::start().await;
    let id = s.provision("leaver@okta.local").await;
    let r = s
        .patch(
            &id,
            json!([{ "op": "replace", "value": { "active": false } }]),
        )
        .await;
    assert_eq!(r.status, 204);
    assert_scim_error(&s.get(&format!("/Users/{id}")).await, 404, None);
    let r = s
        .get("/Users?filter=userName%20eq%20%22leaver%40okta.local%22&startIndex=1&count=100")
        .await;
    assert_eq!(r.body["totalResults"], 0);
}

#[tokio::test]
async fn okta_deactivates_by_put_with_active_false() {
    let s = Scim::start().await;
    let r = s.post(okta_create_body("wizard@okta.local")).await;
    let id = r.body["id"].as_str().unwrap().to_owned();
    let mut body = r.body.clone();
    body["active"] = json!(false);
    let r = s.put(&id, body).await;
    assert_eq!(r.status, 204);
    assert_eq!(s.member(&id).await, None);
    assert_eq!(
        *s.audit_actions().await.last().unwrap(),
        AuditAction::UserDeactivated
    );
}
