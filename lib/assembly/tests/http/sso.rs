//! Single sign-on end to end: the service in process, a real OpenID provider (panva's
//! oidc-provider, `scripts/oidc/provider.mjs`, which `scripts/test` installs) and a browser
//! that keeps cookies per origin and follows redirects by hand, as Chromium would. The ID token
//! checks a real provider never fails (bad signatures, wrong audience, ...) are the adapter's
//! tests, against a fake provider that mints such tokens (`lib/oidc/tests`).

use std::collections::{BTreeMap, HashMap};
use std::process::Stdio;
use std::sync::Arc;

use knowledge_core::domain::Role;
use knowledge_core::ids::UserId;
use knowledge_core::sso::{SsoChange, SsoSettings};
use reqwest::header::{COOKIE, LOCATION, SET_COOKIE};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::support::{Api, Transport, User};

pub(crate) const CLIENT_ID: &str = "knowledge-test";
pub(crate) const CLIENT_SECRET: &str = "a-client-secret-of-the-test";

/// panva's oidc-provider in a child process, stopped when dropped.
pub(crate) struct Provider {
    pub(crate) issuer: String,
    _child: tokio::process::Child,
    _config: tempfile::NamedTempFile,
}

impl Provider {
    /// A provider whose one client sends browsers back to the default organisation's callback
    /// at `api` (and to the shared one of old, which organisations set up before per-organisation
    /// callbacks still have registered), knowing `accounts` (login name to the claims of its ID
    /// token).
    pub(crate) async fn start(api: &Api, accounts: Value) -> Self {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/oidc");
        assert!(
            std::path::Path::new(&format!("{root}/node_modules/oidc-provider")).is_dir(),
            "the test provider is not installed: run `npm ci --prefix scripts/oidc` (scripts/test does)"
        );
        let config = json!({
            "clients": [{
                "client_id": CLIENT_ID,
                "client_secret": CLIENT_SECRET,
                "redirect_uris": [
                    format!("{}/api/auth/callback/{}", api.origin, api.user.org),
                    format!("{}/api/auth/callback", api.origin),
                ],
            }],
            "accounts": accounts,
        });
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), config.to_string()).unwrap();
        let mut child = tokio::process::Command::new("node")
            .arg(format!("{root}/provider.mjs"))
            .args(["--port", "0", "--config"])
            .arg(file.path())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("node runs");
        let stdout = child.stdout.take().unwrap();
        let mut lines = BufReader::new(stdout).lines();
        let ready = tokio::time::timeout(std::time::Duration::from_secs(20), lines.next_line())
            .await
            .expect("the provider starts within 20 s")
            .unwrap()
            .expect("the provider prints its issuer");
        let issuer = ready
            .strip_prefix("ready ")
            .expect("ready <issuer>")
            .to_owned();
        // Keep draining its output so that it never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Self {
            issuer,
            _child: child,
            _config: file,
        }
    }
}

/// A browser: cookies kept per origin, redirects followed by hand; it reaches the application
/// in process and the provider over the network ([`Transport`]).
pub(crate) struct Browser {
    pub(crate) http: reqwest::Client,
    transport: Arc<dyn Transport>,
    jar: HashMap<String, BTreeMap<String, String>>,
}

pub(crate) fn origin_of(url: &str) -> String {
    let u = reqwest::Url::parse(url).unwrap();
    u.origin().ascii_serialization()
}

impl Browser {
    pub(crate) fn new(api: &Api) -> Self {
        Self {
            http: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap(),
            transport: api.transport(),
            jar: HashMap::new(),
        }
    }

    /// GETs `url` with this origin's cookies, keeping the ones it sets.
    pub(crate) async fn get(&mut self, url: &str) -> reqwest::Response {
        let origin = origin_of(url);
        let jar = self.jar.entry(origin).or_default();
        let mut req = self.http.get(url);
        if !jar.is_empty() {
            let cookies: Vec<String> = jar.iter().map(|(k, v)| format!("{k}={v}")).collect();
            req = req.header(COOKIE, cookies.join("; "));
        }
        let resp = self.transport.execute(req).await;
        for set in resp.headers().get_all(SET_COOKIE) {
            let set = set.to_str().unwrap();
            let (pair, attrs) = set.split_once(';').unwrap_or((set, ""));
            let (name, value) = pair.split_once('=').unwrap();
            let expired = attrs.contains("Max-Age=0") || attrs.contains("1970");
            if expired || value.is_empty() {
                jar.remove(name.trim());
            } else {
                jar.insert(name.trim().to_owned(), value.to_owned());
            }
        }
        resp
    }

    /// Follows redirects from `url` (relative ones against the URL they came from) until one
    /// leads to `stop`'s origin, which it returns unvisited. At the provider's login page it
    /// signs in as `login`.
    pub(crate) async fn follow(&mut self, url: &str, stop: &str, login: &str) -> String {
        let mut url = url.to_owned();
        for _ in 0..20 {
            if url.starts_with(stop) {
                return url;
            }
            let resp = self.get(&url).await;
            let status = resp.status().as_u16();
            if status == 200 && url.contains("/interaction/") && !url.contains("login=") {
                url = format!("{url}?login={login}");
                continue;
            }
            assert!(
                (300..400).contains(&status),
                "{status} at {url}: {}",
                resp.text().await.unwrap_or_default()
            );
            let next = resp.headers()[LOCATION].to_str().unwrap().to_owned();
            url = reqwest::Url::parse(&url)
                .unwrap()
                .join(&next)
                .unwrap()
                .to_string();
        }
        panic!("too many redirects");
    }

    pub(crate) fn cookie(&self, origin: &str, name: &str) -> Option<String> {
        self.jar.get(origin)?.get(name).cloned()
    }
}

/// A service with single sign-on on for `example.com` through `provider`, claiming `userName`
/// from `claim`.
pub(crate) async fn configure(
    api: &Api, provider: &Provider, claim: Option<&str>, just_in_time: bool,
) {
    let settings = SsoSettings {
        issuer: provider.issuer.clone(),
        client_id: CLIENT_ID.into(),
        client_secret: Some(CLIENT_SECRET.into()),
        user_name_claim: claim.map(str::to_owned),
        email_domains: vec!["example.com".into()],
        just_in_time,
        enabled: true,
    };
    let change = SsoChange::Set(settings);
    (api.admin())
        .configure_sso(&api.user.org, &change, api.sealer.clone())
        .await
        .unwrap();
}

/// A service whose default organisation signs in through a fresh provider knowing
/// [`accounts`], by `email`, with just-in-time membership or not.
async fn with_sso(just_in_time: bool) -> (Api, Provider) {
    let api = Api::start().await;
    let provider = Provider::start(&api, accounts()).await;
    configure(&api, &provider, None, just_in_time).await;
    (api, provider)
}

/// A member of the default organisation named `user_name`.
pub(crate) async fn provision(api: &Api, user_name: &str) -> UserId {
    let admin = api.admin();
    let m = admin
        .add_member(&api.user.org, None, Role::Viewer)
        .await
        .unwrap();
    admin
        .name_member(&api.user.org, &m.user, user_name)
        .await
        .unwrap();
    m.user
}

pub(crate) fn accounts() -> Value {
    json!({
        "alice": { "sub": "alice-sub", "email": "alice@example.com", "name": "Alice Example",
                   "preferred_username": "alice@corp.example.com", "upn": "ALICE@corp.example.com" },
        "mallory": { "sub": "mallory-sub", "email": "alice@example.com", "name": "Mallory" },
        "eve": { "sub": "eve-sub", "email": "eve@example.com", "name": "Eve" },
        "ulla": { "sub": "ulla-sub", "email": "ulla@example.com", "email_verified": false,
                  "name": "Ulla Unverified" },
        "vera": { "sub": "vera-sub", "email": "vera@example.com", "email_verified": true },
    })
}

/// Signs in through the provider as `login`, starting at `/api/auth/login?{query}`; returns
/// the callback's answer.
pub(crate) async fn sign_in(
    api: &Api, provider: &Provider, browser: &mut Browser, query: &str, login: &str,
) -> reqwest::Response {
    let start = browser
        .get(&format!("{}/api/auth/login?{query}", api.base))
        .await;
    assert_eq!(
        start.status().as_u16(),
        303,
        "{}",
        start.text().await.unwrap()
    );
    let to_provider = start.headers()[LOCATION].to_str().unwrap().to_owned();
    assert!(to_provider.starts_with(&provider.issuer), "{to_provider}");
    let callback = browser.follow(&to_provider, &api.base, login).await;
    browser.get(&callback).await
}

fn signed_in_user(api: &Api, browser: &Browser) -> User {
    let cookie = browser
        .cookie(&api.base, "ks_session")
        .expect("a session cookie");
    User {
        cookie: format!("ks_session={cookie}"),
        id: api.user.id.clone(),
        org: api.user.org.clone(),
    }
}

#[tokio::test]
async fn a_member_signs_in_by_email_through_the_provider_and_lands_where_they_asked() {
    let (api, provider) = with_sso(false).await;
    let alice = provision(&api, "Alice@Example.com").await;
    let mut browser = Browser::new(&api);
    let done = sign_in(
        &api,
        &provider,
        &mut browser,
        "email=alice%40example.com&returnTo=%2Fchat%3Fs%3D1",
        "alice",
    )
    .await;
    assert_eq!(done.status().as_u16(), 303);
    assert_eq!(done.headers()[LOCATION], "/chat?s=1");
    assert_eq!(
        browser.cookie(&api.base, "ks_login"),
        None,
        "the sign-in in progress is used up"
    );
    let me = api
        .get_as(&signed_in_user(&api, &browser), "/api/auth/me")
        .await;
    assert_eq!(me.status, 200, "{}", me.body);
    assert_eq!(me.body["user"]["id"], json!(alice.as_str()));
    let member = api
        .svc
        .store
        .get_member(&api.user.org, &alice)
        .await
        .unwrap()
        .unwrap();
    let identity = member.identity.unwrap();
    assert_eq!(
        (identity.issuer, identity.subject),
        (provider.issuer.clone(), "alice-sub".into())
    );
}

#[tokio::test]
async fn entra_style_upn_and_preferred_username_claims_name_the_member() {
    let api = Api::start().await;
    let provider = Provider::start(&api, accounts()).await;
    let alice = provision(&api, "alice@corp.example.com").await;
    for claim in ["upn", "preferred_username"] {
        configure(&api, &provider, Some(claim), false).await;
        let mut browser = Browser::new(&api);
        let org = api.user.org.as_str();
        let done = sign_in(
            &api,
            &provider,
            &mut browser,
            &format!("org={org}"),
            "alice",
        )
        .await;
        assert_eq!(
            done.status().as_u16(),
            303,
            "{claim}: {}",
            done.text().await.unwrap()
        );
        let me = api
            .get_as(&signed_in_user(&api, &browser), "/api/auth/me")
            .await;
        assert_eq!(me.body["user"]["id"], json!(alice.as_str()), "{claim}");
    }
}

#[tokio::test]
async fn a_person_not_provisioned_is_told_so_and_nothing_is_created() {
    let (api, provider) = with_sso(false).await;
    let before = api.svc.store.list_members(&api.user.org).await.unwrap();
    let mut browser = Browser::new(&api);
    let done = sign_in(
        &api,
        &provider,
        &mut browser,
        "email=eve%40example.com",
        "eve",
    )
    .await;
    assert_eq!(done.status().as_u16(), 403);
    assert!(
        done.headers()
            .get_all(SET_COOKIE)
            .iter()
            .all(|c| !c.to_str().unwrap().starts_with("ks_session="))
    );
    let body: Value = done.json().await.unwrap();
    assert_eq!(body["error"]["code"], "not_provisioned");
    assert_eq!(
        api.svc.store.list_members(&api.user.org).await.unwrap(),
        before
    );
}

#[tokio::test]
async fn just_in_time_membership_signs_a_new_person_in_as_a_viewer() {
    let (api, provider) = with_sso(true).await;
    let mut browser = Browser::new(&api);
    let done = sign_in(
        &api,
        &provider,
        &mut browser,
        "email=eve%40example.com",
        "eve",
    )
    .await;
    assert_eq!(done.status().as_u16(), 303);
    let eve = api
        .svc
        .store
        .find_member_by_user_name(&api.user.org, "eve@example.com")
        .await
        .unwrap()
        .expect("eve is a member now");
    assert_eq!(eve.role, Role::Viewer);
}

#[tokio::test]
async fn another_provider_account_renamed_to_a_bound_members_name_does_not_become_them() {
    let (api, provider) = with_sso(false).await;
    provision(&api, "alice@example.com").await;
    let mut first = Browser::new(&api);
    let done = sign_in(
        &api,
        &provider,
        &mut first,
        "email=alice%40example.com",
        "alice",
    )
    .await;
    assert_eq!(done.status().as_u16(), 303);
    // Mallory's account at the provider now carries Alice's address.
    let mut second = Browser::new(&api);
    let done = sign_in(
        &api,
        &provider,
        &mut second,
        "email=alice%40example.com",
        "mallory",
    )
    .await;
    assert_eq!(done.status().as_u16(), 403);
    assert_eq!(second.cookie(&api.base, "ks_session"), None);
}

#[tokio::test]
async fn a_callback_in_another_browser_or_replayed_signs_nobody_in() {
    let (api, _provider) = with_sso(false).await;
    provision(&api, "alice@example.com").await;
    // The victim's browser would open the attacker's callback: it has no sign-in in progress.
    let mut attacker = Browser::new(&api);
    let start = attacker
        .get(&format!(
            "{}/api/auth/login?email=alice%40example.com",
            api.base
        ))
        .await;
    let to_provider = start.headers()[LOCATION].to_str().unwrap().to_owned();
    let callback = attacker.follow(&to_provider, &api.base, "alice").await;
    let mut victim = Browser::new(&api);
    let refused = victim.get(&callback).await;
    assert_eq!(refused.status().as_u16(), 400);
    assert_eq!(victim.cookie(&api.base, "ks_session"), None);
    // A state that is not the browser's own is refused too.
    let forged = callback.replace("state=", "state=x");
    let refused = attacker.get(&forged).await;
    assert_eq!(refused.status().as_u16(), 400);
    // The sign-in in progress is used up by the refusal: the genuine callback fails after it.
    let replayed = attacker.get(&callback).await;
    assert_eq!(replayed.status().as_u16(), 400);
    assert_eq!(attacker.cookie(&api.base, "ks_session"), None);
}

#[tokio::test]
async fn unknown_domains_and_organisations_get_the_same_answer_as_one_without_sso() {
    let (api, _provider) = with_sso(false).await;
    let off = SsoChange::Enable(false);
    (api.admin()
        .configure_sso(&api.user.org, &off, api.sealer.clone())
        .await)
        .unwrap();
    let mut browser = Browser::new(&api);
    let mut answers = Vec::new();
    for query in [
        "email=alice%40example.com",
        "email=alice%40unknown.example",
        "org=org_nosuch",
        &format!("org={}", api.user.org),
        "org=not%20an%20id",
    ] {
        let r = browser
            .get(&format!("{}/api/auth/login?{query}", api.base))
            .await;
        assert!(r.headers().get(SET_COOKIE).is_none(), "{query}");
        answers.push((r.status().as_u16(), r.text().await.unwrap()));
    }
    assert_eq!(answers[0].0, 404);
    assert!(answers.iter().all(|a| *a == answers[0]), "{answers:?}");
}

#[tokio::test]
async fn a_login_refuses_a_return_to_elsewhere_before_going_to_the_provider() {
    let (api, _provider) = with_sso(false).await;
    let mut browser = Browser::new(&api);
    for bad in [
        "https%3A%2F%2Fevil.example",
        "%2F%2Fevil.example",
        "%2F%5Cevil.example",
    ] {
        let url = format!(
            "{}/api/auth/login?email=alice%40example.com&returnTo={bad}",
            api.base
        );
        let r = browser.get(&url).await;
        assert_eq!(r.status().as_u16(), 400, "{bad}");
        assert!(r.headers().get(LOCATION).is_none() && r.headers().get(SET_COOKIE).is_none());
    }
}

#[tokio::test]
async fn a_browser_page_is_sent_to_the_sign_in_page_with_the_code_instead_of_an_error_body() {
    let (api, provider) = with_sso(false).await;
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let html = "text/html,application/xhtml+xml";
    let login = api
        .execute(
            client
                .get(format!(
                    "{}/api/auth/login?email=ann%40unknown.example",
                    api.base
                ))
                .header("accept", html),
        )
        .await;
    assert_eq!(login.status().as_u16(), 303);
    assert_eq!(login.headers()[LOCATION], "/?signin=sso_unavailable");
    // The callback of a browser without a sign-in in progress: the code, and the cookie cleared.
    let callback = api
        .execute(
            client
                .get(format!(
                    "{}/api/auth/callback/{}?code=c&state=s",
                    api.base, api.user.org
                ))
                .header("accept", html),
        )
        .await;
    assert_eq!(callback.status().as_u16(), 303);
    assert_eq!(callback.headers()[LOCATION], "/?signin=sign_in_failed");
    let cleared = callback.headers()[SET_COOKIE].to_str().unwrap();
    assert!(cleared.starts_with("ks_login=;"), "{cleared}");
    drop(provider);
}
