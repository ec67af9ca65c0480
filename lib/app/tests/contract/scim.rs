//! SCIM 2.0 over the real HTTP server: the request sequences Microsoft Entra ID and Okta send,
//! reproduced from their public documentation, then the rules around them (uniqueness,
//! deprovisioning, lists, groups, authentication, audit) and bad input.

use std::collections::BTreeSet;
use std::sync::Arc;

use knowledge_app::operator::OrgChanges;
use knowledge_core::domain::{
    AuditAction, MEMORY_ITEM, Member, MemberData, MemberDataKind, Plan, Role,
};
use knowledge_core::ids::{OrgId, UserId};
use reqwest::Method;
use serde_json::{Value, json};

use crate::support::{Api, GatedAgent, Reply, WAIT};

const CORE: &str = "urn:ietf:params:scim:schemas:core:2.0:User";
const ENTERPRISE: &str = "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User";
const PATCH_OP: &str = "urn:ietf:params:scim:api:messages:2.0:PatchOp";
const ERROR: &str = "urn:ietf:params:scim:api:messages:2.0:Error";

/// The service with the default organisation set up for SCIM: Business plan, SSO enabled, and
/// a token.
struct Scim {
    api: Api,
    token: String,
}

impl Scim {
    async fn start() -> Self {
        Self::on(Api::start().await).await
    }

    async fn on(api: Api) -> Self {
        let org = api.user.org.clone();
        enable_sso(&api, &org).await;
        let token = api.admin().generate_scim_token(&org).await.unwrap();
        Self { api, token }
    }

    fn org(&self) -> &OrgId {
        &self.api.user.org
    }

    /// A request to `/api/scim/v2{path}` as an identity provider sends it.
    async fn call(&self, method: Method, path: &str, body: Option<Value>) -> Reply {
        let mut req = self
            .api
            .http
            .request(method, format!("{}/api/scim/v2{path}", self.api.base))
            .bearer_auth(&self.token);
        if let Some(body) = body {
            req = req
                .header("content-type", "application/scim+json")
                .body(body.to_string());
        }
        self.api.send(req).await
    }

    async fn get(&self, path: &str) -> Reply {
        self.call(Method::GET, path, None).await
    }

    async fn post(&self, body: Value) -> Reply {
        self.call(Method::POST, "/Users", Some(body)).await
    }

    async fn patch(&self, id: &str, ops: Value) -> Reply {
        let body = json!({ "schemas": [PATCH_OP], "Operations": ops });
        self.call(Method::PATCH, &format!("/Users/{id}"), Some(body))
            .await
    }

    async fn put(&self, id: &str, body: Value) -> Reply {
        self.call(Method::PUT, &format!("/Users/{id}"), Some(body))
            .await
    }

    /// Provisions a plain user; returns its id.
    async fn provision(&self, user_name: &str) -> String {
        let r = self
            .post(json!({ "schemas": [CORE], "userName": user_name, "active": true }))
            .await;
        assert_eq!(r.status, 201, "{}", r.body);
        r.body["id"].as_str().unwrap().to_owned()
    }

    async fn member(&self, id: &str) -> Option<Member> {
        self.api
            .svc
            .store
            .get_member(self.org(), &UserId::parse(id).unwrap())
            .await
            .unwrap()
    }

    async fn audit_actions(&self) -> Vec<AuditAction> {
        let mut log = self.api.admin().audit_log(self.org(), 100).await.unwrap();
        log.reverse();
        log.iter().map(|e| e.action).collect()
    }

    /// Everything SCIM can change, to show that a refused request changed nothing.
    async fn snapshot(&self) -> (Vec<Member>, usize) {
        let members = self.api.svc.store.list_members(self.org()).await.unwrap();
        (members, self.audit_actions().await.len())
    }
}

async fn enable_sso(api: &Api, org: &OrgId) {
    api.set_sso(org, true).await;
}

fn assert_scim_error(r: &Reply, status: u16, scim_type: Option<&str>) {
    assert_eq!(r.status, status, "{}", r.body);
    assert_eq!(r.body["schemas"], json!([ERROR]), "{}", r.body);
    assert_eq!(r.body["status"], json!(status.to_string()));
    assert_eq!(r.body["scimType"].as_str(), scim_type, "{}", r.body);
    assert!(r.body["detail"].as_str().is_some_and(|d| !d.is_empty()));
    assert_eq!(
        r.headers["content-type"], "application/scim+json; charset=utf-8",
        "errors are SCIM too"
    );
}

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

/// The create body of Okta's SCIM 2.0 protocol reference.
fn okta_create_body(user_name: &str) -> Value {
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

#[tokio::test]
async fn user_names_are_unique_in_an_organisation_whatever_their_case() {
    let s = Scim::start().await;
    s.provision("Åsa.Berg@Example.org").await;
    let before = s.snapshot().await;
    for clash in ["åsa.berg@example.org", "ÅSA.BERG@EXAMPLE.ORG"] {
        let r = s.post(json!({ "userName": clash })).await;
        assert_scim_error(&r, 409, Some("uniqueness"));
    }
    // Renaming another user onto the name is refused too.
    let other = s.provision("other@example.org").await;
    let before_rename = s.snapshot().await;
    let r = s
        .patch(
            &other,
            json!([{ "op": "replace", "path": "userName", "value": "ÅSA.berg@example.org" }]),
        )
        .await;
    assert_scim_error(&r, 409, Some("uniqueness"));
    assert_eq!(s.snapshot().await, before_rename);
    assert_eq!(before.0.len() + 1, before_rename.0.len());
}

#[tokio::test]
async fn concurrent_creates_of_one_user_name_give_exactly_one_201() {
    let s = Arc::new(Scim::start().await);
    let attempts: Vec<_> = (0..8)
        .map(|i| {
            let s = s.clone();
            tokio::spawn(async move {
                s.post(json!({ "userName": if i % 2 == 0 { "race@x.org" } else { "RACE@x.org" } }))
                    .await
                    .status
            })
        })
        .collect();
    let mut statuses = Vec::new();
    for a in attempts {
        statuses.push(a.await.unwrap());
    }
    statuses.sort();
    assert_eq!(statuses, [201, 409, 409, 409, 409, 409, 409, 409]);
    let r = s
        .get("/Users?filter=userName%20eq%20%22race%40x.org%22")
        .await;
    assert_eq!(r.body["totalResults"], 1);
}

#[tokio::test]
async fn deprovisioning_removes_the_members_data_cancels_their_turns_and_fails_their_cookies() {
    let agent = GatedAgent::new();
    let s = Scim::on(Api::start_with(agent.clone()).await).await;
    let id = s.provision("ann@example.org").await;
    let user = UserId::parse(&id).unwrap();
    let store = &s.api.svc.store;
    // Her agent remembered a note, as its memory tool saves one.
    let session = knowledge_core::ids::SessionId::generate();
    let from = knowledge_core::domain::SavedFrom {
        session: &session,
        seq: 2,
    };
    let now = s.api.clock_now();
    knowledge_core::memory::change(store.as_ref(), s.org(), &user, |m| {
        m.save("Prefers metric units", now, from).map(|_| ())
    })
    .await
    .unwrap()
    .1
    .unwrap();
    for (kind, name) in [(MemberDataKind::IntegrationToken, "crm")] {
        let data = MemberData {
            kind,
            name: name.into(),
            value: "sealed".into(),
        };
        let stored = knowledge_core::domain::AuditEntry::new(
            s.org(),
            s.api.clock_now(),
            knowledge_core::domain::Actor::Admin,
            AuditAction::MemberDataStored,
            user.as_str(),
        );
        store
            .put_member_data(s.org(), &user, &data, &stored)
            .await
            .unwrap();
    }
    // Ann asks a question; her turn is in flight when her account is deactivated.
    let ann = crate::support::User {
        cookie: s.api.cookie(&user, s.org()),
        id: user.clone(),
        org: s.org().clone(),
    };
    let created = s
        .api
        .post_as(
            &ann,
            "/api/managed-agents/session",
            json!({ "text": "Where is the handbook?" }),
        )
        .await;
    assert_eq!(created.status, 200, "{}", created.body);
    agent.asked().await;
    let r = s
        .patch(
            &id,
            json!([{ "op": "Replace", "path": "active", "value": "False" }]),
        )
        .await;
    assert_eq!(r.status, 204);

    assert_eq!(store.list_member_data(s.org(), &user).await.unwrap(), []);
    let memory = store
        .get_member_data(s.org(), &user, MemberDataKind::AgentMemory, MEMORY_ITEM)
        .await;
    assert_eq!(memory.unwrap(), None, "her memory is gone");
    assert_eq!(s.member(&id).await, None);
    let listed = s.api.get_as(&ann, "/api/managed-agents/sessions").await;
    assert_eq!(listed.status, 401, "her cookie fails at once");
    let key = knowledge_core::ids::SessionKey {
        user: user.clone(),
        org: s.org().clone(),
        session: knowledge_core::ids::SessionId::parse(created.body["id"].as_str().unwrap())
            .unwrap(),
    };
    let session = store.get_session(&key).await.unwrap().unwrap();
    assert!(
        session.cancelled_at.is_some(),
        "her running turn is cancelled"
    );
    agent.release(1);
    tokio::time::timeout(WAIT, async {
        loop {
            let events = store.list_events(&key, 0, 100).await.unwrap();
            if events
                .iter()
                .any(|e| e.kind() == knowledge_core::domain::EventKind::StatusTerminated)
            {
                break;
            }
            s.api.svc.workflow.idle().await;
        }
    })
    .await
    .expect("the run ends as cancelled");
    assert_eq!(
        *s.audit_actions().await.last().unwrap(),
        AuditAction::UserDeactivated
    );
}

#[tokio::test]
async fn lists_filter_by_user_name_external_id_email_and_id_joined_by_and() {
    let s = Scim::start().await;
    let r = s.post(okta_create_body("ann@x.org")).await;
    let ann = r.body["id"].as_str().unwrap().to_owned();
    s.provision("bob@x.org").await;
    let cases = [
        ("userName eq \"ANN@x.org\"", 1),
        ("USERNAME EQ \"ann@x.org\"", 1),
        ("externalId eq \"00ujl29u0le5T6Aj10h7\"", 1),
        ("externalId eq \"00UJL29U0LE5T6AJ10H7\"", 0),
        ("emails.value eq \"Ann@X.org\"", 1),
        (&format!("id eq \"{ann}\""), 1),
        (
            "userName eq \"ann@x.org\" and externalId eq \"00ujl29u0le5T6Aj10h7\"",
            1,
        ),
        (
            "userName eq \"bob@x.org\" and externalId eq \"00ujl29u0le5T6Aj10h7\"",
            0,
        ),
        ("userName eq \"*\"", 0),
    ];
    for (filter, expected) in cases {
        let q: String = form_urlencoded::byte_serialize(filter.as_bytes()).collect();
        let r = s.get(&format!("/Users?filter={q}")).await;
        assert_eq!(r.status, 200, "{filter}: {}", r.body);
        assert_eq!(r.body["totalResults"], expected, "{filter}");
        if expected == 1 {
            assert_eq!(r.body["Resources"][0]["id"], ann.as_str(), "{filter}");
        }
    }
}

#[tokio::test]
async fn lists_page_with_start_index_and_count_in_a_stable_order() {
    let s = Scim::start().await;
    let mut ids = BTreeSet::new();
    for i in 0..7 {
        ids.insert(s.provision(&format!("user{i}@x.org")).await);
    }
    let mut seen = Vec::new();
    let mut start = 1;
    loop {
        let r = s.get(&format!("/Users?startIndex={start}&count=3")).await;
        assert_eq!(r.body["totalResults"], 7);
        assert_eq!(r.body["startIndex"], start);
        let page = r.body["Resources"].as_array().unwrap().clone();
        assert_eq!(r.body["itemsPerPage"], page.len());
        if page.is_empty() {
            break;
        }
        seen.extend(page.iter().map(|u| u["id"].as_str().unwrap().to_owned()));
        start += 3;
    }
    assert_eq!(seen.len(), 7);
    assert_eq!(seen.iter().cloned().collect::<BTreeSet<_>>(), ids);
    let again = s.get("/Users?startIndex=1&count=100").await;
    let order: Vec<&str> = again.body["Resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["id"].as_str().unwrap())
        .collect();
    assert_eq!(order, seen, "the same order every time");
    let r = s.get("/Users?count=0").await;
    assert_eq!(
        (r.body["totalResults"].clone(), r.body["Resources"].clone()),
        (json!(7), json!([]))
    );
}

#[tokio::test]
async fn an_unsupported_filter_is_an_invalid_filter_error_not_a_full_list() {
    let s = Scim::start().await;
    s.provision("ann@x.org").await;
    for filter in [
        "userName co \"ann\"",
        "userName sw \"a\"",
        "title eq \"x\"",
        "userName eq \"a\" or userName eq \"b\"",
        "userName pr",
        "emails[type eq \"work\"].value eq \"a\"",
        "userName eq \"unterminated",
    ] {
        let q: String = form_urlencoded::byte_serialize(filter.as_bytes()).collect();
        let r = s.get(&format!("/Users?filter={q}")).await;
        assert_scim_error(&r, 400, Some("invalidFilter"));
    }
}

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

#[tokio::test]
async fn discovery_endpoints_describe_what_is_served_under_both_prefixes() {
    let s = Scim::start().await;
    for prefix in ["/api/scim", "/api/scim/v2"] {
        let get = |path: &str| {
            s.api
                .http
                .get(format!("{}{prefix}{path}", s.api.base))
                .bearer_auth(&s.token)
        };
        let config = s.api.send(get("/ServiceProviderConfig")).await;
        assert_eq!(config.status, 200);
        assert_eq!(
            config.headers["content-type"],
            "application/scim+json; charset=utf-8"
        );
        assert_eq!(config.body["patch"]["supported"], true);
        assert_eq!(config.body["bulk"]["supported"], false);
        assert_eq!(config.body["filter"]["supported"], true);
        let types = s.api.send(get("/ResourceTypes")).await;
        let names: Vec<&str> = types.body["Resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["User", "Group"]);
        let schemas = s.api.send(get("/Schemas")).await;
        let ids: Vec<&str> = schemas.body["Resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["id"].as_str().unwrap())
            .collect();
        assert_eq!(
            ids,
            [
                CORE,
                ENTERPRISE,
                "urn:ietf:params:scim:schemas:core:2.0:Group"
            ]
        );
        let user = s.api.send(get(&format!("/Schemas/{CORE}"))).await;
        let user_name = user.body["attributes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["name"] == "userName")
            .unwrap()
            .clone();
        assert_eq!(
            (
                user_name["required"].clone(),
                user_name["uniqueness"].clone()
            ),
            (json!(true), json!("server"))
        );
        assert_eq!(
            s.api.send(get("/ResourceTypes/User")).await.body["endpoint"],
            "/Users"
        );
    }
}

#[tokio::test]
async fn the_base_url_and_trailing_slashes_are_accepted_as_typed() {
    let s = Scim::start().await;
    s.provision("ann@x.org").await;
    for path in ["/api/scim/v2", "/api/scim/v2/", "/api/scim"] {
        let r = s
            .api
            .send(
                s.api
                    .http
                    .get(format!("{}{path}", s.api.base))
                    .bearer_auth(&s.token),
            )
            .await;
        assert_eq!(r.status, 200, "{path}: {}", r.body);
        assert_eq!(r.body["patch"]["supported"], true, "{path}");
    }
    let r = s
        .get("/Users/?filter=userName+eq+%22ann%40x.org%22&aadOptscim062020")
        .await;
    assert_eq!(r.body["totalResults"], 1);
    assert_eq!(s.get("/Groups/").await.body["totalResults"], 2);
}

#[tokio::test]
async fn a_missing_or_wrong_token_is_401_and_a_new_token_invalidates_the_old() {
    let s = Scim::start().await;
    let url = format!("{}/api/scim/v2/Users", s.api.base);
    let missing = s.api.send(s.api.http.get(&url)).await;
    assert_scim_error(&missing, 401, None);
    let wrong = s
        .api
        .send(s.api.http.get(&url).bearer_auth("kscim.org_default.00"))
        .await;
    assert_scim_error(&wrong, 401, None);
    let basic = s
        .api
        .send(s.api.http.get(&url).basic_auth("user", Some(&s.token)))
        .await;
    assert_scim_error(&basic, 401, None);
    let old = s.token.clone();
    let new = s.api.admin().generate_scim_token(s.org()).await.unwrap();
    assert_ne!(old, new);
    assert_scim_error(
        &s.api.send(s.api.http.get(&url).bearer_auth(&old)).await,
        401,
        None,
    );
    assert_eq!(
        s.api
            .send(s.api.http.get(&url).bearer_auth(&new))
            .await
            .status,
        200
    );
    let org = s.api.svc.store.get_org(s.org()).await.unwrap().unwrap();
    let stored = org.scim_token_sha256.unwrap();
    assert!(
        !stored.contains(&new[new.len() - 64..]),
        "only a hash is stored"
    );
}

#[tokio::test]
async fn scim_needs_the_business_plan_and_sso_after_the_token_check() {
    let s = Scim::start().await;
    let org = s.org().clone();
    // The Pro plan with SSO on, then the Business plan with SSO off.
    for (plan, sso) in [(Plan::Pro, true), (Plan::Business, false)] {
        let changes = OrgChanges {
            plan: Some(plan),
            ..Default::default()
        };
        s.api.admin().update_org(&org, changes).await.unwrap();
        s.api.set_sso(&org, sso).await;
        assert_scim_error(&s.get("/Users").await, 403, None);
        let r = s
            .api
            .send(s.api.http.get(format!("{}/api/scim/Users", s.api.base)))
            .await;
        assert_scim_error(&r, 401, None);
    }
    enable_sso(&s.api, &org).await;
    assert_eq!(s.get("/Users").await.status, 200);
}

#[tokio::test]
async fn another_organisations_users_are_not_found_with_its_token() {
    let s = Scim::start().await;
    let id = s.provision("ann@x.org").await;
    let other = OrgId::parse("org_other").unwrap();
    s.api
        .admin()
        .create_org(Some(other.clone()), "Other", Plan::Business)
        .await
        .unwrap();
    s.api.set_sso(&other, true).await;
    let theirs = Scim {
        token: s.api.admin().generate_scim_token(&other).await.unwrap(),
        api: Api::start_on(
            s.api.dir.clone(),
            Arc::new(knowledge_core::adapters::agent::BuiltinAgent),
        )
        .await,
    };
    assert_scim_error(&theirs.get(&format!("/Users/{id}")).await, 404, None);
    assert_eq!(theirs.get("/Users").await.body["totalResults"], 0);
    let r = theirs
        .patch(
            &id,
            json!([{ "op": "replace", "value": { "active": false } }]),
        )
        .await;
    assert_scim_error(&r, 404, None);
    assert_scim_error(
        &theirs
            .call(Method::DELETE, &format!("/Users/{id}"), None)
            .await,
        404,
        None,
    );
    assert!(s.member(&id).await.is_some());
    // The same userName is free in the other organisation.
    assert_eq!(
        theirs.post(json!({ "userName": "ann@x.org" })).await.status,
        201
    );
}

#[tokio::test]
async fn every_write_and_token_generation_is_in_the_audit_log() {
    let s = Scim::start().await;
    let id = s.provision("ann@x.org").await;
    s.patch(
        &id,
        json!([{ "op": "add", "path": "title", "value": "CTO" }]),
    )
    .await;
    s.put(&id, json!({ "userName": "ann@x.org", "active": false }))
        .await;
    let bob = s.provision("bob@x.org").await;
    s.call(Method::DELETE, &format!("/Users/{bob}"), None).await;
    let log = s.api.admin().audit_log(s.org(), 100).await.unwrap();
    let entries: Vec<(AuditAction, &str, &str)> = log
        .iter()
        .rev()
        .map(|e| (e.action, e.actor.as_str(), e.target.as_str()))
        .collect();
    assert_eq!(
        entries[1..],
        [
            (AuditAction::SsoConfigured, "admin", "org_default"),
            (AuditAction::ScimTokenGenerated, "admin", "org_default"),
            (AuditAction::UserProvisioned, "scim", id.as_str()),
            (AuditAction::UserUpdated, "scim", id.as_str()),
            (AuditAction::UserDeactivated, "scim", id.as_str()),
            (AuditAction::UserProvisioned, "scim", bob.as_str()),
            (AuditAction::UserDeleted, "scim", bob.as_str()),
        ]
    );
    assert_eq!(
        entries[0].0,
        AuditAction::MemberAdded,
        "the bootstrap admin"
    );
}

/// `n` distinct work addresses.
fn many_emails(n: usize) -> Value {
    (0..n)
        .map(|i| json!({ "value": format!("user{i:05}@example.org"), "type": "work" }))
        .collect()
}

#[tokio::test]
async fn bad_input_gets_a_clear_scim_error_and_changes_nothing() {
    let s = Scim::start().await;
    let id = s.provision("ann@x.org").await;
    let before = s.snapshot().await;
    let url = |path: &str| format!("{}/api/scim/v2{path}", s.api.base);
    let send = |method: Method, path: &str, content_type: &str, body: Vec<u8>| {
        s.api
            .http
            .request(method, url(path))
            .bearer_auth(&s.token)
            .header("content-type", content_type)
            .body(body)
    };
    let json_type = "application/json";
    let cases: Vec<(reqwest::RequestBuilder, u16, Option<&str>)> = vec![
        (send(Method::POST, "/Users", json_type, b"{\"userName\": ".to_vec()), 400, Some("invalidSyntax")),
        (send(Method::POST, "/Users", json_type, vec![0xff, 0xfe]), 400, Some("invalidSyntax")),
        (send(Method::POST, "/Users", json_type, b"[]".to_vec()), 400, Some("invalidSyntax")),
        (
            send(Method::POST, "/Users", json_type, format!("{{\"userName\": \"{}\"}}", "a".repeat(2 << 20)).into_bytes()),
            413,
            None,
        ),
        (send(Method::POST, "/Users", "text/plain", b"{\"userName\": \"x\"}".to_vec()), 415, None),
        (send(Method::POST, "/Users", json_type, json!({ "userName": "x", "shoeSize": 44 }).to_string().into_bytes()), 400, Some("invalidSyntax")),
        (send(Method::POST, "/Users", json_type, json!({ "userName": "x", "name": { "nick": "y" } }).to_string().into_bytes()), 400, Some("invalidSyntax")),
        (send(Method::POST, "/Users", json_type, json!({ "userName": "x\r\nSet-Cookie: a=b" }).to_string().into_bytes()), 400, Some("invalidValue")),
        (send(Method::POST, "/Users", json_type, json!({ "userName": 42 }).to_string().into_bytes()), 400, Some("invalidValue")),
        (send(Method::POST, "/Users", json_type, json!({ "name": { "givenName": "x" } }).to_string().into_bytes()), 400, Some("invalidValue")),
        (send(Method::POST, "/Users", json_type, json!({ "userName": "ann@x.org" }).to_string().into_bytes()), 409, Some("uniqueness")),
        (send(Method::POST, "/Users", json_type, json!({ "userName": "new@x.org", "active": false }).to_string().into_bytes()), 400, Some("invalidValue")),
        (
            send(Method::PATCH, &format!("/Users/{id}"), json_type, json!({ "schemas": [PATCH_OP], "Operations": [{ "op": "replace", "path": "shoeSize", "value": 1 }] }).to_string().into_bytes()),
            400,
            Some("invalidPath"),
        ),
        (
            send(Method::PATCH, &format!("/Users/{id}"), json_type, json!({ "schemas": [PATCH_OP], "Operations": [{ "op": "replace", "path": "active", "value": "nope" }] }).to_string().into_bytes()),
            400,
            Some("invalidValue"),
        ),
        (
            send(Method::PATCH, &format!("/Users/{id}"), json_type, json!({ "schemas": [PATCH_OP], "Operations": [{ "op": "remove" }] }).to_string().into_bytes()),
            400,
            Some("noTarget"),
        ),
        (send(Method::PUT, &format!("/Users/{id}"), json_type, json!({ "userName": "" }).to_string().into_bytes()), 400, Some("invalidValue")),
        // Sixteen thousand addresses (661 KiB, under the body limit) once stalled every tenant.
        (
            send(Method::PATCH, &format!("/Users/{id}"), json_type, json!({ "schemas": [PATCH_OP], "Operations": [{ "op": "add", "path": "emails", "value": many_emails(16_000) }] }).to_string().into_bytes()),
            400,
            Some("invalidValue"),
        ),
        (send(Method::PUT, &format!("/Users/{id}"), json_type, json!({ "userName": "ann@x.org", "emails": many_emails(101) }).to_string().into_bytes()), 400, Some("invalidValue")),
        (send(Method::GET, "/Users/usr_x%0D%0ASet-Cookie:%20a=b", json_type, vec![]), 404, None),
        (send(Method::DELETE, "/Users/%0D%0A", json_type, vec![]), 404, None),
        (send(Method::GET, "/Users?filter=userName%20eq%20%22a%22%22%0D%0A", json_type, vec![]), 400, Some("invalidFilter")),
        (send(Method::GET, "/Users?startIndex=one", json_type, vec![]), 400, Some("invalidValue")),
        (send(Method::GET, "/Nope%0D%0A", json_type, vec![]), 404, None),
    ];
    for (req, status, scim_type) in cases {
        let r = s.api.send(req).await;
        assert_scim_error(&r, status, scim_type);
        for (name, value) in &r.headers {
            let value = value.to_str().unwrap_or("");
            assert!(
                !value.contains("Set-Cookie") && !value.contains("a=b") && name != "set-cookie",
                "{name}: {value}"
            );
        }
    }
    assert_eq!(s.snapshot().await, before);
}

#[tokio::test]
async fn unicode_names_are_kept_exactly_and_compared_without_case() {
    let s = Scim::start().await;
    let r = s
        .post(json!({
            "userName": "Zoë.Ångström@例え.jp",
            "name": { "givenName": "Zoë", "familyName": "Ångström", "formatted": "Zoë Ångström 🚀" },
            "displayName": "ゾーイ",
        }))
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    let id = r.body["id"].as_str().unwrap();
    let read = s.get(&format!("/Users/{id}")).await;
    assert_eq!(read.body["userName"], "Zoë.Ångström@例え.jp");
    assert_eq!(read.body["name"]["formatted"], "Zoë Ångström 🚀");
    assert_eq!(read.body["displayName"], "ゾーイ");
    let q: String =
        form_urlencoded::byte_serialize("userName eq \"ZOË.ÅNGSTRÖM@例え.JP\"".as_bytes())
            .collect();
    assert_eq!(
        s.get(&format!("/Users?filter={q}")).await.body["totalResults"],
        1
    );
}
