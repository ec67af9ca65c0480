//! `GET /api/auth/me` and `POST /api/auth/logout`: who is signed in and where they belong, and
//! signing out everywhere at once.

use knowledge_core::clock::{Clock, SystemClock};
use knowledge_core::domain::{Plan, Role};
use knowledge_core::ids::OrgId;
use knowledge_core::signin;
use serde_json::{Value, json};

use crate::support::{Api, User, WAIT};

/// The default user made a member of a second organisation too.
async fn second_org(api: &Api) -> OrgId {
    let other = OrgId::parse("org_second").unwrap();
    let admin = api.admin();
    admin
        .create_org(Some(other.clone()), "Second", Plan::Pro)
        .await
        .unwrap();
    admin
        .add_member(&other, Some(api.user.id.clone()), Role::Admin)
        .await
        .unwrap();
    other
}

/// The default user with a cookie for `org`.
fn in_org(api: &Api, org: &OrgId) -> User {
    User {
        cookie: api.cookie(&api.user.id, org),
        id: api.user.id.clone(),
        org: org.clone(),
    }
}

/// Waits (bounded) until the wall clock, which a cookie's issue time is read from, has passed
/// the default user's sign-out stamp: a cookie minted in the stamp's own millisecond counts as
/// issued before it and is refused, and the requests between a sign-out and a mint may all fit
/// in that millisecond.
async fn after_sign_out(api: &Api) {
    let member = (api.svc.store.get_member(&api.user.org, &api.user.id)).await;
    let out = (member.unwrap().and_then(|m| m.signed_out_at)).expect("the sign-out is stamped");
    let passed = async {
        while SystemClock.now() <= out {
            tokio::task::yield_now().await;
        }
    };
    (tokio::time::timeout(WAIT, passed).await).expect("the clock passes the sign-out");
}

#[tokio::test]
async fn me_names_the_member_the_active_organisation_and_every_organisation_with_its_role() {
    let api = Api::start().await;
    let other = second_org(&api).await;
    let r = api.get("/api/auth/me").await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["user"]["id"], api.user.id.as_str());
    assert_eq!(r.body["org"]["id"], "org_default");
    assert_eq!(r.body["org"]["role"], "admin");
    let orgs: Vec<(&str, &str)> = r.body["orgs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| (o["id"].as_str().unwrap(), o["role"].as_str().unwrap()))
        .collect();
    assert_eq!(orgs, [("org_default", "admin"), ("org_second", "admin")]);
    let there = api.get_as(&in_org(&api, &other), "/api/auth/me").await;
    assert_eq!(there.body["org"]["name"], "Second");
    // Another member sees only their own organisation.
    let colleague = api.new_user(&OrgId::parse("org_default").unwrap()).await;
    let theirs = api.get_as(&colleague, "/api/auth/me").await;
    assert_eq!(theirs.body["orgs"].as_array().unwrap().len(), 1);
    assert_eq!(theirs.body["org"]["role"], "viewer");
}

#[tokio::test]
async fn me_needs_a_current_member() {
    let api = Api::start().await;
    let stranger = api.new_user(&OrgId::parse("org_other").unwrap()).await;
    api.admin()
        .remove_member(&stranger.org, &stranger.id)
        .await
        .unwrap();
    let r = api.get_as(&stranger, "/api/auth/me").await;
    assert_eq!(
        (r.status, r.body["error"]["code"].clone()),
        (401, json!("unauthenticated"))
    );
    let anonymous = api
        .send(api.http.get(format!("{}/api/auth/me", api.base)))
        .await;
    assert_eq!(anonymous.status, 401);
}

#[tokio::test]
async fn logout_ends_every_cookie_of_the_person_in_every_organisation_and_clears_its_own() {
    let api = Api::start().await;
    let created = api.create("before signing out").await;
    let other = second_org(&api).await;
    let elsewhere = in_org(&api, &other);
    let colleague = api.new_user(&OrgId::parse("org_default").unwrap()).await;
    let r = api.post("/api/auth/logout", json!({})).await;
    assert_eq!((r.status, &r.body), (200, &json!({ "ok": true })));
    let cleared = r.headers["set-cookie"].to_str().unwrap();
    assert!(
        cleared.starts_with("ks_session=;") && cleared.contains("Max-Age=0"),
        "{cleared}"
    );
    // The cookie used, and the one for the other organisation, are refused everywhere.
    for (user, path) in [
        (&api.user, "/api/managed-agents/sessions".to_owned()),
        (
            &api.user,
            format!("/api/managed-agents/transcript?sessionId={created}"),
        ),
        (&api.user, "/api/auth/me".to_owned()),
        (&elsewhere, "/api/managed-agents/sessions".to_owned()),
    ] {
        let refused = api.get_as(user, &path).await;
        assert_eq!(refused.status, 401, "{path}: {}", refused.body);
    }
    let message = json!({ "sessionId": created, "text": "still there?" });
    let post = api.post("/api/managed-agents/message", message).await;
    assert_eq!(post.status, 401);
    let switch = api
        .post("/api/auth/switch-org", json!({ "orgId": other.as_str() }))
        .await;
    // A signed-out cookie is refused as on every route that needs a session, not as an
    // organisation it does not belong to.
    assert_eq!(switch.status, 401, "{}", switch.body);
    // Someone else stays signed in; a cookie issued after the sign-out works.
    assert_eq!(api.get_as(&colleague, "/api/auth/me").await.status, 200);
    after_sign_out(&api).await;
    let again = in_org(&api, &OrgId::parse("org_default").unwrap());
    let back = api.get_as(&again, "/api/managed-agents/sessions").await;
    assert_eq!(back.status, 200, "{}", back.body);
    let sessions: &Value = &back.body["sessions"];
    assert_eq!(sessions[0]["id"], created.as_str());
    // The audit log of each organisation records it.
    for org in ["org_default", "org_second"] {
        let log = api
            .admin()
            .audit_log(&OrgId::parse(org).unwrap(), 5)
            .await
            .unwrap();
        assert!(
            log.iter().any(|e| e.action.as_str() == "member.signed_out"),
            "{org}: {log:?}"
        );
    }
}

#[tokio::test]
async fn logout_follows_the_post_rules_and_needs_a_valid_cookie() {
    let api = Api::start().await;
    let foreign = api
        .send(
            api.http
                .post(format!("{}/api/auth/logout", api.base))
                .header("cookie", &api.user.cookie)
                .header("origin", "https://elsewhere.example"),
        )
        .await;
    assert_eq!(foreign.status, 403);
    assert_eq!(
        api.get("/api/auth/me").await.status,
        200,
        "nothing was revoked"
    );
    let anonymous = api
        .send(
            api.http
                .post(format!("{}/api/auth/logout", api.base))
                .header("origin", &api.origin),
        )
        .await;
    assert_eq!(anonymous.status, 401);
}

/// A link for the default user, issued now by the service's clock.
async fn link_secret(api: &Api) -> String {
    let store = &*api.svc.store;
    let org = OrgId::parse("org_default").unwrap();
    signin::issue(store, store, api.clock_now(), &api.user.id, &org)
        .await
        .unwrap()
}

/// Follows `/api/auth/link?token=…` without following its redirect.
async fn open_link(api: &Api, secret: &str) -> reqwest::Response {
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let url = format!("{}/api/auth/link?token={secret}", api.base);
    api.execute(client.get(url)).await
}

#[tokio::test]
async fn a_sign_in_link_signs_the_member_in_once_and_sends_the_browser_home() {
    let api = Api::start().await;
    let secret = link_secret(&api).await;
    let signed_in = open_link(&api, &secret).await;
    assert_eq!(signed_in.status().as_u16(), 303);
    assert_eq!(signed_in.headers()["location"], "/");
    let set_cookie = signed_in.headers()["set-cookie"].to_str().unwrap();
    assert!(set_cookie.contains("HttpOnly") && set_cookie.contains("SameSite=Lax"));
    let user = User {
        cookie: set_cookie.split(';').next().unwrap().to_owned(),
        id: api.user.id.clone(),
        org: api.user.org.clone(),
    };
    let me = api.get_as(&user, "/api/auth/me").await;
    assert_eq!(
        (me.status, me.body["user"]["id"].clone()),
        (200, json!(api.user.id.as_str()))
    );
    // Used once: a second visit signs nobody in.
    let again = open_link(&api, &secret).await;
    assert_eq!(again.status().as_u16(), 401);
    assert!(again.headers().get("set-cookie").is_none());
}

#[tokio::test]
async fn an_expired_unknown_or_orphaned_sign_in_link_signs_nobody_in() {
    let api = Api::start().await;
    let expired = link_secret(&api).await;
    api.clock.advance(signin::LINK_TTL_MS + 1);
    let colleague = api.new_user(&OrgId::parse("org_default").unwrap()).await;
    let store = &*api.svc.store;
    let orphaned = signin::issue(store, store, api.clock_now(), &colleague.id, &colleague.org)
        .await
        .unwrap();
    api.admin()
        .remove_member(&colleague.org, &colleague.id)
        .await
        .unwrap();
    for secret in [expired.as_str(), orphaned.as_str(), &"0".repeat(64), ""] {
        let refused = open_link(&api, secret).await;
        assert_eq!(refused.status().as_u16(), 401, "{secret:?}");
        assert!(refused.headers().get("set-cookie").is_none());
    }
}

#[tokio::test]
async fn a_sign_in_link_goes_to_a_path_of_the_application_and_never_elsewhere() {
    let api = Api::start().await;
    let secret = link_secret(&api).await;
    for evil in [
        "https://evil.example/",
        "//evil.example",
        "/%5Cevil.example",
        "/%252F%252Fevil.example",
    ] {
        let encoded: String = form_urlencoded::byte_serialize(evil.as_bytes()).collect();
        let refused = open_link(&api, &format!("{secret}&returnTo={encoded}")).await;
        assert_eq!(refused.status().as_u16(), 400, "{evil}");
        assert!(refused.headers().get("location").is_none(), "{evil}");
        assert!(refused.headers().get("set-cookie").is_none(), "{evil}");
    }
    // The refusals did not use the link up.
    let signed_in = open_link(&api, &format!("{secret}&returnTo=%2Fsessions%3Ftab%3Dmine")).await;
    assert_eq!(signed_in.status().as_u16(), 303);
    assert_eq!(signed_in.headers()["location"], "/sessions?tab=mine");
}

#[tokio::test]
async fn a_used_or_expired_link_takes_a_browser_to_the_sign_in_page_or_into_the_app_never_to_json()
{
    let api = Api::start().await;
    let secret = link_secret(&api).await;
    assert_eq!(open_link(&api, &secret).await.status().as_u16(), 303);
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let page = |cookie: Option<&str>| {
        let url = format!(
            "{}/api/auth/link?token={secret}&returnTo=%2Fc%2Fses_1",
            api.base
        );
        let mut req = client
            .get(url)
            .header("accept", "text/html,application/xhtml+xml");
        if let Some(cookie) = cookie {
            req = req.header("cookie", cookie);
        }
        api.execute(req)
    };
    // Signed out: the sign-in page, which says why.
    let signed_out = page(None).await;
    assert_eq!(signed_out.status().as_u16(), 303);
    assert_eq!(signed_out.headers()["location"], "/?signin=link_expired");
    assert!(signed_out.headers().get("set-cookie").is_none());
    // Signed in already: where the link was going, with no new cookie.
    let signed_in = page(Some(&api.user.cookie)).await;
    assert_eq!(signed_in.status().as_u16(), 303);
    assert_eq!(signed_in.headers()["location"], "/c/ses_1");
    assert!(signed_in.headers().get("set-cookie").is_none());
    // A signed-out cookie is no sign-in.
    assert_eq!(api.post("/api/auth/logout", json!({})).await.status, 200);
    let revoked = page(Some(&api.user.cookie)).await;
    assert_eq!(revoked.headers()["location"], "/?signin=link_expired");
}
