//! Groups: the roles with their members, read-only.

use knowledge_core::domain::Role;
use knowledge_core::ids::UserId;
use reqwest::Method;
use serde_json::json;

use super::{PATCH_OP, Scim, assert_scim_error};

#[tokio::test]
async fn groups_are_the_roles_with_their_members_and_refuse_writes() {
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
    // Promoting Ann in the service moves her between groups.
    s.api
        .admin()
        .add_member(s.org(), Some(UserId::parse(&id).unwrap()), Role::Admin)
        .await
        .unwrap();
    assert_eq!(
        s.get("/Groups/admin").await.body["members"][0]["value"],
        id.as_str()
    );
    let before = s.snapshot().await;
    let writes = [
        (Method::POST, "/Groups", json!({ "displayName": "Sales" })),
        (
            Method::PATCH,
            "/Groups/viewer",
            json!({ "schemas": [PATCH_OP], "Operations": [] }),
        ),
        (
            Method::PUT,
            "/Groups/viewer",
            json!({ "displayName": "viewer" }),
        ),
        (Method::DELETE, "/Groups/viewer", json!({})),
    ];
    for (method, path, body) in writes {
        let r = s.call(method, path, Some(body)).await;
        assert_scim_error(&r, 405, None);
        assert_eq!(r.headers["allow"], "GET");
    }
    assert_eq!(s.snapshot().await, before);
    assert_scim_error(&s.get("/Groups/sales").await, 404, None);
}
