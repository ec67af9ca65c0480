//! Sign-in against a hostile identity provider, played end to end: the OAuth mix-up attack
//! (RFC 9700 §4.4) by an admin of one organisation against a member of another, the retired
//! shared callback, the RFC 9207 `iss` parameter, and e-mail addresses the provider itself
//! calls unverified. The victim's organisation signs in through a real OpenID provider
//! (panva's oidc-provider); the attacker's provider is [`Attacker`], a real HTTP server.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::{Query, State};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use knowledge_core::domain::Plan;
use knowledge_core::ids::OrgId;
use knowledge_core::sso::{SsoChange, SsoSettings};
use reqwest::header::LOCATION;
use serde_json::{Value, json};

use crate::sso::{Browser, Provider, accounts, configure, provision, sign_in};
use crate::support::Api;

/// Where the attacker's provider sends the victim: the real provider's authorization endpoint,
/// with what the attacker read from a sign-in of their own at the victim's organisation.
#[derive(Clone)]
struct Forward {
    authorization_endpoint: String,
    client_id: String,
    redirect_uri: String,
    nonce: String,
    code_challenge: String,
}

/// An OpenID provider an organisation admin runs: its authorization endpoint forwards every
/// browser to [`Forward`], keeping the browser's own `state`; its token endpoint keeps every
/// code it is sent and refuses it.
struct Attacker {
    issuer: String,
    forward: Mutex<Option<Forward>>,
    codes: Mutex<Vec<String>>,
}

impl Attacker {
    async fn start() -> Arc<Self> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let attacker = Arc::new(Self {
            issuer: format!("http://{}", listener.local_addr().unwrap()),
            forward: Mutex::new(None),
            codes: Mutex::new(Vec::new()),
        });
        let app = Router::new()
            .route("/.well-known/openid-configuration", get(discovery))
            .route("/jwks", get(|| async { Json(json!({ "keys": [] })) }))
            .route("/authorize", get(authorize))
            .route("/token", post(token))
            .with_state(attacker.clone());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        attacker
    }

    fn codes(&self) -> Vec<String> {
        self.codes.lock().unwrap().clone()
    }
}

async fn discovery(State(a): State<Arc<Attacker>>) -> Json<Value> {
    let i = &a.issuer;
    Json(json!({
        "issuer": i,
        "authorization_endpoint": format!("{i}/authorize"),
        "token_endpoint": format!("{i}/token"),
        "jwks_uri": format!("{i}/jwks"),
        "response_types_supported": ["code"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["RS256"],
    }))
}

async fn authorize(
    State(a): State<Arc<Attacker>>, Query(q): Query<HashMap<String, String>>,
) -> Response {
    let forward = a
        .forward
        .lock()
        .unwrap()
        .clone()
        .expect("the attack is set up");
    let mut to = reqwest::Url::parse(&forward.authorization_endpoint).unwrap();
    to.query_pairs_mut()
        .append_pair("response_type", "code")
        .append_pair("client_id", &forward.client_id)
        .append_pair("redirect_uri", &forward.redirect_uri)
        .append_pair("scope", "openid email profile")
        .append_pair("state", &q["state"])
        .append_pair("nonce", &forward.nonce)
        .append_pair("code_challenge", &forward.code_challenge)
        .append_pair("code_challenge_method", "S256");
    Redirect::to(to.as_str()).into_response()
}

async fn token(State(a): State<Arc<Attacker>>, body: axum::body::Bytes) -> Response {
    let form: HashMap<String, String> = form_urlencoded::parse(&body).into_owned().collect();
    if let Some(code) = form.get("code") {
        a.codes.lock().unwrap().push(code.clone());
    }
    let refusal = Json(json!({ "error": "invalid_grant" }));
    (axum::http::StatusCode::BAD_REQUEST, refusal).into_response()
}

fn query_of(url: &str) -> HashMap<String, String> {
    let url = reqwest::Url::parse(url).unwrap();
    url.query_pairs().into_owned().collect()
}

#[tokio::test]
async fn an_admin_of_another_organisation_cannot_sign_in_as_a_member_through_a_mix_up() {
    // Organisation A (the default one) signs in through a real provider, where its member
    // Alice is signed in already.
    let api = Api::start().await;
    let provider = Provider::start(&api, accounts()).await;
    configure(&api, &provider, None, false).await;
    let alice = provision(&api, "alice@example.com").await;
    let mut victim = Browser::new(&api);
    let org_a = api.user.org.clone();
    let first = sign_in(
        &api,
        &provider,
        &mut victim,
        &format!("org={org_a}"),
        "alice",
    )
    .await;
    assert_eq!(
        first.status().as_u16(),
        303,
        "Alice signs in normally first"
    );

    // Organisation M is the attacker's: its admin points its single sign-on at their provider.
    let attacker_idp = Attacker::start().await;
    let org_m = OrgId::parse("org_mallory").unwrap();
    let admin = api.admin();
    admin
        .create_org(Some(org_m.clone()), "Mallory", Plan::Business)
        .await
        .unwrap();
    let settings = SsoSettings {
        issuer: attacker_idp.issuer.clone(),
        client_id: "mallory-client".into(),
        client_secret: Some("mallory-secret".into()),
        email_domains: vec!["mallory.example".into()],
        enabled: true,
        ..Default::default()
    };
    let change = SsoChange::Set(settings);
    admin
        .configure_sso(&org_m, &change, api.sealer.clone())
        .await
        .unwrap();

    // The attacker starts a sign-in at A themselves, keeping its cookie and reading its nonce,
    // PKCE challenge and redirect URI out of the authorization URL.
    let mut attacker = Browser::new(&api);
    let own = attacker
        .get(&format!("{}/api/auth/login?org={org_a}", api.base))
        .await;
    assert_eq!(own.status().as_u16(), 303);
    let own_url = own.headers()[LOCATION].to_str().unwrap().to_owned();
    let own_query = query_of(&own_url);
    let endpoint = own_url.split('?').next().unwrap().to_owned();
    *attacker_idp.forward.lock().unwrap() = Some(Forward {
        authorization_endpoint: endpoint,
        client_id: own_query["client_id"].clone(),
        redirect_uri: own_query["redirect_uri"].clone(),
        nonce: own_query["nonce"].clone(),
        code_challenge: own_query["code_challenge"].clone(),
    });

    // The victim opens the attacker's link: a sign-in at M, which M's provider forwards to A's.
    let lure = victim
        .get(&format!("{}/api/auth/login?org={org_m}", api.base))
        .await;
    assert_eq!(lure.status().as_u16(), 303);
    let to_attacker = lure.headers()[LOCATION].to_str().unwrap().to_owned();
    assert!(
        to_attacker.starts_with(&attacker_idp.issuer),
        "{to_attacker}"
    );
    let back = victim.follow(&to_attacker, &api.base, "alice").await;
    assert!(
        query_of(&back).contains_key("code"),
        "A's provider issued a code: {back}"
    );
    let victims_callback = victim.get(&back).await;
    assert_ne!(
        victims_callback.status().as_u16(),
        303,
        "the victim is not signed in by it"
    );

    // Whatever code reached the attacker, they try it at the callback A's sign-in uses, with
    // their own sign-in in progress and the `iss` A's provider would send.
    let captured = attacker_idp.codes();
    for code in &captured {
        let mut replay = reqwest::Url::parse(&own_query["redirect_uri"]).unwrap();
        replay
            .query_pairs_mut()
            .append_pair("code", code)
            .append_pair("state", &own_query["state"])
            .append_pair("iss", &provider.issuer);
        attacker.get(replay.as_str()).await;
    }
    assert_eq!(
        attacker.cookie(&api.base, "ks_session"),
        None,
        "the attacker was signed in as Alice ({alice}) with a code sent to their provider"
    );
    assert_eq!(
        captured,
        Vec::<String>::new(),
        "A's code never reaches M's provider"
    );
}

/// Starts a sign-in at the default organisation in `browser` and takes it through the
/// provider as `login`; returns the URL the provider sends the browser back to, unvisited.
async fn through_the_provider(api: &Api, browser: &mut Browser, login: &str) -> String {
    let org = &api.user.org;
    let start = browser
        .get(&format!("{}/api/auth/login?org={org}", api.base))
        .await;
    assert_eq!(start.status().as_u16(), 303);
    let to_provider = start.headers()[LOCATION].to_str().unwrap().to_owned();
    browser.follow(&to_provider, &api.base, login).await
}

/// `url` with its query parameter `name` set to `value`, or removed for `None`.
fn with_param(url: &str, name: &str, value: Option<&str>) -> String {
    let mut url = reqwest::Url::parse(url).unwrap();
    let kept: Vec<(String, String)> = url
        .query_pairs()
        .into_owned()
        .filter(|(k, _)| k != name)
        .collect();
    let mut q = url.query_pairs_mut();
    q.clear().extend_pairs(kept);
    if let Some(value) = value {
        q.append_pair(name, value);
    }
    drop(q);
    url.to_string()
}

#[tokio::test]
async fn a_response_whose_iss_is_another_issuer_or_missing_though_always_sent_signs_nobody_in() {
    let api = Api::start().await;
    let provider = Provider::start(&api, accounts()).await;
    configure(&api, &provider, None, false).await;
    provision(&api, "alice@example.com").await;
    let mut browser = Browser::new(&api);

    let back = through_the_provider(&api, &mut browser, "alice").await;
    assert_eq!(query_of(&back).get("iss"), Some(&provider.issuer), "{back}");
    let forged = with_param(&back, "iss", Some("https://attacker.example"));
    let refused = browser.get(&forged).await;
    assert_eq!(refused.status().as_u16(), 400);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["code"], "sign_in_failed");

    // oidc-provider's metadata says it sends `iss` in every response: one without it is not
    // this provider's.
    let back = through_the_provider(&api, &mut browser, "alice").await;
    let stripped = with_param(&back, "iss", None);
    assert_eq!(browser.get(&stripped).await.status().as_u16(), 400);
    assert_eq!(browser.cookie(&api.base, "ks_session"), None);

    // The genuine answer, `iss` and all, signs in.
    let back = through_the_provider(&api, &mut browser, "alice").await;
    assert_eq!(browser.get(&back).await.status().as_u16(), 303);
    assert!(browser.cookie(&api.base, "ks_session").is_some());
}

#[tokio::test]
async fn the_retired_shared_callback_signs_nobody_in_and_names_the_organisations_redirect_uri() {
    let api = Api::start().await;
    let provider = Provider::start(&api, accounts()).await;
    configure(&api, &provider, None, false).await;
    provision(&api, "alice@example.com").await;
    let org = api.user.org.clone();
    let own = format!("{}/api/auth/callback/{org}", api.origin);
    let shared = format!("{}/api/auth/callback", api.origin);
    for navigation in [false, true] {
        // The provider still has the shared callback registered, and sends the browser there.
        let mut browser = Browser::new(&api);
        let start = browser
            .get(&format!("{}/api/auth/login?org={org}", api.base))
            .await;
        let to_provider = start.headers()[LOCATION].to_str().unwrap().to_owned();
        assert_eq!(query_of(&to_provider)["redirect_uri"], own);
        let to_provider = with_param(&to_provider, "redirect_uri", Some(&shared));
        let back = browser.follow(&to_provider, &api.base, "alice").await;
        assert!(back.starts_with(&format!("{shared}?")), "{back}");
        let mut req = browser.http.get(&back);
        let ks_login = browser.cookie(&api.base, "ks_login").unwrap();
        req = req.header("cookie", format!("ks_login={ks_login}"));
        if navigation {
            req = req.header("accept", "text/html");
        }
        let answer = api.execute(req).await;
        let cleared = answer.headers()["set-cookie"].to_str().unwrap().to_owned();
        assert!(cleared.starts_with("ks_login=;"), "{cleared}");
        if navigation {
            assert_eq!(answer.status().as_u16(), 303);
            let location = answer.headers()[LOCATION].to_str().unwrap();
            assert_eq!(location, format!("/?signin=redirect_uri_changed&org={org}"));
        } else {
            assert_eq!(answer.status().as_u16(), 400);
            let body: Value = answer.json().await.unwrap();
            assert_eq!(body["error"]["code"], "redirect_uri_changed");
            let message = body["error"]["message"].as_str().unwrap();
            assert!(message.contains(&own), "{message}");
        }
    }
}

#[tokio::test]
async fn an_email_the_provider_calls_unverified_binds_nobody_and_creates_nobody() {
    let api = Api::start().await;
    let provider = Provider::start(&api, accounts()).await;
    let ulla = provision(&api, "ulla@example.com").await;
    let vera = provision(&api, "vera@example.com").await;
    for just_in_time in [false, true] {
        configure(&api, &provider, None, just_in_time).await;
        let members = api.svc.store.list_members(&api.user.org).await.unwrap();
        let mut browser = Browser::new(&api);
        let back = through_the_provider(&api, &mut browser, "ulla").await;
        let refused = browser.get(&back).await;
        assert_eq!(refused.status().as_u16(), 403);
        let body: Value = refused.json().await.unwrap();
        assert_eq!(body["error"]["code"], "email_unverified");
        assert_eq!(browser.cookie(&api.base, "ks_session"), None);
        let after = api.svc.store.list_members(&api.user.org).await.unwrap();
        assert_eq!(after, members, "nothing is bound or created");
        // A browser page is told on the sign-in page.
        let back = through_the_provider(&api, &mut browser, "ulla").await;
        let page = browser.http.get(&back).header("accept", "text/html");
        let ks_login = browser.cookie(&api.base, "ks_login").unwrap();
        let page = api
            .execute(page.header("cookie", format!("ks_login={ks_login}")))
            .await;
        assert_eq!(page.headers()[LOCATION], "/?signin=email_unverified");
    }
    let member = api
        .svc
        .store
        .get_member(&api.user.org, &ulla)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(member.identity, None);
    // A verified address signs in and binds as before.
    let mut browser = Browser::new(&api);
    let back = through_the_provider(&api, &mut browser, "vera").await;
    assert_eq!(browser.get(&back).await.status().as_u16(), 303);
    let member = api
        .svc
        .store
        .get_member(&api.user.org, &vera)
        .await
        .unwrap()
        .unwrap();
    assert!(member.identity.is_some());
}
