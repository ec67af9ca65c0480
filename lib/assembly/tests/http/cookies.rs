//! The session cookie's lifetime and attributes over real HTTP: a request renews a cookie that
//! is due for it (keeping its sign-in time, never past the absolute lifetime), and over HTTPS
//! the cookie is `Secure` under the `__Host-` prefix.

use std::time::{SystemTime, UNIX_EPOCH};

use jsonwebtoken::{EncodingKey, Header};
use knowledge_core::adapters::agent::BuiltinAgent;
use knowledge_core::signin;
use knowledge_http::cookie::{CookieSigner, Lifetime};
use serde_json::json;
use std::sync::Arc;

use crate::support::{Api, KEY, Setup, User};

fn now_secs() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// A session cookie for the default user signed with the service's key, issued `age` seconds
/// ago for a sign-in `signed_in` seconds ago, expiring in `left` seconds.
fn aged_cookie(api: &Api, age: i64, signed_in: i64, left: i64) -> String {
    aged_cookie_of(&api.user, age, signed_in, left)
}

/// [`aged_cookie`] for `user`.
fn aged_cookie_of(user: &User, age: i64, signed_in: i64, left: i64) -> String {
    let now = now_secs();
    let claims = json!({
        "sub": user.id.as_str(), "org": user.org.as_str(), "iss": "knowledge-service",
        "iat": now - age, "iat_ms": (now - age) * 1000, "auth_ms": (now - signed_in) * 1000,
        "exp": now + left,
    });
    let token =
        jsonwebtoken::encode(&Header::default(), &claims, &EncodingKey::from_secret(&KEY)).unwrap();
    format!("ks_session={token}")
}

fn user(api: &Api, cookie: String) -> User {
    User {
        cookie,
        id: api.user.id.clone(),
        org: api.user.org.clone(),
    }
}

#[tokio::test]
async fn a_cookie_due_for_renewal_is_renewed_with_its_sign_in_time_and_a_later_expiry() {
    let api = Api::start().await;
    let life = Lifetime::default();
    let idle = life.idle_secs as i64;
    // Issued two hours ago (due: a twelfth of twelve hours is one), ten hours left. The
    // cookie was made, and the server read its clock, between these two readings of the
    // clock: however long the machine keeps the test waiting between them.
    let before = now_secs();
    let reply = api
        .get_as(
            &user(&api, aged_cookie(&api, 7200, 7200, idle - 7200)),
            "/api/managed-agents/sessions",
        )
        .await;
    let after = now_secs();
    assert_eq!(reply.status, 200);
    let set = reply.headers["set-cookie"].to_str().unwrap();
    assert!(
        set.starts_with("ks_session=") && set.contains("HttpOnly") && set.contains("SameSite=Lax")
    );
    let token = set
        .split(';')
        .next()
        .unwrap()
        .trim_start_matches("ks_session=");
    let renewed = CookieSigner::new(&KEY).unwrap().verify(token).unwrap();
    assert!(
        (before + idle..=after + idle).contains(&(renewed.expires_at as i64)),
        "{renewed:?} not {idle} s after {before}..={after}"
    );
    let signed_in = renewed.signed_in_at.millis() / 1000;
    assert!(
        (before - 7200..=after - 7200).contains(&signed_in),
        "{renewed:?} not 7200 s before {before}..={after}"
    );
    let me = api
        .get_as(&user(&api, format!("ks_session={token}")), "/api/auth/me")
        .await;
    assert_eq!(me.status, 200);
}

#[tokio::test]
async fn a_removed_members_cookie_due_for_renewal_is_never_renewed_whatever_the_answer() {
    let api = Api::start().await;
    let org = api.user.org.clone();
    let member = api.new_user(&org).await;
    let idle = Lifetime::default().idle_secs as i64;
    let due = User {
        cookie: aged_cookie_of(&member, 7200, 7200, idle - 7200),
        ..member.clone()
    };
    // While a member, the cookie is renewed; removed, neither a request the body rules refuse
    // (400, before the use case reads the membership) nor one that reads it (401) renews it.
    let answered = api.get_as(&due, "/api/managed-agents/sessions").await;
    assert_eq!(answered.status, 200);
    assert!(answered.headers.contains_key("set-cookie"));
    api.admin().remove_member(&org, &member.id).await.unwrap();
    let malformed = api
        .post_as(&due, "/api/managed-agents/message", json!({ "text": "hi" }))
        .await;
    let read = api
        .post_as(
            &due,
            "/api/managed-agents/message",
            json!({ "sessionId": "ses_0123456789abcdef0123456789abcdef", "text": "hi" }),
        )
        .await;
    for (reply, status) in [(malformed, 400), (read, 401)] {
        assert_eq!(reply.status, status, "{:?}", reply.body);
        assert!(
            reply.headers.get("set-cookie").is_none(),
            "{:?}",
            reply.headers
        );
    }
}

#[tokio::test]
async fn a_fresh_cookie_or_one_at_its_absolute_end_is_not_renewed() {
    let api = Api::start().await;
    let life = Lifetime::default();
    let absolute = life.absolute_secs as i64;
    let fresh = aged_cookie(&api, 60, 60, 3600);
    // Signed in almost a week ago: its expiry is already the absolute end.
    let ending = aged_cookie(&api, 7200, absolute - 600, 600);
    for cookie in [fresh, ending] {
        let reply = api
            .get_as(&user(&api, cookie), "/api/managed-agents/sessions")
            .await;
        assert_eq!(reply.status, 200);
        assert!(
            reply.headers.get("set-cookie").is_none(),
            "{:?}",
            reply.headers
        );
    }
    // Past the absolute end the cookie has expired and signs nobody in.
    let over = aged_cookie(&api, 7200, absolute + 60, -60);
    let reply = api
        .get_as(&user(&api, over), "/api/managed-agents/sessions")
        .await;
    assert_eq!(reply.status, 401);
}

#[tokio::test]
async fn over_https_the_cookie_is_secure_under_the_host_prefix_and_the_plain_name_is_ignored() {
    let api = Api::start_setup(Setup {
        origin: Some("https://knowledge.example.com".into()),
        ..Setup::new(Arc::new(BuiltinAgent))
    })
    .await;
    let store = &*api.svc.store;
    let secret = signin::issue(store, store, api.clock_now(), &api.user.id, &api.user.org)
        .await
        .unwrap();
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let url = format!("{}/api/auth/link?token={secret}", api.base);
    let signed_in = api.execute(client.get(url)).await;
    assert_eq!(signed_in.status().as_u16(), 303);
    let set = signed_in.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        set.starts_with("__Host-ks_session=") && set.contains("; Secure"),
        "{set}"
    );
    assert!(set.contains("Path=/") && !set.contains("Domain"), "{set}");
    let pair = set.split(';').next().unwrap().to_owned();
    let me = api.get_as(&user(&api, pair.clone()), "/api/auth/me").await;
    assert_eq!(me.status, 200);
    let plain = pair.replacen("__Host-ks_session=", "ks_session=", 1);
    let refused = api.get_as(&user(&api, plain), "/api/auth/me").await;
    assert_eq!(refused.status, 401);
}
