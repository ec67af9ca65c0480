//! The admin API over the real server: who may call it, what each route changes and records,
//! what it refuses without changing anything, and the last-admin guard under concurrency.

use knowledge_core::domain::{AuditAction, EventKind, Role};
use knowledge_core::ids::{OrgId, SessionId, SessionKey, UserId};
use knowledge_mcp::test_server::start as mcp_server;
use reqwest::Method;
use serde_json::{Value, json};

use crate::support::{Api, GatedAgent, User, WAIT, admin, admin_as as call};

const ADMIN: &str = "/api/admin";

/// A new member of the default organisation with `role`.
async fn member(api: &Api, role: Role) -> User {
    let user = api.new_user(&api.user.org).await;
    if role == Role::Admin {
        (api.admin())
            .add_member(&user.org, Some(user.id.clone()), Role::Admin)
            .await
            .unwrap();
    }
    user
}

async fn role_of(api: &Api, user: &UserId) -> Option<Role> {
    let m = api.svc.store.get_member(&api.user.org, user).await.unwrap();
    m.map(|m| m.role)
}

/// The organisation's audit log as (action, target, by), newest first.
async fn audit(api: &Api) -> Vec<(AuditAction, String, Option<UserId>)> {
    let log = (api.svc.store)
        .list_audit(&api.user.org, None, 1000)
        .await
        .unwrap();
    log.into_iter()
        .map(|e| (e.action, e.target, e.by))
        .collect()
}

/// Every admin route with a body it accepts.
fn routes(someone: &UserId) -> Vec<(Method, String, Option<Value>)> {
    let sso = json!({ "issuer": "https://idp.example.com", "clientId": "c", "clientSecret": "s" });
    vec![
        (Method::GET, "/members".into(), None),
        (
            Method::POST,
            "/members".into(),
            Some(json!({ "userName": "new@example.org" })),
        ),
        (
            Method::PATCH,
            format!("/members/{someone}"),
            Some(json!({ "role": "admin" })),
        ),
        (Method::DELETE, format!("/members/{someone}"), None),
        (
            Method::PUT,
            format!("/members/{someone}/caps"),
            Some(json!({ "questionCap": 5 })),
        ),
        (Method::DELETE, format!("/members/{someone}/caps"), None),
        (Method::GET, "/sso".into(), None),
        (Method::PUT, "/sso".into(), Some(sso)),
        (
            Method::PUT,
            "/sso/enabled".into(),
            Some(json!({ "enabled": true })),
        ),
        (
            Method::POST,
            "/sso/test".into(),
            Some(json!({ "issuer": "https://idp.example.com" })),
        ),
        (Method::GET, "/scim".into(), None),
        (Method::POST, "/scim/token".into(), None),
        (Method::GET, "/integrations".into(), None),
        (
            Method::PUT,
            "/integrations/crm".into(),
            Some(json!({ "url": "https://mcp.example.com/mcp" })),
        ),
        (Method::DELETE, "/integrations/crm".into(), None),
        (Method::POST, "/integrations/crm/test".into(), None),
        (
            Method::PUT,
            "/integrations/crm/tools/crm_search".into(),
            Some(json!({ "policy": "ask" })),
        ),
        (
            Method::DELETE,
            "/integrations/crm/tools/crm_search".into(),
            None,
        ),
        (Method::GET, "/integrations/crm/credentials".into(), None),
        (
            Method::PUT,
            format!("/integrations/crm/credentials/{someone}"),
            Some(json!({ "token": "t" })),
        ),
        (Method::GET, "/usage".into(), None),
        (
            Method::PUT,
            "/usage/limits".into(),
            Some(json!({ "monthlyQueryQuota": 5 })),
        ),
        (Method::GET, "/audit".into(), None),
    ]
}

#[tokio::test]
async fn every_admin_route_refuses_a_viewer_with_403_and_no_cookie_with_401_changing_nothing() {
    let api = Api::start().await;
    let viewer = member(&api, Role::Viewer).await;
    let before = audit(&api).await;
    let anonymous = User {
        cookie: String::new(),
        ..viewer.clone()
    };
    for (method, path, body) in routes(&viewer.id) {
        let r = call(&api, &viewer, method.clone(), &path, body.clone()).await;
        assert_eq!((r.status, r.code()), (403, "admin_only"), "{method} {path}");
        let r = call(&api, &anonymous, method.clone(), &path, body).await;
        assert_eq!(r.status, 401, "{method} {path}");
    }
    assert_eq!(audit(&api).await, before);
    assert_eq!(role_of(&api, &viewer.id).await, Some(Role::Viewer));
    let r = admin(&api, Method::GET, "/nothing-here", None).await;
    assert_eq!(r.status, 404);
}

#[tokio::test]
async fn a_write_without_the_applications_origin_is_refused_and_changes_nothing() {
    let api = Api::start().await;
    let viewer = member(&api, Role::Viewer).await;
    let url = format!("{}{ADMIN}/members/{}", api.base, viewer.id);
    for origin in [None, Some("https://evil.example")] {
        let mut req = (api.http)
            .patch(&url)
            .header("cookie", &api.user.cookie)
            .json(&json!({ "role": "admin" }));
        if let Some(o) = origin {
            req = req.header("origin", o);
        }
        let r = api.send(req).await;
        assert_eq!((r.status, r.code()), (403, "origin_forbidden"));
    }
    assert_eq!(role_of(&api, &viewer.id).await, Some(Role::Viewer));
}

#[tokio::test]
async fn a_promotion_and_a_demotion_change_the_role_and_record_the_admin_who_made_them() {
    let api = Api::start().await;
    let viewer = member(&api, Role::Viewer).await;
    let path = format!("/members/{}", viewer.id);
    let r = admin(&api, Method::PATCH, &path, Some(json!({ "role": "admin" }))).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["role"], "admin");
    assert_eq!(role_of(&api, &viewer.id).await, Some(Role::Admin));
    // The promoted member now reaches the admin routes.
    let r = call(&api, &viewer, Method::GET, "/members", None).await;
    assert_eq!(r.status, 200);
    let r = admin(
        &api,
        Method::PATCH,
        &path,
        Some(json!({ "role": "viewer" })),
    )
    .await;
    assert_eq!(r.body["role"], "viewer");
    let log = audit(&api).await;
    let changes: Vec<_> = log
        .iter()
        .filter(|(a, ..)| *a == AuditAction::MemberRoleChanged)
        .collect();
    assert_eq!(changes.len(), 2);
    for (_, target, by) in changes {
        assert_eq!(
            (target.as_str(), by.as_ref()),
            (viewer.id.as_str(), Some(&api.user.id))
        );
    }
}

#[tokio::test]
async fn the_last_admin_can_be_neither_demoted_nor_removed() {
    let api = Api::start().await;
    let me = format!("/members/{}", api.user.id);
    let r = admin(&api, Method::PATCH, &me, Some(json!({ "role": "viewer" }))).await;
    assert_eq!((r.status, r.code()), (409, "last_admin"));
    let r = admin(&api, Method::DELETE, &me, None).await;
    assert_eq!((r.status, r.code()), (409, "last_admin"));
    assert_eq!(role_of(&api, &api.user.id).await, Some(Role::Admin));
    // With a second admin, the first may step down.
    member(&api, Role::Admin).await;
    let r = admin(&api, Method::PATCH, &me, Some(json!({ "role": "viewer" }))).await;
    assert_eq!(r.status, 200, "{}", r.body);
}

#[tokio::test]
async fn two_admins_demoting_each_other_at_once_leave_one_admin() {
    let api = Api::start().await;
    for _ in 0..8 {
        let (a, b) = (
            member(&api, Role::Admin).await,
            member(&api, Role::Admin).await,
        );
        // The default admin steps down first, so a and b are the only admins.
        let me = format!("/members/{}", api.user.id);
        let demote = json!({ "role": "viewer" });
        let r = call(&api, &a, Method::PATCH, &me, Some(demote.clone())).await;
        assert_eq!(r.status, 200, "{}", r.body);
        let (path_a, path_b) = (format!("/members/{}", a.id), format!("/members/{}", b.id));
        let (ra, rb) = tokio::join!(
            call(&api, &a, Method::PATCH, &path_b, Some(demote.clone())),
            call(&api, &b, Method::PATCH, &path_a, Some(demote.clone())),
        );
        let statuses = [ra.status, rb.status];
        assert!(statuses.contains(&200), "{statuses:?}");
        let admins = [role_of(&api, &a.id).await, role_of(&api, &b.id).await];
        let left = admins.iter().filter(|r| **r == Some(Role::Admin)).count();
        assert_eq!(left, 1, "{statuses:?}");
        // The one refused was refused as the last admin, or (demoted first) as a viewer.
        for r in [ra, rb].iter().filter(|r| r.status != 200) {
            assert!(
                [
                    (409, "last_admin"),
                    (403, "admin_only"),
                    (401, "unauthenticated")
                ]
                .contains(&(r.status, r.code())),
                "{} {}",
                r.status,
                r.body
            );
        }
        // The survivor hands back to the default admin, who is the only admin again.
        let survivor = if admins[0] == Some(Role::Admin) {
            &a
        } else {
            &b
        };
        let promote = json!({ "role": "admin" });
        let r = call(&api, survivor, Method::PATCH, &me, Some(promote)).await;
        assert_eq!(r.status, 200);
        let r = admin(
            &api,
            Method::PATCH,
            &format!("/members/{}", survivor.id),
            Some(demote),
        )
        .await;
        assert_eq!(r.status, 200);
    }
}

#[tokio::test]
async fn a_member_added_by_user_name_is_a_viewer_and_a_taken_name_is_refused_without_change() {
    let api = Api::start().await;
    let body = json!({ "userName": "Dee@Example.org" });
    let r = admin(&api, Method::POST, "/members", Some(body)).await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(
        (r.body["role"].clone(), r.body["userName"].clone()),
        (json!("viewer"), json!("Dee@Example.org"))
    );
    let user = UserId::parse(r.body["userId"].as_str().unwrap()).unwrap();
    let stored = api
        .svc
        .store
        .get_member(&api.user.org, &user)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.profile.unwrap().user_name, "Dee@Example.org");
    let log = audit(&api).await;
    assert_eq!(
        log[0],
        (
            AuditAction::MemberAdded,
            user.to_string(),
            Some(api.user.id.clone())
        )
    );
    // The same name in another case is taken; nothing is written.
    let again = json!({ "userName": "dee@example.ORG", "role": "admin" });
    let r = admin(&api, Method::POST, "/members", Some(again)).await;
    assert_eq!((r.status, r.code()), (409, "user_name_taken"));
    for bad in [
        json!({ "userName": "  " }),
        json!({}),
        json!({ "userName": "x", "role": "owner" }),
    ] {
        let r = admin(&api, Method::POST, "/members", Some(bad.clone())).await;
        assert_eq!(r.status, 400, "{bad}: {}", r.body);
    }
    assert_eq!(audit(&api).await, log);
    assert_eq!(
        api.svc
            .store
            .list_members(&api.user.org)
            .await
            .unwrap()
            .len(),
        2
    );
}

#[tokio::test]
async fn members_are_listed_in_pages_and_found_by_user_name_without_case() {
    let api = Api::start().await;
    let admin_cli = api.admin();
    let org = api.user.org.clone();
    let mut named = Vec::new();
    for name in ["ann@example.org", "bob@example.org", "Anna.Lee@example.org"] {
        let user = member(&api, Role::Viewer).await;
        admin_cli.name_member(&org, &user.id, name).await.unwrap();
        named.push(user.id);
    }
    let r = admin(&api, Method::GET, "/members?q=ANN", None).await;
    assert_eq!(r.status, 200);
    let mut found: Vec<&str> = r.body["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["userName"].as_str().unwrap())
        .collect();
    found.sort();
    assert_eq!(found, ["Anna.Lee@example.org", "ann@example.org"]);
    // Four members in pages of three: every one exactly once.
    let mut seen = Vec::new();
    let mut path = "/members?limit=3".to_owned();
    loop {
        let page = admin(&api, Method::GET, &path, None).await;
        assert_eq!(page.status, 200, "{}", page.body);
        for m in page.body["members"].as_array().unwrap() {
            seen.push(m["userId"].as_str().unwrap().to_owned());
        }
        match page.body["next"].as_str() {
            Some(next) => path = format!("/members?limit=3&after={next}"),
            None => break,
        }
    }
    let mut expected: Vec<String> = named.iter().map(|u| u.to_string()).collect();
    expected.push(api.user.id.to_string());
    expected.sort();
    assert_eq!(seen, expected);
}

#[tokio::test]
async fn bad_input_is_400_in_the_documented_body_and_changes_nothing() {
    let api = Api::start().await;
    let viewer = member(&api, Role::Viewer).await;
    let org_before = api.svc.store.get_org(&api.user.org).await.unwrap();
    let log_before = audit(&api).await;
    let cases = [
        (
            Method::PATCH,
            format!("/members/{}", viewer.id),
            json!({ "role": "owner" }),
        ),
        (Method::PATCH, format!("/members/{}", viewer.id), json!({})),
        (
            Method::PATCH,
            "/members/bad!id".into(),
            json!({ "role": "admin" }),
        ),
        (
            Method::PUT,
            "/usage/limits".into(),
            json!({ "costCapUsd": -1 }),
        ),
        (
            Method::PUT,
            "/usage/limits".into(),
            json!({ "monthlyQueryQuota": "many" }),
        ),
        (
            Method::PUT,
            "/integrations/Bad_Name".into(),
            json!({ "url": "https://x.example" }),
        ),
        (
            Method::PUT,
            "/integrations/crm".into(),
            json!({ "url": "ftp://x.example" }),
        ),
        (
            Method::PUT,
            "/integrations/crm".into(),
            json!({ "url": "https://x.example", "auth": "sometimes" }),
        ),
        (
            Method::PUT,
            "/sso".into(),
            json!({ "issuer": "not a url", "clientId": "c", "clientSecret": "s" }),
        ),
        (
            Method::PUT,
            "/sso".into(),
            json!({ "issuer": "https://idp.example.com", "clientId": "c" }),
        ),
        (
            Method::POST,
            "/sso/test".into(),
            json!({ "issuer": "ftp://idp.example.com" }),
        ),
        (
            Method::PUT,
            "/sso/enabled".into(),
            json!({ "enabled": "yes" }),
        ),
    ];
    for (method, path, body) in cases {
        let r = admin(&api, method.clone(), &path, Some(body.clone())).await;
        assert_eq!(r.status, 400, "{method} {path} {body}: {}", r.body);
        assert!(r.body["error"]["code"].is_string(), "{}", r.body);
        assert!(r.body["error"]["message"].is_string(), "{}", r.body);
    }
    for query in [
        "/members?limit=0",
        "/members?after=bad!id",
        "/audit?before=x",
        "/audit?action=nope",
        "/audit?limit=101",
    ] {
        let r = admin(&api, Method::GET, query, None).await;
        assert_eq!(r.status, 400, "{query}: {}", r.body);
    }
    let r = (api.http)
        .put(format!("{}{ADMIN}/usage/limits", api.base))
        .header("cookie", &api.user.cookie)
        .header("origin", &api.origin)
        .header("content-type", "text/plain")
        .body("{}");
    assert_eq!(api.send(r).await.status, 415);
    assert_eq!(role_of(&api, &viewer.id).await, Some(Role::Viewer));
    assert_eq!(
        api.svc.store.get_org(&api.user.org).await.unwrap(),
        org_before
    );
    assert!(
        api.svc
            .store
            .list_integrations(&api.user.org)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(audit(&api).await, log_before);
}

#[tokio::test]
async fn another_organisations_member_and_integration_are_not_found() {
    let api = Api::start().await;
    let other = OrgId::generate();
    let stranger = api.new_user(&other).await;
    (api.admin())
        .connect_integration(
            &other,
            "crm",
            "https://mcp.example.com/mcp",
            knowledge_core::domain::IntegrationAuth::None,
        )
        .await
        .unwrap();
    let path = format!("/members/{}", stranger.id);
    let r = admin(&api, Method::PATCH, &path, Some(json!({ "role": "admin" }))).await;
    assert_eq!((r.status, r.code()), (404, "not_found"));
    let r = admin(&api, Method::DELETE, &path, None).await;
    assert_eq!(r.status, 404);
    for (method, path) in [
        (Method::DELETE, "/integrations/crm"),
        (Method::POST, "/integrations/crm/test"),
        (Method::GET, "/integrations/crm/credentials"),
    ] {
        assert_eq!(admin(&api, method, path, None).await.status, 404, "{path}");
    }
    let stored = api
        .svc
        .store
        .get_member(&other, &stranger.id)
        .await
        .unwrap();
    assert_eq!(stored.map(|m| m.role), Some(Role::Viewer));
    assert_eq!(
        api.svc.store.list_integrations(&other).await.unwrap().len(),
        1
    );
}

#[tokio::test]
async fn removing_a_member_cancels_their_running_turn_and_ends_their_cookie_at_once() {
    let agent = GatedAgent::new();
    let api = Api::start_with(agent.clone()).await;
    let ann = member(&api, Role::Viewer).await;
    let created = (api)
        .post_as(
            &ann,
            "/api/managed-agents/session",
            json!({ "text": "Where is the handbook?" }),
        )
        .await;
    assert_eq!(created.status, 200, "{}", created.body);
    agent.asked().await;
    let r = admin(&api, Method::DELETE, &format!("/members/{}", ann.id), None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["cancelledTurns"], 1);
    assert_eq!(
        api.get_as(&ann, "/api/managed-agents/sessions")
            .await
            .status,
        401
    );
    let key = SessionKey {
        user: ann.id.clone(),
        org: ann.org.clone(),
        session: SessionId::parse(created.body["id"].as_str().unwrap()).unwrap(),
    };
    agent.release(1);
    tokio::time::timeout(WAIT, async {
        loop {
            let events = api.svc.store.list_events(&key, 0, 100).await.unwrap();
            if events
                .iter()
                .any(|e| e.kind() == EventKind::StatusTerminated)
            {
                break;
            }
            api.svc.workflow.idle().await;
        }
    })
    .await
    .expect("the run ends as cancelled");
    let log = audit(&api).await;
    assert_eq!(
        log[0],
        (
            AuditAction::MemberRemoved,
            ann.id.to_string(),
            Some(api.user.id.clone())
        )
    );
}

#[tokio::test]
async fn the_scim_token_is_shown_once_and_a_new_one_ends_the_old_at_once() {
    let api = Api::start().await;
    api.set_sso(&api.user.org, true).await;
    let status = admin(&api, Method::GET, "/scim", None).await;
    assert_eq!(status.body["tokenExists"], false);
    assert_eq!(status.body["baseUrl"], format!("{}/api/scim", api.origin));
    let first = admin(&api, Method::POST, "/scim/token", None).await;
    assert_eq!(first.status, 200, "{}", first.body);
    let token = first.body["token"].as_str().unwrap().to_owned();
    let scim = |token: String| {
        let req = (api.http)
            .get(format!("{}/api/scim/v2/Users", api.base))
            .bearer_auth(token);
        api.send(req)
    };
    assert_eq!(scim(token.clone()).await.status, 200);
    // A second read shows that a token exists, and when it was made, never the token.
    let status = admin(&api, Method::GET, "/scim", None).await;
    assert_eq!(status.body["tokenExists"], true);
    assert_eq!(status.body["createdAt"], first.body["createdAt"]);
    assert!(!status.body.to_string().contains(&token[token.len() - 64..]));
    let second = admin(&api, Method::POST, "/scim/token", None).await;
    let new_token = second.body["token"].as_str().unwrap().to_owned();
    assert_ne!(new_token, token);
    assert_eq!(scim(token).await.status, 401, "the old token fails at once");
    assert_eq!(scim(new_token).await.status, 200);
    let generated = audit(&api).await;
    let generated = generated
        .iter()
        .filter(|(a, ..)| *a == AuditAction::ScimTokenGenerated);
    assert_eq!(generated.count(), 2);
}

#[tokio::test]
async fn sso_is_configured_switched_and_tested_and_its_secret_is_never_read_back() {
    let api = Api::start().await;
    let provider = crate::sso::Provider::start(&api, json!({})).await;
    let body = json!({
        "issuer": provider.issuer, "clientId": "knowledge", "clientSecret": "the-secret-value",
        "emailDomains": ["Example.COM"],
    });
    let r = admin(&api, Method::PUT, "/sso", Some(body)).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        (r.body["enabled"].clone(), r.body["emailDomains"].clone()),
        (json!(false), json!(["example.com"]))
    );
    let r = admin(
        &api,
        Method::PUT,
        "/sso/enabled",
        Some(json!({ "enabled": true })),
    )
    .await;
    assert_eq!(r.body["enabled"], true);
    let read = admin(&api, Method::GET, "/sso", None).await;
    assert_eq!(read.body["clientSecretSet"], true);
    assert_eq!(
        read.body["callbackUrl"],
        format!("{}/api/auth/callback/{}", api.origin, api.user.org)
    );
    assert!(!read.body.to_string().contains("the-secret-value"));
    // A change without the secret keeps it (same issuer and client) and the enabled state.
    let keep = json!({ "issuer": provider.issuer, "clientId": "knowledge", "justInTime": true });
    let r = admin(&api, Method::PUT, "/sso", Some(keep)).await;
    assert_eq!(
        (r.status, r.body["enabled"].clone()),
        (200, json!(true)),
        "{}",
        r.body
    );
    let test = json!({ "issuer": provider.issuer });
    let r = admin(&api, Method::POST, "/sso/test", Some(test)).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let unreachable = json!({ "issuer": "http://127.0.0.1:9/nothing" });
    let r = admin(&api, Method::POST, "/sso/test", Some(unreachable)).await;
    assert_eq!((r.status, r.code()), (502, "identity_provider_unavailable"));
    let configured = audit(&api).await;
    let configured = configured
        .iter()
        .filter(|(a, ..)| *a == AuditAction::SsoConfigured);
    assert_eq!(configured.count(), 3, "the test changes nothing");
}

#[tokio::test]
async fn an_integration_is_connected_tested_and_disconnected_and_its_holders_listed() {
    let api = Api::start().await;
    let server = mcp_server(&["--token", "ann-token"]).await;
    let put = json!({ "url": server.url, "auth": "per_user" });
    let r = admin(&api, Method::PUT, "/integrations/crm", Some(put)).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["auth"], "per_user");
    // The admin holds no credential of their own yet.
    let r = admin(&api, Method::POST, "/integrations/crm/test", None).await;
    assert_eq!((r.status, r.code()), (409, "no_credential"));
    let org = api.user.org.clone();
    let mine = format!("/integrations/crm/credentials/{}", api.user.id);
    for bad in [
        json!({ "token": "" }),
        json!({ "token": "a\u{0}b" }),
        json!({}),
    ] {
        let r = admin(&api, Method::PUT, &mine, Some(bad.clone())).await;
        assert_eq!(r.status, 400, "{bad}: {}", r.body);
    }
    let r = admin(
        &api,
        Method::PUT,
        &mine,
        Some(json!({ "token": "ann-token" })),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(!r.body.to_string().contains("ann-token"));
    let stored = audit(&api).await;
    assert_eq!(
        stored[0],
        (
            AuditAction::MemberDataStored,
            api.user.id.to_string(),
            Some(api.user.id.clone())
        )
    );
    let stranger = api.new_user(&OrgId::generate()).await;
    let theirs = format!("/integrations/crm/credentials/{}", stranger.id);
    let r = admin(&api, Method::PUT, &theirs, Some(json!({ "token": "x" }))).await;
    assert_eq!(r.status, 404, "another organisation's member");
    let r = admin(&api, Method::POST, "/integrations/crm/test", None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let tools = r.body["tools"].as_array().unwrap();
    assert!(
        tools.iter().any(|t| t["name"] == "crm_search"),
        "{}",
        r.body
    );
    let r = admin(&api, Method::GET, "/integrations/crm/credentials", None).await;
    let holders = r.body["members"].as_array().unwrap();
    assert_eq!(holders.len(), 1);
    assert_eq!(holders[0]["userId"], api.user.id.to_string());
    assert!(!r.body.to_string().contains("ann-token"));
    let r = admin(&api, Method::GET, "/integrations", None).await;
    assert_eq!(r.body["integrations"][0]["name"], "crm");
    let r = admin(&api, Method::DELETE, "/integrations/crm", None).await;
    assert_eq!(r.status, 200);
    assert!(
        api.svc
            .store
            .list_integrations(&org)
            .await
            .unwrap()
            .is_empty()
    );
    let r = admin(&api, Method::DELETE, "/integrations/crm", None).await;
    assert_eq!(r.status, 404);
    let log = audit(&api).await;
    assert_eq!(&log[0].0, &AuditAction::IntegrationDisconnected);
}

#[tokio::test]
async fn limits_set_by_an_admin_apply_to_the_next_query_and_usage_reads_them_back() {
    let api = Api::start().await;
    let limits = json!({ "monthlyQueryQuota": 1, "costCapUsd": 2.5 });
    let r = admin(&api, Method::PUT, "/usage/limits", Some(limits)).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        (
            r.body["monthlyQueryQuota"].clone(),
            r.body["costCapUsd"].clone()
        ),
        (json!(1), json!(2.5))
    );
    api.create("one").await;
    let refused = api
        .post("/api/managed-agents/session", json!({ "text": "two" }))
        .await;
    assert_eq!((refused.status, refused.code()), (429, "quota_exhausted"));
    let usage = admin(&api, Method::GET, "/usage", None).await;
    assert_eq!(usage.body["queries"], 1);
    // Leaving both out makes them unlimited again.
    let r = admin(&api, Method::PUT, "/usage/limits", Some(json!({}))).await;
    assert_eq!(r.body["monthlyQueryQuota"], Value::Null);
    assert_eq!(
        api.post("/api/managed-agents/session", json!({ "text": "two" }))
            .await
            .status,
        200
    );
    let log = audit(&api).await;
    let changed = log
        .iter()
        .filter(|(a, ..)| *a == AuditAction::OrgLimitsChanged);
    assert_eq!(changed.count(), 2);
}

#[tokio::test]
async fn an_admins_changes_are_rate_limited_with_the_wait_and_nothing_changes_when_refused() {
    let api = Api::start().await;
    for quota in 1..=60 {
        let r = admin(
            &api,
            Method::PUT,
            "/usage/limits",
            Some(json!({ "monthlyQueryQuota": quota })),
        )
        .await;
        assert_eq!(r.status, 200, "change {quota}: {}", r.body);
    }
    let refused = admin(
        &api,
        Method::PUT,
        "/usage/limits",
        Some(json!({ "monthlyQueryQuota": 999 })),
    )
    .await;
    assert_eq!((refused.status, refused.code()), (429, "rate_limited"));
    assert!(refused.retry_after().is_some_and(|s| (1..=60).contains(&s)));
    let org = api.svc.store.get_org(&api.user.org).await.unwrap().unwrap();
    assert_eq!(org.monthly_query_quota, Some(60));
    // Reading is not limited, and another admin has a limit of their own.
    assert_eq!(admin(&api, Method::GET, "/usage", None).await.status, 200);
    let other = member(&api, Role::Admin).await;
    let r = call(&api, &other, Method::PUT, "/usage/limits", Some(json!({}))).await;
    assert_eq!(r.status, 200, "{}", r.body);
}

#[tokio::test]
async fn the_audit_log_reads_newest_first_in_pages_and_by_action() {
    let api = Api::start().await;
    for quota in 1..=3 {
        let limits = json!({ "monthlyQueryQuota": quota * 10 });
        admin(&api, Method::PUT, "/usage/limits", Some(limits)).await;
    }
    let viewer = member(&api, Role::Viewer).await;
    admin(
        &api,
        Method::PATCH,
        &format!("/members/{}", viewer.id),
        Some(json!({ "role": "admin" })),
    )
    .await;
    let first = admin(&api, Method::GET, "/audit?limit=2", None).await;
    assert_eq!(first.status, 200, "{}", first.body);
    let entries = first.body["entries"].as_array().unwrap();
    assert_eq!(entries[0]["action"], "member.role_changed");
    assert_eq!(entries[0]["actorId"], api.user.id.to_string());
    let next = first.body["next"].as_str().unwrap();
    let rest = admin(
        &api,
        Method::GET,
        &format!("/audit?before={next}&limit=100"),
        None,
    )
    .await;
    let total = entries.len() + rest.body["entries"].as_array().unwrap().len();
    assert_eq!(total, audit(&api).await.len());
    assert!(rest.body["next"].is_null());
    let only = admin(&api, Method::GET, "/audit?action=org.limits_changed", None).await;
    let only = only.body["entries"].as_array().unwrap().clone();
    assert_eq!(only.len(), 3);
    assert!(only.iter().all(|e| e["action"] == "org.limits_changed"));
}

#[tokio::test]
async fn audit_entries_name_people_as_they_were_and_say_what_changed() {
    let api = Api::start().await;
    let operator = api.admin();
    let org = &api.user.org;
    operator
        .name_member(org, &api.user.id, "ann@example.com")
        .await
        .unwrap();
    let viewer = member(&api, Role::Viewer).await;
    operator
        .name_member(org, &viewer.id, "bob@example.com")
        .await
        .unwrap();
    let patch = json!({ "role": "admin" });
    let path = format!("/members/{}", viewer.id);
    assert_eq!(
        admin(&api, Method::PATCH, &path, Some(patch)).await.status,
        200
    );
    // Renamed afterwards: the entry keeps the name Bob had when it was written.
    operator
        .name_member(org, &viewer.id, "robert@example.com")
        .await
        .unwrap();

    let log = admin(&api, Method::GET, "/audit?limit=100", None).await;
    let entries = log.body["entries"].as_array().unwrap();
    let role_change = entries
        .iter()
        .find(|e| e["action"] == "member.role_changed")
        .expect("the role change is recorded");
    assert_eq!(role_change["actor"], "admin");
    assert_eq!(role_change["actorId"], api.user.id.to_string());
    assert_eq!(role_change["actorName"], "ann@example.com");
    assert_eq!(role_change["target"], viewer.id.to_string());
    assert_eq!(role_change["targetName"], "bob@example.com");
    assert_eq!(
        (&role_change["from"], &role_change["to"]),
        (&json!("viewer"), &json!("admin"))
    );

    let renamed = &entries[0];
    assert_eq!(renamed["action"], "user.updated");
    assert_eq!(renamed["actor"], "command-line", "{renamed}");
    assert!(renamed["actorId"].is_null());
    assert_eq!(renamed["targetName"], "robert@example.com");
    assert_eq!(
        (&renamed["from"], &renamed["to"]),
        (&json!("bob@example.com"), &json!("robert@example.com"))
    );
}
