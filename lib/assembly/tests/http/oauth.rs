//! OAuth-protected MCP servers end to end, against servers nobody here wrote: an admin adds
//! one by its URL (discovery and Dynamic Client Registration), a member connects through the
//! authorization code flow as a browser would, and turns call its tools with the member's
//! grant; grants refresh once however many callers need them, and leave with a disconnect.

use std::sync::Arc;

use knowledge_core::clock::SystemClock;
use knowledge_core::domain::GrantOwner;
use knowledge_core::ids::{OrgId, UserId};
use knowledge_core::ports::{IntegrationError, Integrations, Store};
use knowledge_core::seal::Sealer;
use knowledge_core::vault::{Vault, VaultTiming};
use knowledge_egress::Egress;
use knowledge_mcp::{StoredIntegrations, Timeouts};
use knowledge_oauth::{BoundedHttp, HttpAuthorizationServers};
use knowledge_test_support::WAIT;
use knowledge_test_support::oauth::{RotatingServer, SdkExampleServer, authorize};
use reqwest::Method;
use serde_json::{Value, json};

use crate::mcp::{call, scripted};
use crate::support::{Api, BASE, Reply, Setup, User, open_store};

/// A request as the app sends it: `user`'s cookie (and `extra` cookies), the application's
/// Origin, a JSON body.
async fn request(
    api: &Api, user: &User, method: Method, path: &str, body: Option<Value>, extra: &[&str],
) -> Reply {
    let cookies = std::iter::once(user.cookie.as_str())
        .chain(extra.iter().copied())
        .collect::<Vec<_>>()
        .join("; ");
    let mut req = (api.http)
        .request(method, format!("{BASE}{path}"))
        .header("cookie", cookies)
        .header("origin", &api.origin);
    if let Some(body) = body {
        req = req.json(&body);
    }
    api.send(req).await
}

/// The admin adds the MCP server at `url` as `wiki`, authorized as `auth`.
async fn add(api: &Api, url: &str, auth: &str) -> Reply {
    let body = json!({ "url": url, "auth": auth });
    let path = "/api/admin/integrations/wiki";
    request(api, &api.user, Method::PUT, path, Some(body), &[]).await
}

/// A service whose admin added `server`'s MCP endpoint as `wiki`, authorized as `auth`.
async fn service_with(server: &RotatingServer, auth: &str) -> Api {
    let api = Api::start().await;
    let added = add(&api, &server.mcp_url(), auth).await;
    assert_eq!(added.status, 200, "{}", added.body);
    api
}

/// The same for each member's own account, with the admin's connected.
async fn connected_service(server: &RotatingServer) -> Api {
    let api = service_with(server, "oauth_member").await;
    assert_eq!(connect(&api, &api.user).await.status, 200);
    api
}

/// The `name=value` of the cookie `reply` sets under `name`.
fn set_cookie(reply: &Reply, name: &str) -> String {
    let header = (reply.headers.get_all("set-cookie").iter())
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with(&format!("{name}=")))
        .unwrap_or_else(|| panic!("no {name} cookie in {:?}", reply.headers));
    header.split(';').next().unwrap().to_owned()
}

/// A connect begun by `user` for `wiki`, up to the authorization server's redirect back (the
/// servers approve at once): the path and query it sends the browser to, and the connect's
/// cookie.
async fn begun(api: &Api, user: &User) -> (String, String) {
    let path = "/api/integrations/wiki/connect";
    let started = request(api, user, Method::POST, path, None, &[]).await;
    assert_eq!(started.status, 200, "{}", started.body);
    let cookie = set_cookie(&started, "ks_connect");
    let back = authorize(started.body["authorizationUrl"].as_str().unwrap()).await;
    let back = back.strip_prefix(BASE).expect("back to the service");
    (back.to_owned(), cookie)
}

/// Connects `user`'s own account to `wiki` as a browser does: begins the connect, follows the
/// authorization URL and brings the redirect back to the service with the connect's cookie.
/// Returns the callback's reply.
async fn connect(api: &Api, user: &User) -> Reply {
    let (path, cookie) = begun(api, user).await;
    request(api, user, Method::GET, &path, None, &[&cookie]).await
}

/// `user`'s view of `wiki` in their connections.
async fn connection(api: &Api, user: &User) -> Value {
    let list = request(api, user, Method::GET, "/api/integrations", None, &[]).await;
    assert_eq!(list.status, 200, "{}", list.body);
    let found = list.body["connections"].as_array().unwrap().iter();
    found
        .clone()
        .find(|c| c["integration"] == "wiki")
        .cloned()
        .unwrap_or(Value::Null)
}

#[tokio::test]
async fn an_admin_adds_the_sdk_example_server_by_url_and_a_member_connects_and_asks_through_it() {
    let server = SdkExampleServer::start().await;
    let (agent, _offered) = scripted(vec![call("wiki_greet", json!({ "name": "Ann" }))]);
    let api = Api::start_setup(Setup::new(agent)).await;

    let added = add(&api, &server.url, "oauth_member").await;
    assert_eq!(added.status, 200, "{}", added.body);
    let oauth = &added.body["oauth"];
    assert_eq!(oauth["issuer"], server.issuer.as_str());
    assert_eq!(oauth["registration"], "dynamic");
    let redirect = format!("{BASE}/api/oauth/callback/{}/wiki", api.user.org);
    assert_eq!(oauth["redirectUri"], redirect.as_str());
    assert_eq!(connection(&api, &api.user).await["state"], "not_connected");

    let back = connect(&api, &api.user).await;
    assert_eq!((back.status, &back.body), (200, &json!({ "ok": true })));
    let view = connection(&api, &api.user).await;
    assert_eq!(view["state"], "connected", "{view}");
    assert_eq!(view["connectedBy"], api.user.id.as_str());

    let session = api.create("Greet Ann through the wiki").await;
    api.settle().await;
    // The example's tool says nothing of what it does, so it asks the member first.
    let events = api.all_events(&session).await;
    let asked = &events[1];
    assert_eq!(asked["payload"]["approval"]["state"], "pending", "{asked}");
    let body = json!({ "sessionId": session, "toolUseId": asked["id"], "decision": "approve" });
    let approved = api.post("/api/managed-agents/approve", body).await;
    assert_eq!(approved.status, 200, "{}", approved.body);
    api.settle().await;
    let events = api.all_events(&session).await;
    let result = events
        .iter()
        .find(|e| e["type"] == "tool_result")
        .unwrap_or_else(|| panic!("no tool result in {events:?}"));
    assert!(result.to_string().contains("Hello, Ann!"), "{result}");
}

#[tokio::test]
async fn an_admin_adding_the_same_server_again_keeps_its_registration() {
    let server = SdkExampleServer::start().await;
    let api = Api::start().await;
    let first = add(&api, &server.url, "oauth_member").await;
    let again = add(&api, &server.url, "oauth_organisation").await;
    assert_eq!(again.status, 200, "{}", again.body);
    assert_eq!(
        again.body["oauth"]["clientId"],
        first.body["oauth"]["clientId"]
    );
}

#[tokio::test]
async fn a_server_that_needs_no_authorization_is_refused_as_oauth_and_nothing_is_stored() {
    let open = knowledge_mcp::test_server::start(&[]).await;
    let api = Api::start().await;
    let refused = add(&api, &open.url, "oauth_member").await;
    assert_eq!(
        (refused.status, refused.code()),
        (400, "not_oauth_protected")
    );
    let listed = request(
        &api,
        &api.user,
        Method::GET,
        "/api/admin/integrations",
        None,
        &[],
    );
    assert_eq!(listed.await.body["integrations"], json!([]));
}

/// The organisations' integrations over `store`, with a vault of their own: what a RunTool
/// step of a process builds.
fn integrations_over(store: Arc<dyn Store>, sealer: Arc<Sealer>) -> StoredIntegrations {
    let http = BoundedHttp::new(Egress::ANYWHERE).unwrap();
    let servers = Arc::new(HttpAuthorizationServers::new(http));
    let clock = Arc::new(SystemClock);
    let vault = Vault::new(
        store.clone(),
        servers,
        sealer.clone(),
        clock,
        VaultTiming::default(),
    );
    let fixed = Arc::new(knowledge_core::adapters::integrations::FixedIntegrations::new());
    StoredIntegrations::new(store, sealer, fixed, Timeouts::default(), Egress::ANYWHERE)
        .with_vault(Arc::new(vault))
}

/// The organisation's integrations as a RunTool step of another process reaches them: its own
/// store handle and vault over the same data.
async fn another_process(api: &Api) -> StoredIntegrations {
    integrations_over(open_store(api.dir.path()).await, api.sealer.clone())
}

/// `wiki`'s tool `whoami`, called as `user` of `org` through `integrations` (which must reach
/// it).
async fn whoami(
    integrations: &StoredIntegrations, org: &OrgId, user: &UserId,
) -> Result<Value, IntegrationError> {
    let reached = integrations.connected(org, user).await.unwrap();
    let wiki = reached
        .iter()
        .find(|i| i.name() == "wiki")
        .expect("reached");
    let never = std::pin::pin!(std::future::pending::<()>());
    wiki.call("wiki_whoami", &json!({}), never).await
}

#[tokio::test]
async fn twenty_tool_calls_in_two_processes_when_the_token_expires_cause_one_refresh() {
    // The first access token lasts 30 s, under the vault's 60 s margin: due at once; the
    // refreshed one an hour; each refresh takes a second, so the callers meet it in flight.
    let server = RotatingServer::expiring(30).await;
    let api = connected_service(&server).await;
    let processes = [
        Arc::new(another_process(&api).await),
        Arc::new(another_process(&api).await),
    ];
    let calls: Vec<_> = (0..20)
        .map(|i| {
            let (integrations, user) = (processes[i % 2].clone(), api.user.clone());
            tokio::spawn(async move { whoami(&integrations, &user.org, &user.id).await })
        })
        .collect();
    for call in calls {
        let answer = call.await.unwrap().expect("the call succeeds");
        assert!(answer.to_string().contains("client"), "{answer}");
    }
    let stats = server.stats().await;
    assert_eq!(stats["refreshes"], 1, "{stats}");
    assert_eq!(stats["reuses"], 0, "{stats}");
}

#[tokio::test]
async fn a_token_the_server_stops_taking_is_refreshed_once_and_the_call_retried() {
    let server = RotatingServer::with_mcp(3600).await;
    let api = connected_service(&server).await;
    server.expire_access_tokens().await;
    let integrations = another_process(&api).await;
    let answer = whoami(&integrations, &api.user.org, &api.user.id)
        .await
        .unwrap();
    assert!(answer.to_string().contains("client"), "{answer}");
    assert_eq!(server.stats().await["refreshes"], 1);
}

/// What reached the process's subscriber, which has the service's log filter: rmcp's worker's
/// reports of a server's 401 that were logged at all (seen before the filter, outermost), and
/// those it wrote at ERROR.
#[derive(Clone, Default)]
struct Refusals {
    logged: Arc<std::sync::atomic::AtomicUsize>,
    errors: Arc<std::sync::Mutex<Vec<String>>>,
}

/// An event's message, when it is rmcp's worker's report of a 401.
fn refusal(event: &tracing::Event<'_>) -> Option<String> {
    if event.metadata().target() != "rmcp::transport::worker" {
        return None;
    }
    let mut line = String::new();
    event.record(
        &mut |field: &tracing::field::Field, value: &dyn std::fmt::Debug| {
            if field.name() == "message" {
                line = format!("{value:?}");
            }
        },
    );
    (line.contains("AuthRequired") || line.contains("Auth required")).then_some(line)
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Refusals {
    fn event_enabled(
        &self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>,
    ) -> bool {
        if refusal(event).is_some() {
            self.logged
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        true
    }

    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        if *event.metadata().level() == tracing::Level::ERROR
            && let Some(line) = refusal(event)
        {
            self.errors.lock().unwrap().push(line);
        }
    }
}

#[test]
fn only_rmcps_report_of_a_401_is_left_out_of_the_log() {
    use knowledge_assembly::logs::is_expected;
    let closed = "worker quit with fatal: Transport channel closed, when AuthRequired(\
                  AuthRequiredError { www_authenticate_header: \"Bearer\" })";
    assert!(is_expected(closed));
    assert!(is_expected(
        "worker quit with fatal: Auth required, when send initialize request"
    ));
    let broken = "worker quit with fatal: Transport channel closed, when Client(reqwest)";
    assert!(!is_expected(broken));
    assert!(!is_expected("worker quit with join error: panicked"));
}

#[tokio::test]
async fn a_routine_refresh_after_the_servers_401_logs_no_error() {
    use tracing_subscriber::layer::SubscriberExt;
    // The process's subscriber (no other test sets one): rmcp's worker logs from tasks on any
    // thread. Other tests' 401s may be counted too; each must be left out all the same.
    let refusals = Refusals::default();
    let subscriber = tracing_subscriber::registry()
        .with(knowledge_assembly::logs::ExpectedErrors)
        .with(refusals.clone());
    tracing::subscriber::set_global_default(subscriber).expect("no other test sets one");
    let server = RotatingServer::with_mcp(3600).await;
    let api = connected_service(&server).await;
    server.expire_access_tokens().await;
    let integrations = another_process(&api).await;
    let answer = whoami(&integrations, &api.user.org, &api.user.id).await;
    assert!(answer.is_ok(), "{answer:?}");
    assert_eq!(server.stats().await["refreshes"], 1);
    // The refused session's worker reports the 401 as it ends, on its own task.
    let reported = tokio::time::timeout(WAIT, async {
        while refusals.logged.load(std::sync::atomic::Ordering::SeqCst) == 0 {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    });
    reported.await.expect("rmcp reported the server's 401");
    assert_eq!(*refusals.errors.lock().unwrap(), Vec::<String>::new());
}

#[tokio::test]
async fn a_failing_authorization_server_is_named_as_the_party_that_failed() {
    let server = RotatingServer::with_mcp(3600).await;
    let api = connected_service(&server).await;
    server.expire_access_tokens().await;
    server.fail_token_endpoint(Some(500)).await;
    let integrations = another_process(&api).await;
    let failed = whoami(&integrations, &api.user.org, &api.user.id).await;
    let Err(IntegrationError::Unavailable(why)) = &failed else {
        panic!("{failed:?}")
    };
    assert!(
        why.contains("authorization server") && why.contains("500"),
        "{why}"
    );
    assert!(!why.contains("MCP server"), "{why}");
    // It issued nothing: the grant keeps its refresh token and refreshes once the server does.
    server.fail_token_endpoint(None).await;
    let answer = whoami(&integrations, &api.user.org, &api.user.id).await;
    assert!(answer.is_ok(), "{answer:?}");
    assert_eq!(server.stats().await["refreshes"], 1);
}

#[tokio::test]
async fn disconnecting_deletes_the_grant_revokes_it_and_the_tools_are_no_longer_offered() {
    let server = RotatingServer::with_mcp(3600).await;
    let api = connected_service(&server).await;
    let path = "/api/integrations/wiki/connection";
    let gone = request(&api, &api.user, Method::DELETE, path, None, &[]).await;
    assert_eq!((gone.status, &gone.body), (200, &json!({ "ok": true })));
    let owner = GrantOwner::Member(api.user.id.clone());
    let stored = api
        .svc
        .store
        .get_grant(&api.user.org, &owner, "wiki")
        .await
        .unwrap();
    assert_eq!(stored, None);
    assert_eq!(server.stats().await["revocations"], 1);
    assert_eq!(connection(&api, &api.user).await["state"], "not_connected");
    let integrations = another_process(&api).await;
    let reached = integrations
        .connected(&api.user.org, &api.user.id)
        .await
        .unwrap();
    assert!(reached.iter().all(|i| i.name() != "wiki"));
    let again = request(&api, &api.user, Method::DELETE, path, None, &[]).await;
    assert_eq!(again.status, 404);
}

#[tokio::test]
async fn the_organisations_account_is_connected_by_an_admin_and_used_by_every_member() {
    let server = RotatingServer::with_mcp(3600).await;
    let api = service_with(&server, "oauth_organisation").await;
    let viewer = api.new_user(&api.user.org).await;
    // A member cannot connect the organisation's account.
    let own = request(
        &api,
        &viewer,
        Method::POST,
        "/api/integrations/wiki/connect",
        None,
        &[],
    );
    assert_eq!(own.await.code(), "wrong_kind");
    let path = "/api/admin/integrations/wiki/connect";
    let denied = request(&api, &viewer, Method::POST, path, None, &[]).await;
    assert_eq!(denied.status, 403);
    let started = request(&api, &api.user, Method::POST, path, None, &[]).await;
    assert_eq!(started.status, 200, "{}", started.body);
    let cookie = set_cookie(&started, "ks_connect");
    let back = authorize(started.body["authorizationUrl"].as_str().unwrap()).await;
    let path = back.strip_prefix(BASE).unwrap();
    let back = request(&api, &api.user, Method::GET, path, None, &[&cookie]).await;
    assert_eq!(back.status, 200);
    let view = connection(&api, &viewer).await;
    assert_eq!(
        (view["kind"].as_str(), view["state"].as_str()),
        (Some("organisation"), Some("connected"))
    );
    let integrations = another_process(&api).await;
    let answer = whoami(&integrations, &viewer.org, &viewer.id).await;
    assert!(
        answer.is_ok(),
        "the viewer reaches it with the organisation's account: {answer:?}"
    );
    // Removing the integration removes the organisation's grant and revokes it.
    let path = "/api/admin/integrations/wiki";
    let removed = request(&api, &api.user, Method::DELETE, path, None, &[]).await;
    assert_eq!(removed.status, 200, "{}", removed.body);
    assert_eq!(server.stats().await["revocations"], 1);
}

#[tokio::test]
async fn deprovisioning_a_member_deletes_their_grant_and_revokes_it_at_the_server() {
    let server = RotatingServer::with_mcp(3600).await;
    let api = Api::start().await;
    let org = api.user.org.clone();
    api.set_sso(&org, true).await;
    let token = api.admin().generate_scim_token(&org).await.unwrap();
    let scim = |method: Method, path: &str, body: Option<Value>| {
        let mut req = (api.http)
            .request(method, format!("{BASE}/api/scim/v2{path}"))
            .bearer_auth(&token);
        if let Some(body) = body {
            req = req
                .header("content-type", "application/scim+json")
                .body(body.to_string());
        }
        api.send(req)
    };
    let core = "urn:ietf:params:scim:schemas:core:2.0:User";
    let body = json!({ "schemas": [core], "userName": "ann@example.com", "active": true });
    let created = scim(Method::POST, "/Users", Some(body)).await;
    assert_eq!(created.status, 201, "{}", created.body);
    let id = UserId::parse(created.body["id"].as_str().unwrap()).unwrap();
    let ann = User {
        cookie: api.cookie(&id, &org),
        id: id.clone(),
        org: org.clone(),
    };
    assert_eq!(
        add(&api, &server.mcp_url(), "oauth_member").await.status,
        200
    );
    assert_eq!(connect(&api, &ann).await.status, 200);
    let owner = GrantOwner::Member(id.clone());
    assert!(
        api.svc
            .store
            .get_grant(&org, &owner, "wiki")
            .await
            .unwrap()
            .is_some()
    );

    let removed = scim(Method::DELETE, &format!("/Users/{id}"), None).await;
    assert_eq!(removed.status, 204, "{}", removed.body);
    assert_eq!(
        api.svc.store.get_grant(&org, &owner, "wiki").await.unwrap(),
        None
    );
    let stats = server.stats().await;
    assert_eq!(
        (
            stats["revocations"].as_u64(),
            stats["revokedGrants"].as_u64()
        ),
        (Some(1), Some(1))
    );
}

/// What an attacker makes of a genuine callback (its path and the connect's cookie): the
/// path and cookies sent instead.
type Tamper = dyn Fn(&str, &str) -> (String, Vec<String>);

/// Whether `user` holds a grant for `wiki`.
async fn holds_grant(api: &Api, user: &User) -> bool {
    let owner = GrantOwner::Member(user.id.clone());
    let grant = api
        .svc
        .store
        .get_grant(&user.org, &owner, "wiki")
        .await
        .unwrap();
    grant.is_some()
}

#[tokio::test]
async fn a_callback_refused_for_any_of_the_attacks_on_the_flow_connects_nothing_and_uses_the_state_up()
 {
    let server = RotatingServer::with_mcp(3600).await;
    let api = service_with(&server, "oauth_member").await;
    let user = api.user.clone();
    let get = |path: String, cookies: Vec<String>| {
        let (api, user) = (&api, &user);
        async move {
            let cookies: Vec<&str> = cookies.iter().map(String::as_str).collect();
            request(api, user, Method::GET, &path, None, &cookies).await
        }
    };
    // Each attack on a fresh connect; after each, the genuine callback finds its state used.
    let attacks: Vec<(&str, Box<Tamper>)> = vec![
        (
            "another browser (no connect cookie)",
            Box::new(|path, _| (path.into(), vec![])),
        ),
        (
            "another browser's connect cookie",
            Box::new(|path, _| (path.into(), vec!["ks_connect=00ff".into()])),
        ),
        (
            "an issuer that is not the server's (a mix-up)",
            Box::new(|path, cookie| {
                (
                    format!("{path}&iss=https%3A%2F%2Fevil.example%2F"),
                    vec![cookie.into()],
                )
            }),
        ),
        (
            "another integration's callback",
            Box::new(|path, cookie| (path.replacen("/wiki?", "/crm?", 1), vec![cookie.into()])),
        ),
        (
            "another organisation's callback",
            Box::new(|path, cookie| {
                (
                    path.replacen("org_default", "org_0123456789abcdef0123456789abcdef", 1),
                    vec![cookie.into()],
                )
            }),
        ),
        (
            "the server's refusal",
            Box::new(|path, cookie| {
                let state = path
                    .split("state=")
                    .nth(1)
                    .unwrap()
                    .split('&')
                    .next()
                    .unwrap();
                (
                    format!(
                        "/api/oauth/callback/org_default/wiki?error=access_denied&state={state}"
                    ),
                    vec![cookie.into()],
                )
            }),
        ),
    ];
    for (attack, tamper) in attacks {
        let (path, cookie) = begun(&api, &user).await;
        let (bad_path, cookies) = tamper(&path, &cookie);
        let refused = get(bad_path, cookies).await;
        assert_eq!(
            (refused.status, refused.code()),
            (400, "connect_failed"),
            "{attack}"
        );
        assert!(!holds_grant(&api, &user).await, "{attack}");
        let genuine = get(path, vec![cookie]).await;
        assert_eq!(
            genuine.code(),
            "connect_failed",
            "{attack}: the state is used up"
        );
        assert!(!holds_grant(&api, &user).await, "{attack}");
    }
    // A state never issued, and a genuine callback replayed.
    let unknown = "/api/oauth/callback/org_default/wiki?code=x&state=never-issued";
    assert_eq!(get(unknown.into(), vec![]).await.code(), "connect_failed");
    let (path, cookie) = begun(&api, &user).await;
    assert_eq!(get(path.clone(), vec![cookie.clone()]).await.status, 200);
    assert!(holds_grant(&api, &user).await);
    let replayed = get(path, vec![cookie]).await;
    assert_eq!(replayed.code(), "connect_failed");
}

#[tokio::test]
async fn a_browser_coming_back_is_sent_to_the_connections_page_never_elsewhere() {
    let server = RotatingServer::with_mcp(3600).await;
    let api = service_with(&server, "oauth_member").await;
    let (path, cookie) = begun(&api, &api.user).await;
    let page = (api.http)
        .get(format!("{BASE}{path}"))
        .header("cookie", format!("{}; {cookie}", api.user.cookie))
        .header("accept", "text/html");
    let back = api.send(page).await;
    assert_eq!(back.status, 303);
    assert_eq!(back.headers["location"], "/connections?connected=wiki");
    let cleared = back.headers["set-cookie"].to_str().unwrap();
    assert!(
        cleared.starts_with("ks_connect=;") && cleared.contains("Max-Age=0"),
        "{cleared}"
    );
    let failed = (api.http)
        .get(format!(
            "{BASE}/api/oauth/callback/org_default/wiki?state=forged&code=x"
        ))
        .header("accept", "text/html");
    let failed = api.send(failed).await;
    assert_eq!(
        failed.headers["location"],
        "/connections?connect_error=connect_failed"
    );
}

#[tokio::test]
async fn a_deployment_refusing_private_destinations_never_discovers_a_server_on_one() {
    let server = RotatingServer::with_mcp(3600).await;
    let api = Api::start_setup(Setup {
        egress: Egress::PUBLIC_ONLY,
        ..Setup::new(Arc::new(knowledge_core::adapters::agent::BuiltinAgent))
    })
    .await;
    let refused = add(&api, &server.mcp_url(), "oauth_member").await;
    assert_eq!(
        (refused.status, refused.code()),
        (400, "destination_refused"),
        "{}",
        refused.body
    );
    let listed = request(
        &api,
        &api.user,
        Method::GET,
        "/api/admin/integrations",
        None,
        &[],
    );
    assert_eq!(listed.await.body["integrations"], json!([]));
}

#[tokio::test]
async fn the_client_metadata_document_is_served_only_for_an_integration_whose_client_it_is() {
    use knowledge_core::domain::{
        Actor, AuditAction, AuditEntry, ClientRegistration, IntegrationAuth, IntegrationConfig,
        OAuthAccess, OAuthClient, OAuthServer,
    };
    let api = Api::start().await;
    let org = api.user.org.clone();
    let document = format!("{BASE}/api/oauth/clients/{org}/wiki.json");
    let config = |name: &str, registration| IntegrationConfig {
        name: name.into(),
        url: format!("https://{name}.example/mcp"),
        auth: IntegrationAuth::OauthMember,
        created_at: api.clock_now(),
        oauth: Some(OAuthAccess {
            server: OAuthServer {
                resource: format!("https://{name}.example/mcp"),
                issuer: "https://auth.example".into(),
                authorization_endpoint: "https://auth.example/authorize".into(),
                token_endpoint: "https://auth.example/token".into(),
                registration_endpoint: None,
                revocation_endpoint: None,
                scopes: vec![],
                iss_parameter_supported: false,
                client_id_metadata_document_supported: false,
            },
            client: OAuthClient {
                client_id: document.clone(),
                secret_sealed: None,
                registration,
            },
        }),
        org_grant_sealed: None,
        tool_rules: Default::default(),
    };
    for (name, registration) in [
        ("wiki", ClientRegistration::MetadataDocument),
        ("crm", ClientRegistration::Dynamic),
    ] {
        let audit = AuditEntry::new(
            &org,
            api.clock_now(),
            Actor::Admin,
            AuditAction::IntegrationConnected,
            name,
        );
        api.svc
            .store
            .put_integration(&org, &config(name, registration), &audit)
            .await
            .unwrap();
    }
    let served = api
        .get(&format!("/api/oauth/clients/{org}/wiki.json"))
        .await;
    assert_eq!(served.status, 200, "{}", served.body);
    assert_eq!(served.body["client_id"], document.as_str());
    let redirect = format!("{BASE}/api/oauth/callback/{org}/wiki");
    assert_eq!(served.body["redirect_uris"], json!([redirect]));
    assert_eq!(served.body["token_endpoint_auth_method"], "none");
    for path in [
        format!("/api/oauth/clients/{org}/crm.json"),
        format!("/api/oauth/clients/{org}/none.json"),
        format!("/api/oauth/clients/{org}/wiki"),
        "/api/oauth/clients/org_0123456789abcdef0123456789abcdef/wiki.json".to_owned(),
    ] {
        assert_eq!(api.get(&path).await.status, 404, "{path}");
    }
}

/// Set in a child process of the test below: the data directory, and the organisation and the
/// user whose grant it uses, one per line.
const CHILD: &str = "KNOWLEDGE_TEST_GRANT_CHILD";

/// Ten tool calls at once from this process, as a RunTool step of each would make them, on
/// the SQLite file in `spec`'s directory. Panics (a failed exit) unless all succeed.
async fn child_calls(spec: &str) {
    let lines: Vec<&str> = spec.lines().collect();
    let store =
        Arc::new(knowledge_sqlite::SqliteStore::open(std::path::Path::new(lines[0])).unwrap());
    let org = OrgId::parse(lines[1]).unwrap();
    let user = UserId::parse(lines[2]).unwrap();
    let sealer = Arc::new(Sealer::new(&[9; 32]).unwrap());
    let integrations = Arc::new(integrations_over(store, sealer));
    let calls: Vec<_> = (0..10)
        .map(|_| {
            let (integrations, org, user) = (integrations.clone(), org.clone(), user.clone());
            tokio::spawn(async move { whoami(&integrations, &org, &user).await.unwrap() })
        })
        .collect();
    for call in calls {
        let answer = call.await.unwrap();
        assert!(answer.to_string().contains("client"), "{answer}");
    }
}

#[tokio::test]
async fn tool_calls_in_two_processes_on_one_sqlite_file_when_the_token_expires_cause_one_refresh() {
    if let Ok(spec) = std::env::var(CHILD) {
        return child_calls(&spec).await;
    }
    // The first access token lasts 30 s, under the vault's 60 s margin: due at once. The
    // refreshed one lasts an hour: a process that reads the grant after the refresh uses it.
    let server = RotatingServer::expiring(30).await;
    let dir = Arc::new(tempfile::tempdir().unwrap());
    let store = Arc::new(knowledge_sqlite::SqliteStore::open(dir.path()).unwrap());
    let api = Api::start_setup(Setup {
        dir: Some(dir.clone()),
        store: Some(store),
        ..Setup::new(Arc::new(knowledge_core::adapters::agent::BuiltinAgent))
    })
    .await;
    assert_eq!(
        add(&api, &server.mcp_url(), "oauth_member").await.status,
        200
    );
    assert_eq!(connect(&api, &api.user).await.status, 200);
    let spec = format!(
        "{}\n{}\n{}",
        dir.path().display(),
        api.user.org,
        api.user.id
    );
    let this = "oauth::tool_calls_in_two_processes_on_one_sqlite_file_when_the_token_expires_cause_one_refresh";
    let children: Vec<_> = (0..2)
        .map(|_| {
            tokio::process::Command::new(std::env::current_exe().unwrap())
                .args(["--exact", this, "--test-threads=1"])
                .env(CHILD, &spec)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .kill_on_drop(true)
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let done =
            tokio::time::timeout(std::time::Duration::from_secs(90), child.wait_with_output());
        let output = done.await.expect("the process finishes").unwrap();
        assert!(
            output.status.success(),
            "a process's calls failed: {}\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let stats = server.stats().await;
    assert_eq!(stats["refreshes"], 1, "{stats}");
    assert_eq!(stats["reuses"], 0, "{stats}");
}

#[tokio::test]
async fn an_admin_demoted_while_connecting_the_organisations_account_connects_nothing() {
    use knowledge_core::domain::Role;
    let server = RotatingServer::with_mcp(3600).await;
    let api = service_with(&server, "oauth_organisation").await;
    let second = api.new_user(&api.user.org).await;
    let admins = api.admin();
    admins
        .add_member(&second.org, Some(second.id.clone()), Role::Admin)
        .await
        .unwrap();
    let path = "/api/admin/integrations/wiki/connect";
    let started = request(&api, &second, Method::POST, path, None, &[]).await;
    assert_eq!(started.status, 200, "{}", started.body);
    let cookie = set_cookie(&started, "ks_connect");
    let back = authorize(started.body["authorizationUrl"].as_str().unwrap()).await;
    admins
        .add_member(&second.org, Some(second.id.clone()), Role::Viewer)
        .await
        .unwrap();
    let path = back.strip_prefix(BASE).unwrap();
    let refused = request(&api, &second, Method::GET, path, None, &[&cookie]).await;
    assert_eq!((refused.status, refused.code()), (400, "connect_failed"));
    let grant = api
        .svc
        .store
        .get_grant(&api.user.org, &GrantOwner::Organisation, "wiki");
    assert_eq!(grant.await.unwrap(), None);
}
