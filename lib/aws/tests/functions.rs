//! The Lambda functions in-process, on moto (DynamoDB, Step Functions, Secrets Manager) on
//! loopback: every sample event in `events/` fed to its function's handler, the DynamoDB
//! requests each endpoint makes counted, and the Step Functions start shown idempotent.
//! `scripts/test` starts moto and sets `KNOWLEDGE_TEST_DYNAMODB_ENDPOINT`.

use std::collections::{BTreeMap, BTreeSet};

use aws_sdk_sfn::config::Credentials;
use knowledge_aws::{
    ColdStart, ConfigError, Env, Function, Handler, Parts, Serves, SfnWorkflow, functions,
};
use knowledge_core::clock::{Clock, SystemClock};
use knowledge_core::domain::{
    Actor, AuditAction, AuditEntry, ClientRegistration, EventKind, GrantOwner, IntegrationAuth,
    IntegrationConfig, Member, NewEvent, OAuthClient, Org, Plan, Role, Session,
};
use knowledge_core::domain::{LEASE_MS, MAX_REVIVALS, MEMORY_ITEM, MemberDataKind};
use knowledge_core::ids::{OrgId, RunId, SessionId, SessionKey, UserId};
use knowledge_core::ports::{
    AuthorizationServers, DirectoryStore, OrgStore, SessionStore, StoredRows, Workflow,
};
use knowledge_core::seal::{Sealer, oauth_client_context};
use knowledge_core::signin;
use knowledge_core::sso::{self, SsoChange, SsoSettings};
use knowledge_core::vault::{GrantAt, Vault, VaultTiming};
use knowledge_dynamo::{DynamoStore, RequestCounter};
use knowledge_egress::Egress;
use knowledge_http::cookie::{CookieSigner, SECURE_COOKIE_NAME as COOKIE_NAME};
use knowledge_oauth::{BoundedHttp, HttpAuthorizationServers};
use knowledge_test_support::oauth::{RotatingServer, authorize};
use lambda_runtime::{Context, LambdaEvent};
use serde_json::{Value, json};
use std::sync::Arc;
use tower::ServiceExt;

const KEY_HEX: &str = "2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a";
const USER: &str = "usr_sample";
const ORG: &str = "org_sample";
const SECOND_ORG: &str = "org_second";
const SESSION: &str = "ses_0123456789abcdef0123456789abcdef";
const RUN: &str = "run_0123456789abcdef0123456789abcdef";
const ORIGIN: &str = "https://app.example.com";

fn endpoint() -> String {
    std::env::var("KNOWLEDGE_TEST_DYNAMODB_ENDPOINT").expect(
        "KNOWLEDGE_TEST_DYNAMODB_ENDPOINT must name moto's endpoint; scripts/test starts moto \
         on loopback and sets it",
    )
}

fn repo_file(path: &str) -> String {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    std::fs::read_to_string(root.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A deployment on moto: its own table, secrets and state machine; each function is built from
/// them as its cold start builds it.
struct Deployment {
    shared: aws_config::SdkConfig,
    env: Env,
    /// The table, counting requests in `counter` as the functions do.
    store: DynamoStore,
    /// The sample organisation's SCIM token.
    scim_token: String,
    /// A single-use sign-in link's secret for the sample user.
    link_secret: String,
    counter: RequestCounter,
    sfn: aws_sdk_sfn::Client,
    state_machine_arn: String,
    key: SessionKey,
}

impl Deployment {
    async fn new() -> Self {
        let shared = knowledge_aws_sdk::sdk_config_loader()
            .endpoint_url(endpoint())
            .region("us-east-1")
            .credentials_provider(Credentials::new("test", "test", None, None, "test"))
            .load()
            .await;
        let unique = uuid::Uuid::new_v4().simple().to_string();
        let table = format!("knowledge-fn-{unique}");
        let dynamodb =
            knowledge_dynamo::connect(Some(&endpoint()), RequestCounter::default()).await;
        knowledge_dynamo::create_table_if_missing(&dynamodb, &table)
            .await
            .unwrap();
        let secret = aws_sdk_secretsmanager::Client::new(&shared)
            .create_secret()
            .name(format!("signing-key-{unique}"))
            .secret_string(KEY_HEX)
            .send()
            .await
            .unwrap();
        let sealing = aws_sdk_secretsmanager::Client::new(&shared)
            .create_secret()
            .name(format!("sealing-key-{unique}"))
            .secret_string(KEY_HEX)
            .send()
            .await
            .unwrap();
        let sfn = aws_sdk_sfn::Client::new(&shared);
        let mut definition = repo_file("infra/statemachine/agent.asl.json");
        for h in Handler::ALL {
            definition = definition.replace(
                &h.resource(),
                &format!(
                    "arn:aws:lambda:us-east-1:123456789012:function:{}",
                    h.name()
                ),
            );
        }
        let machine = sfn
            .create_state_machine()
            .name(format!("agent-{unique}"))
            .definition(definition)
            .role_arn("arn:aws:iam::123456789012:role/agent-workflow")
            .send()
            .await
            .unwrap();
        let env = Env {
            table,
            state_machine_arn: Some(machine.state_machine_arn().to_owned()),
            app_origin: Some(ORIGIN.into()),
            signing_key_secret: Some(secret.arn().unwrap().to_owned()),
            sealing_key_secret: Some(sealing.arn().unwrap().to_owned()),
            provider_key_secret: None,
            lifetime: Default::default(),
            egress: Default::default(),
        };
        let counter = RequestCounter::default();
        let client = aws_sdk_dynamodb::Client::from_conf(
            knowledge_dynamo::config(&shared, counter.clone()).build(),
        );
        let store = DynamoStore::new(client, &env.table);
        let key = SessionKey {
            user: UserId::parse(USER).unwrap(),
            org: OrgId::parse(ORG).unwrap(),
            session: SessionId::parse(SESSION).unwrap(),
        };
        let state_machine_arn = env.state_machine_arn.clone().unwrap();
        let mut d = Self {
            shared,
            env,
            store,
            scim_token: String::new(),
            link_secret: String::new(),
            counter,
            sfn,
            state_machine_arn,
            key,
        };
        d.seed().await;
        d
    }

    /// The sample user, a member of both sample organisations (the first on the Business plan
    /// with SSO and a SCIM token), and an idle session holding one answered question.
    async fn seed(&mut self) {
        let store = &self.store;
        let now = SystemClock.now();
        for org in [ORG, SECOND_ORG] {
            let org = OrgId::parse(org).unwrap();
            store
                .put_org(&Org::new(org.clone(), org.as_str(), Plan::Business, now))
                .await
                .unwrap();
            let audit = AuditEntry::new(&org, now, Actor::Admin, AuditAction::MemberAdded, USER);
            let member = Member::new(org, self.key.user.clone(), Role::Viewer, now);
            store.create_member(&member, &audit).await.unwrap();
        }
        let org = OrgId::parse(ORG).unwrap();
        let sso = SsoChange::Set(SsoSettings {
            issuer: "https://idp.example.com".into(),
            client_id: "knowledge".into(),
            client_secret: Some("secret".into()),
            enabled: true,
            ..Default::default()
        });
        let sealer = Sealer::new(&[3; 32]).unwrap();
        let audit = AuditEntry::new(&org, now, Actor::Admin, AuditAction::SsoConfigured, ORG);
        sso::configure(store, &sealer, now, &org, &audit, &sso)
            .await
            .unwrap();
        let (token, hash) = knowledge_core::scim::token::generate(&org).unwrap();
        let audit = AuditEntry::new(
            &org,
            now,
            Actor::Admin,
            AuditAction::ScimTokenGenerated,
            ORG,
        );
        store.set_scim_token(&org, &hash, &audit).await.unwrap();
        self.scim_token = token;
        let link = signin::issue(store, store, now, &self.key.user, &org).await;
        self.link_secret = link.unwrap();
        let mut session = Session::new(self.key.clone(), "What is our refund policy?".into(), now);
        let events = session.place(
            now,
            vec![
                NewEvent::user_message("What is our refund policy?"),
                NewEvent::agent_message("Within 30 days."),
                NewEvent::status_idle(),
                NewEvent::user_message("Thanks"),
                NewEvent::agent_message("You are welcome."),
                NewEvent::status_idle(),
            ],
        );
        store.create_session(&session, &events, None).await.unwrap();
        self.counter.take();
    }

    /// The sample event of `function`, signed in as the sample user.
    fn event(&self, function: Function) -> lambda_http::Request {
        let signer = CookieSigner::from_hex(KEY_HEX).unwrap();
        let cookie = signer.mint(&self.key.user, &self.key.org, 600).unwrap();
        let text = repo_file(&format!("events/{}.json", function.name))
            .replace(
                "__Host-ks_session=REPLACE_WITH_OUTPUT_OF_knowledge_cookie",
                &format!("{COOKIE_NAME}={cookie}"),
            )
            .replace(
                "REPLACE_WITH_OUTPUT_OF_knowledge_scim_token",
                &self.scim_token,
            )
            .replace(
                "REPLACE_WITH_OUTPUT_OF_knowledge_signin_link",
                &self.link_secret,
            );
        lambda_http::request::from_str(&text).unwrap()
    }

    /// `function` as its cold start builds it, counting its DynamoDB requests in `counter`.
    async fn cold_start(&self, function: Function) -> ColdStart {
        ColdStart::load(
            Parts::of(function),
            &self.shared,
            &self.env,
            self.counter.clone(),
        )
        .await
        .unwrap()
    }

    /// The router of `function`.
    async fn router(&self, function: Function) -> axum::Router {
        self.cold_start(function).await.router().unwrap()
    }

    /// Feeds the sample event to the function; returns status, body and the DynamoDB requests
    /// it made.
    async fn invoke(&self, function: Function) -> (u16, Value, BTreeMap<String, u64>) {
        let response = self
            .router(function)
            .await
            .oneshot(self.event(function))
            .await
            .unwrap();
        let status = response.status().as_u16();
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
            .await
            .unwrap();
        let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        (status, body, self.take_checked(function.name))
    }

    /// The DynamoDB requests made since the last take, checked against what `function`'s
    /// policies allow ([`allowed`]).
    fn take_checked(&self, function: &str) -> BTreeMap<String, u64> {
        // Taking the counts forgets the transactions' item actions: those first.
        let items = self.counter.take_item_actions();
        let made = self.counter.take();
        allowed(function, &made, &items);
        made
    }

    async fn executions(&self) -> Vec<String> {
        self.sfn
            .list_executions()
            .state_machine_arn(&self.state_machine_arn)
            .send()
            .await
            .unwrap()
            .executions()
            .iter()
            .map(|e| e.name().to_owned())
            .collect()
    }
}

fn requests(pairs: &[(&str, u64)]) -> BTreeMap<String, u64> {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

/// Checks that the policies of `function`'s resource in template.yaml allow each DynamoDB
/// operation in `made` and each action the items of its transactions need (`items`, from
/// [`RequestCounter::take_item_actions`]): moto does not enforce IAM, so an operation the
/// policy leaves out would fail only on AWS. A transaction is authorised item by item, so
/// `TransactWriteItems` itself is not an action.
fn allowed(function: &str, made: &BTreeMap<String, u64>, items: &BTreeSet<String>) {
    let template = repo_file("template.yaml");
    let resource = format!("\n  {}Function:\n", pascal(function));
    let start = template.find(&resource).expect("the function's resource") + resource.len();
    let end = template[start..]
        .find("\n\n  ")
        .map_or(template.len(), |n| start + n);
    let policy = &template[start..end];
    let operations = made
        .keys()
        .filter(|op| *op != "TransactWriteItems")
        .map(|op| format!("dynamodb:{op}"));
    for action in operations.chain(items.iter().cloned()) {
        let granted = policy.lines().any(|line| {
            line.trim()
                .trim_start_matches("- ")
                .trim_start_matches("Action: ")
                == action
        });
        assert!(
            granted,
            "{function} needs {action}, which its policies in template.yaml do not allow"
        );
    }
}

#[tokio::test]
async fn create_session_event_creates_a_session_and_starts_its_execution() {
    let d = Deployment::new().await;
    let (status, body, made) = d.invoke(functions::CREATE_SESSION).await;
    assert_eq!(status, 200, "{body}");
    let run = body["runId"].as_str().unwrap();
    assert_eq!(d.executions().await, [run]);
    let id = SessionId::parse(body["id"].as_str().unwrap()).unwrap();
    let key = SessionKey {
        session: id,
        ..d.key.clone()
    };
    let stored = d.store.get_session(&key).await.unwrap().unwrap();
    assert_eq!(stored.run_id.map(|r| r.to_string()).as_deref(), Some(run));
    // One read of membership, organisation, usage and rate window; the integrations; one
    // transaction of session, event, rate window and query count.
    assert_eq!(
        made,
        requests(&[("BatchGetItem", 1), ("Query", 1), ("TransactWriteItems", 1)])
    );
}

#[tokio::test]
async fn transcript_event_reads_the_events_after_its_cursor_with_one_query() {
    let d = Deployment::new().await;
    let (status, body, made) = d.invoke(functions::TRANSCRIPT).await;
    assert_eq!(status, 200, "{body}");
    // The sample event asks for the events after evt_000000000003.
    let kinds: Vec<&str> = body["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["user_message", "agent_message", "status_idle"]);
    assert_eq!(body["events"][0]["id"], "evt_000000000004");
    assert_eq!(body["hasMore"], false);
    assert_eq!(made, requests(&[("BatchGetItem", 1), ("Query", 1)]));
}

#[tokio::test]
async fn message_event_appends_the_question_and_starts_a_run() {
    let d = Deployment::new().await;
    let (status, body, made) = d.invoke(functions::MESSAGE).await;
    assert_eq!((status, &body), (200, &json!({ "ok": true })));
    let session = d.store.get_session(&d.key).await.unwrap().unwrap();
    let run = session.run_id.expect("a run was claimed").to_string();
    assert_eq!(d.executions().await, [run]);
    let last = d.store.list_events(&d.key, 6, 10).await.unwrap();
    assert_eq!(last[0].body.text(), Some("And for annual plans?"));
    assert_eq!(
        made,
        requests(&[("BatchGetItem", 1), ("TransactWriteItems", 1)])
    );
}

#[tokio::test]
async fn list_sessions_event_lists_the_session() {
    let d = Deployment::new().await;
    let (status, body, made) = d.invoke(functions::LIST_SESSIONS).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["sessions"][0]["id"], SESSION);
    assert_eq!(body["sessions"].as_array().unwrap().len(), 1);
    assert_eq!(made, requests(&[("GetItem", 1), ("Query", 1)]));
}

#[tokio::test]
async fn titles_event_renames_the_session_in_one_transaction_with_its_rate_window() {
    let d = Deployment::new().await;
    let before = d.store.get_session(&d.key).await.unwrap().unwrap();
    d.counter.take();
    let (status, body, made) = d.invoke(functions::TITLES).await;
    assert_eq!(
        (status, &body),
        (200, &json!({ "ok": true, "title": "Refunds, renamed" }))
    );
    let after = d.store.get_session(&d.key).await.unwrap().unwrap();
    assert_eq!(after.title, "Refunds, renamed");
    assert_eq!(after.updated_at, before.updated_at);
    assert_eq!(
        made,
        requests(&[("BatchGetItem", 1), ("TransactWriteItems", 1)])
    );
}

#[tokio::test]
async fn memory_event_reads_the_membership_the_memory_and_the_switch_and_a_forget_is_one_transaction()
 {
    let d = Deployment::new().await;
    let from = knowledge_core::domain::SavedFrom {
        session: &d.key.session,
        seq: 2,
    };
    let (org, user) = (&d.key.org, &d.key.user);
    knowledge_core::memory::change(&d.store, org, user, |m| {
        m.save("Prefers metric units", SystemClock.now(), from)
            .is_ok()
    })
    .await
    .unwrap();
    d.counter.take();
    let (status, body, made) = d.invoke(functions::MEMORY).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["notes"][0]["text"], "Prefers metric units");
    assert_eq!(body["notes"][0]["sessionId"], SESSION);
    assert_eq!(body["enabled"], true);
    assert_eq!(made, requests(&[("GetItem", 3)]));

    let mut request = d.event(functions::MEMORY);
    *request.method_mut() = axum::http::Method::DELETE;
    *request.uri_mut() = "/api/memory/notes/m1".parse().unwrap();
    request
        .headers_mut()
        .insert("origin", "https://app.example.com".parse().unwrap());
    let response = d
        .router(functions::MEMORY)
        .await
        .oneshot(request)
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    // The membership, the memory read, and its swap from the value read.
    let made = d.take_checked(functions::MEMORY.name);
    assert_eq!(made, requests(&[("GetItem", 2), ("TransactWriteItems", 1)]));
    let kept = d
        .store
        .get_member_data(org, user, MemberDataKind::AgentMemory, MEMORY_ITEM)
        .await
        .unwrap();
    assert!(!kept.unwrap().contains("metric"));
}

#[tokio::test]
async fn finding_sessions_by_title_is_the_membership_and_one_query_of_the_index() {
    let d = Deployment::new().await;
    let mut request = d.event(functions::TITLES);
    *request.method_mut() = axum::http::Method::GET;
    *request.uri_mut() = "/api/managed-agents/find?q=REFUND".parse().unwrap();
    *request.body_mut() = lambda_http::Body::Empty;
    let response = d
        .router(functions::TITLES)
        .await
        .oneshot(request)
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    let body: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(body["sessions"][0]["id"], SESSION);
    assert_eq!(body["complete"], true);
    let made = d.take_checked(functions::TITLES.name);
    assert_eq!(made, requests(&[("GetItem", 1), ("Query", 1)]));
}

#[tokio::test]
async fn cancel_event_on_an_idle_session_changes_nothing() {
    let d = Deployment::new().await;
    let before = d.store.get_session(&d.key).await.unwrap();
    d.counter.take();
    let (status, body, made) = d.invoke(functions::CANCEL).await;
    assert_eq!((status, &body), (200, &json!({ "ok": true })));
    assert_eq!(d.store.get_session(&d.key).await.unwrap(), before);
    // The rate window, written alone: a cancel takes a slot even when nothing runs.
    assert_eq!(made, requests(&[("BatchGetItem", 1), ("PutItem", 1)]));
}

#[tokio::test]
async fn cancel_event_on_a_running_turn_stamps_it_with_its_rate_window_in_one_transaction() {
    let d = Deployment::new().await;
    let (status, body, _) = d.invoke(functions::MESSAGE).await;
    assert_eq!(status, 200, "{body}");
    let running = d.store.get_session(&d.key).await.unwrap().unwrap();
    assert!(running.in_flight() && running.cancelled_at.is_none());
    d.counter.take();
    let (status, body, made) = d.invoke(functions::CANCEL).await;
    assert_eq!((status, &body), (200, &json!({ "ok": true })));
    let stamped = d.store.get_session(&d.key).await.unwrap().unwrap();
    assert!(stamped.cancelled_at.is_some());
    assert_eq!(stamped.version, running.version + 1);
    assert_eq!(
        made,
        requests(&[("BatchGetItem", 1), ("TransactWriteItems", 1)])
    );
}

#[tokio::test]
async fn delete_session_event_removes_the_session_and_its_events() {
    let d = Deployment::new().await;
    let (status, body, made) = d.invoke(functions::DELETE_SESSION).await;
    assert_eq!((status, &body), (200, &json!({ "ok": true })));
    assert_eq!(d.store.rows_for(&d.key).await.unwrap(), (0, 0));
    assert_eq!(
        made,
        // The mark (`deleting`) is the session record alone: a conditional PutItem.
        requests(&[
            ("BatchWriteItem", 1),
            ("DeleteItem", 1),
            ("GetItem", 2),
            ("PutItem", 1),
            ("Query", 1)
        ])
    );
}

#[tokio::test]
async fn switch_org_event_sets_a_cookie_for_the_other_organisation() {
    let d = Deployment::new().await;
    let response = d
        .router(functions::SWITCH_ORG)
        .await
        .oneshot(d.event(functions::SWITCH_ORG))
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let cookie = response.headers()["set-cookie"].to_str().unwrap();
    assert!(cookie.starts_with(&format!("{COOKIE_NAME}=")), "{cookie}");
    assert!(cookie.contains("Secure"), "{cookie}");
    assert_eq!(d.counter.take(), requests(&[("GetItem", 1)]));
}

#[tokio::test]
async fn me_event_lists_both_organisations_of_the_sample_user() {
    let d = Deployment::new().await;
    let (status, body, made) = d.invoke(functions::ME).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["org"]["id"], ORG);
    let orgs: Vec<&str> = body["orgs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["id"].as_str().unwrap())
        .collect();
    assert_eq!(orgs, [ORG, SECOND_ORG]);
    // The guard's membership read; the member and organisation again for the answer; the
    // index of memberships; the other organisation and membership.
    assert_eq!(made, requests(&[("GetItem", 5), ("Query", 1)]));
}

#[tokio::test]
async fn logout_event_signs_the_sample_user_out_of_both_organisations() {
    let d = Deployment::new().await;
    // A request signed in before the sign-out, sent after it.
    let earlier = d.event(functions::LIST_SESSIONS);
    let (status, body, made) = d.invoke(functions::LOGOUT).await;
    assert_eq!((status, &body), (200, &json!({ "ok": true })));
    for org in [ORG, SECOND_ORG] {
        let org = OrgId::parse(org).unwrap();
        let member = d
            .store
            .get_member(&org, &d.key.user)
            .await
            .unwrap()
            .unwrap();
        assert!(member.signed_out_at.is_some(), "{org}");
    }
    // The index of memberships; per organisation, the membership and its stamp with the
    // audit entry.
    assert_eq!(
        made,
        requests(&[("GetItem", 2), ("Query", 1), ("TransactWriteItems", 2)])
    );
    // Its cookie no longer works.
    let router = d.router(functions::LIST_SESSIONS).await;
    let response = router.oneshot(earlier).await.unwrap();
    assert_eq!(response.status().as_u16(), 401);
}

#[tokio::test]
async fn signin_link_event_signs_the_sample_user_in_once() {
    let d = Deployment::new().await;
    let response = d
        .router(functions::SIGNIN_LINK)
        .await
        .oneshot(d.event(functions::SIGNIN_LINK))
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 303);
    let cookie = response.headers()["set-cookie"].to_str().unwrap();
    assert!(cookie.starts_with(&format!("{COOKIE_NAME}=")) && cookie.contains("Secure"));
    // The ticket taken (a DeleteItem returning it), then the membership read.
    assert_eq!(
        d.counter.take(),
        requests(&[("DeleteItem", 1), ("GetItem", 1)])
    );
    let (status, _, _) = d.invoke(functions::SIGNIN_LINK).await;
    assert_eq!(status, 401);
}

#[tokio::test]
async fn sso_events_reach_their_functions_which_read_no_more_than_they_need() {
    let d = Deployment::new().await;
    // The sample's e-mail domain leads to no organisation: one GetItem, the common answer.
    let (status, body, reads) = d.invoke(functions::SSO_LOGIN).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (404, Some("sso_unavailable"))
    );
    assert_eq!(reads, requests(&[("GetItem", 1)]));
    // A callback without this browser's sign-in in progress reads nothing and clears it.
    let response = (d.router(functions::SSO_CALLBACK).await)
        .oneshot(d.event(functions::SSO_CALLBACK))
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 400);
    let cleared = response.headers()["set-cookie"].to_str().unwrap();
    assert!(cleared.starts_with("__Host-ks_login=;") && cleared.contains("Max-Age=0"));
    assert!(d.counter.take().is_empty());
}

#[tokio::test]
async fn integrations_event_lists_the_organisations_oauth_integrations_in_two_queries() {
    let d = Deployment::new().await;
    let (status, body, made) = d.invoke(functions::INTEGRATIONS).await;
    assert_eq!((status, &body), (200, &json!({ "connections": [] })));
    // The guard's membership read; the integrations and the member's data, one Query each.
    assert_eq!(made, requests(&[("GetItem", 1), ("Query", 2)]));
}

#[tokio::test]
async fn oauth_callback_event_without_its_connect_in_progress_connects_nothing() {
    let d = Deployment::new().await;
    let response = (d.router(functions::OAUTH_CALLBACK).await)
        .oneshot(d.event(functions::OAUTH_CALLBACK))
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 400);
    let cleared = response.headers()["set-cookie"].to_str().unwrap();
    assert!(cleared.starts_with("__Host-ks_connect=;") && cleared.contains("Max-Age=0"));
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    let body: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(body["error"]["code"], "connect_failed", "{body}");
    // Only the take of the state's ticket, which finds none.
    assert_eq!(
        d.take_checked("oauth-callback"),
        requests(&[("DeleteItem", 1)])
    );
}

#[tokio::test]
async fn web_event_gets_the_apps_page_under_its_policy_without_reading_anything() {
    let d = Deployment::new().await;
    // As the function's main serves it: the built-in files, without a cold start.
    let files = Parts::of(functions::WEB).files.unwrap();
    let response = files().oneshot(d.event(functions::WEB)).await.unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let csp = response.headers()["content-security-policy"]
        .to_str()
        .unwrap();
    assert!(csp.contains("script-src 'self'"), "{csp}");
    assert_eq!(response.headers()["cache-control"], "no-cache");
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    assert!(String::from_utf8_lossy(&bytes).contains(r#"<div id="app">"#));
    assert!(d.counter.take().is_empty());
}

#[tokio::test]
async fn web_function_sends_the_script_in_brotli_or_gzip_as_the_browser_accepts() {
    let d = Deployment::new().await;
    let files = Parts::of(functions::WEB).files.unwrap();
    let script = knowledge_web::embedded_assets()
        .find(|name| name.ends_with(".js"))
        .unwrap();
    let fetch = |accept: &'static str| {
        let mut request = d.event(functions::WEB);
        *request.uri_mut() = format!("/assets/{script}").parse().unwrap();
        request
            .headers_mut()
            .insert("accept-encoding", accept.parse().unwrap());
        files().oneshot(request)
    };
    let plain = fetch("identity").await.unwrap();
    assert!(plain.headers().get("content-encoding").is_none());
    let raw = axum::body::to_bytes(plain.into_body(), 1 << 22)
        .await
        .unwrap();
    for (accept, coding) in [("gzip, deflate, br, zstd", "br"), ("gzip", "gzip")] {
        let response = fetch(accept).await.unwrap();
        assert_eq!(response.headers()["content-encoding"], coding, "{accept}");
        assert_eq!(response.headers()["vary"], "accept-encoding");
        let sent = axum::body::to_bytes(response.into_body(), 1 << 22)
            .await
            .unwrap();
        assert!(
            sent.len() * 2 < raw.len(),
            "{coding}: {} of {}",
            sent.len(),
            raw.len()
        );
    }
}

#[tokio::test]
async fn a_function_answers_another_endpoints_request_as_an_unknown_route() {
    let d = Deployment::new().await;
    let response = d
        .router(functions::TRANSCRIPT)
        .await
        .oneshot(d.event(functions::CREATE_SESSION))
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 404);
    let response = d
        .router(functions::TRANSCRIPT)
        .await
        .oneshot(d.event(functions::SWITCH_ORG))
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 404);
    assert!(d.executions().await.is_empty());
}

#[tokio::test]
async fn scim_event_provisions_the_entra_user_with_one_read_and_one_transaction() {
    let d = Deployment::new().await;
    let (status, body, made) = d.invoke(functions::SCIM).await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(
        body["userName"],
        "Test_User_ab6490ee-1e48-479e-a20b-2d77186b5dd1"
    );
    assert_eq!(made, requests(&[("GetItem", 1), ("TransactWriteItems", 1)]));
    let org = OrgId::parse(ORG).unwrap();
    let user = UserId::parse(body["id"].as_str().unwrap()).unwrap();
    let member = d.store.get_member(&org, &user).await.unwrap().unwrap();
    assert_eq!(member.role, Role::Viewer);
    let profile = member.profile.unwrap();
    assert_eq!(
        profile.external_id.as_deref(),
        Some("0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef")
    );
    let audit = d.store.list_audit(&org, None, 1).await.unwrap();
    assert_eq!(
        (audit[0].action, audit[0].target.as_str()),
        (AuditAction::UserProvisioned, user.as_str())
    );
    // The same token on the function of another endpoint is an unknown route there.
    let response = d
        .router(functions::TRANSCRIPT)
        .await
        .oneshot(d.event(functions::SCIM))
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 404);
}

#[tokio::test]
async fn admin_event_promotes_the_member_with_its_audit_entry_naming_the_admin() {
    let d = Deployment::new().await;
    let org = OrgId::parse(ORG).unwrap();
    let now = SystemClock.now();
    // The sample user administers the organisation; the event promotes another member.
    let admin = d
        .store
        .get_member(&org, &d.key.user)
        .await
        .unwrap()
        .unwrap();
    let mut promoted = admin.clone();
    promoted.role = Role::Admin;
    promoted.version += 1;
    let audit = AuditEntry::new(
        &org,
        now,
        Actor::Admin,
        AuditAction::MemberRoleChanged,
        USER,
    );
    d.store
        .update_member(&admin, &promoted, &audit)
        .await
        .unwrap();
    let target = UserId::parse("usr_0123456789abcdef0123456789abcdef").unwrap();
    let added = AuditEntry::new(&org, now, Actor::Admin, AuditAction::MemberAdded, USER);
    let viewer = Member::new(org.clone(), target.clone(), Role::Viewer, now);
    d.store.create_member(&viewer, &added).await.unwrap();
    d.counter.take();

    let (status, body, _) = d.invoke(functions::ADMIN).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["role"], "admin");
    let stored = d.store.get_member(&org, &target).await.unwrap().unwrap();
    assert_eq!(stored.role, Role::Admin);
    let log = d.store.list_audit(&org, None, 1).await.unwrap();
    assert_eq!(log[0].action, AuditAction::MemberRoleChanged);
    assert_eq!(log[0].by.as_ref(), Some(&d.key.user));
}

#[tokio::test]
async fn only_the_functions_that_use_a_key_read_its_secret() {
    let d = Deployment::new().await;
    let without_keys = Env {
        signing_key_secret: None,
        sealing_key_secret: None,
        ..d.env.clone()
    };
    let load = |function| {
        ColdStart::load(
            Parts::of(function),
            &d.shared,
            &without_keys,
            d.counter.clone(),
        )
    };
    // LoadTurn asks no agent and reaches no integration: it needs no key.
    assert!(load(functions::LOAD_TURN).await.is_ok());
    let missing = |r: Result<ColdStart, ConfigError>| match r {
        Err(ConfigError::Missing(var)) => var,
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("started without its key"),
    };
    let message = load(functions::MESSAGE).await;
    assert_eq!(missing(message), "SIGNING_KEY_SECRET_ARN");
    let tool = load(functions::RUN_TOOL).await;
    assert_eq!(missing(tool), "SEALING_KEY_SECRET_ARN");
    // SCIM authenticates by bearer token, never a cookie, but opens a removed member's OAuth
    // grants to revoke them.
    assert_eq!(
        missing(load(functions::SCIM).await),
        "SEALING_KEY_SECRET_ARN"
    );
    let scim_keys = Env {
        sealing_key_secret: d.env.sealing_key_secret.clone(),
        ..without_keys.clone()
    };
    let scim = ColdStart::load(
        Parts::of(functions::SCIM),
        &d.shared,
        &scim_keys,
        d.counter.clone(),
    );
    let response = (scim.await.unwrap().router().unwrap())
        .oneshot(d.event(functions::SCIM))
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 201);
}

#[tokio::test]
async fn a_retried_start_succeeds_where_the_machine_keeps_execution_names_unique() {
    let d = Deployment::new().await;
    let workflow = SfnWorkflow::new(d.sfn.clone(), Some(d.state_machine_arn.clone()));
    let run = RunId::generate();
    for _ in 0..3 {
        workflow.start(&d.key, &run, run.as_str()).await.unwrap();
    }
    assert_eq!(d.executions().await, [run.to_string()]);
}

/// The sample Step Functions input of `handler`'s function.
fn sample_input(handler: Handler) -> Value {
    serde_json::from_str(&repo_file(&format!("events/{}.json", row(handler).name))).unwrap()
}

/// Feeds `payload` to `handler`'s task function.
async fn task(
    d: &Deployment, handler: Handler, payload: Value,
) -> Result<Value, lambda_runtime::Diagnostic> {
    d.cold_start(row(handler))
        .await
        .task()
        .unwrap()
        .handle(LambdaEvent::new(payload, Context::default()))
        .await
}

/// Commits a follow-up whose run `RUN` owns the sample session, with the claim naming its
/// first execution, as the message endpoint leaves it; returns the message's `seq` and when
/// the execution the sample events name started.
async fn follow_up(d: &Deployment) -> (u64, String) {
    let mut s = d.store.get_session(&d.key).await.unwrap().unwrap();
    let expected = s.version;
    s.version += 1;
    s.start_run(RunId::parse(RUN).unwrap(), SystemClock.now());
    let placed = s.place(
        SystemClock.now(),
        vec![NewEvent::user_message("And for annual plans?")],
    );
    s.pending = vec![placed[0].seq];
    d.store
        .commit_session(&s, expected, &placed, None, None)
        .await
        .unwrap();
    (placed[0].seq, SystemClock.now().to_iso8601())
}

/// Feeds `h`'s sample event, aimed at the follow-up `user_seq` of the execution started at
/// `started_at`, to its task function; its output and DynamoDB requests.
async fn step(
    d: &Deployment, h: Handler, (user_seq, started_at): &(u64, String),
) -> (Value, BTreeMap<String, u64>) {
    let mut payload = sample_input(h);
    if payload.get("turn").is_some() {
        payload["turn"]["userSeq"] = json!(user_seq);
    }
    payload["execution"]["startedAt"] = json!(started_at);
    d.counter.take();
    let output = task(d, h, payload).await.unwrap();
    (output, d.take_checked(row(h).name))
}

#[tokio::test]
async fn task_events_drive_a_turn_through_the_task_functions() {
    let d = Deployment::new().await;
    let follow_up = follow_up(&d).await;
    let (user_seq, started_at) = follow_up.clone();
    let run = |h: Handler| step(&d, h, &follow_up);
    // Each step's DynamoDB requests: the cost model in docs/deploy.md adds these up.
    // The first LoadTurn binds the run's claim to its execution: the session record alone.
    let (loaded, made) = run(Handler::LoadTurn).await;
    assert_eq!(loaded["next"], "agent", "{loaded}");
    assert_eq!(loaded["turn"], json!({ "userSeq": user_seq, "step": 0 }));
    assert_eq!(made, requests(&[("GetItem", 1), ("PutItem", 1)]));
    // A second execution started under the same name (Express starts at least once) reads
    // the claim bound to the first and ends, writing nothing.
    let mut duplicate = sample_input(Handler::LoadTurn);
    let other = format!("{}-2", duplicate["execution"]["id"].as_str().unwrap());
    duplicate["execution"]["id"] = json!(other);
    duplicate["execution"]["startedAt"] = json!(started_at);
    d.counter.take();
    let exited = task(&d, Handler::LoadTurn, duplicate).await.unwrap();
    assert_eq!(exited["next"], "done", "{exited}");
    let made = d.take_checked(functions::LOAD_TURN.name);
    assert_eq!(made, requests(&[("GetItem", 1)]));
    let (answered, made) = run(Handler::CallAgent).await;
    assert_eq!(answered["next"], "finish", "{answered}");
    // The session; the membership, the organisation (its cost cap and memory switch), its
    // month's usage and the member's memory in one batch; the connected integrations, the
    // history, then the answer with the session.
    let step = requests(&[
        ("GetItem", 1),
        ("BatchGetItem", 1),
        ("Query", 2),
        ("TransactWriteItems", 1),
    ]);
    assert_eq!(made, step);
    // RunTool delivered late, after the agent answered without tools: it commits nothing.
    let (late, made) = run(Handler::RunTool).await;
    assert_eq!(late["next"], "finish", "{late}");
    assert_eq!(made, requests(&[("GetItem", 1)]));
    let (finished, made) = run(Handler::FinishTurn).await;
    assert_eq!(finished["next"], "load", "{finished}");
    assert_eq!(made, requests(&[("GetItem", 1), ("TransactWriteItems", 1)]));
    // Nothing else is pending: the run ends there, with the session record alone (1 WRU).
    let (ended, made) = run(Handler::LoadTurn).await;
    assert_eq!(ended["next"], "done", "{ended}");
    assert_eq!(made, requests(&[("GetItem", 1), ("PutItem", 1)]));
    let (terminated, _) = run(Handler::Terminate).await;
    assert!(terminated.get("next").is_some(), "{terminated}");

    let kinds: Vec<&str> = d
        .store
        .list_events(&d.key, 6, 100)
        .await
        .unwrap()
        .iter()
        .map(|e| e.kind().as_str())
        .collect();
    assert_eq!(kinds, ["user_message", "agent_message", "status_idle"]);
    let s = d.store.get_session(&d.key).await.unwrap().unwrap();
    assert_eq!(s.run_id, None);
}

/// Connects the sample user's own account to `wiki`, an `oauth_member` integration of the
/// sample organisation on `server`, as the connect routes do: discovery, one registration,
/// the authorization (approved at once) and the code exchange, the grant stored by a vault.
async fn connect_oauth(d: &Deployment, server: &RotatingServer) {
    let servers = Arc::new(HttpAuthorizationServers::new(
        BoundedHttp::new(Egress::ANYWHERE).unwrap(),
    ));
    let redirect = format!("{ORIGIN}/api/oauth/callback/{ORG}/wiki");
    let found = servers.discover(&server.mcp_url()).await.unwrap();
    let (client_id, secret) = servers.register(&found, &redirect, "test").await.unwrap();
    let sealer = Arc::new(Sealer::from_hex(KEY_HEX).unwrap());
    let context = oauth_client_context(ORG, "wiki", &client_id);
    let oauth = found.with_client(OAuthClient {
        client_id,
        secret_sealed: secret.as_deref().map(|s| sealer.seal(&context, s)),
        registration: ClientRegistration::Dynamic,
    });
    let now = SystemClock.now();
    let integration = IntegrationConfig {
        name: "wiki".into(),
        url: server.mcp_url(),
        auth: IntegrationAuth::OauthMember,
        created_at: now,
        oauth: Some(oauth.clone()),
        org_grant_sealed: None,
    };
    let org = OrgId::parse(ORG).unwrap();
    let added = AuditEntry::new(
        &org,
        now,
        Actor::Admin,
        AuditAction::IntegrationConnected,
        "wiki",
    );
    d.store
        .put_integration(&org, &integration, &added)
        .await
        .unwrap();
    let asked = servers.authorization(&oauth, &redirect).unwrap();
    let back = reqwest::Url::parse(&authorize(&asked.url).await).unwrap();
    let code = back
        .query_pairs()
        .find(|(k, _)| k == "code")
        .unwrap()
        .1
        .into_owned();
    let tokens = servers
        .exchange_code(
            &oauth,
            secret.as_deref(),
            &redirect,
            &code,
            &asked.pkce_verifier,
        )
        .await
        .unwrap();
    let client = knowledge_dynamo::connect(Some(&endpoint()), RequestCounter::default()).await;
    let store = Arc::new(DynamoStore::new(client, &d.env.table));
    let vault = Vault::new(
        store,
        servers,
        sealer,
        Arc::new(SystemClock),
        VaultTiming::default(),
    );
    let user = UserId::parse(USER).unwrap();
    let at = GrantAt::new(&org, GrantOwner::Member(user.clone()), &integration);
    let connected = AuditEntry::new(
        &org,
        now,
        Actor::Member,
        AuditAction::AccountConnected,
        "wiki",
    );
    vault.connect(&at, tokens, &user, &connected).await.unwrap();
}

/// The sample deployment, reaching loopback (the MCP and authorization servers of the test).
async fn on_loopback() -> Deployment {
    let mut d = Deployment::new().await;
    d.env.egress = Egress::ANYWHERE;
    d
}

/// A fresh deployment on loopback with the sample user's grant on `server`, and a follow-up
/// whose run is bound to its execution (LoadTurn done): CallAgent's output and requests.
async fn call_agent_with_grant(server: &RotatingServer) -> (Value, BTreeMap<String, u64>) {
    let d = on_loopback().await;
    connect_oauth(&d, server).await;
    let turn = follow_up(&d).await;
    step(&d, Handler::LoadTurn, &turn).await;
    step(&d, Handler::CallAgent, &turn).await
}

#[tokio::test]
async fn call_agent_reads_an_oauth_grant_with_the_members_data_and_a_refresh_costs_three_requests()
{
    // Tokens that last an hour: no refresh is due.
    let server = RotatingServer::with_mcp(3600).await;
    let (answered, made) = call_agent_with_grant(&server).await;
    assert_eq!(answered["next"], "finish", "{answered}");
    // As with no integration (see the task test), and one Query more for the member's data,
    // which a per-user credential costs as well: the grant comes in it.
    let step_cost = requests(&[
        ("GetItem", 1),
        ("BatchGetItem", 1),
        ("Query", 3),
        ("TransactWriteItems", 1),
    ]);
    assert_eq!(made, step_cost);
    assert_eq!(server.stats().await["refreshes"], 0);

    // Tokens that last 30 s, under the 60 s margin: a refresh is due at once. It costs the
    // grant read again under the flight lock, the lease claimed, and the new tokens stored.
    let server = RotatingServer::with_mcp(30).await;
    let (answered, made) = call_agent_with_grant(&server).await;
    assert_eq!(answered["next"], "finish", "{answered}");
    let refreshed = requests(&[
        ("GetItem", 2),
        ("BatchGetItem", 1),
        ("Query", 3),
        ("TransactWriteItems", 3),
    ]);
    assert_eq!(made, refreshed);
    assert_eq!(server.stats().await["refreshes"], 1);
}

#[tokio::test]
async fn two_call_agent_functions_needing_one_expired_grant_at_once_refresh_it_once() {
    // The first token lasts 30 s, under the 60 s margin: due at once; the refreshed one an
    // hour; each refresh takes a second, so the other invocations meet it in flight.
    let server = RotatingServer::expiring(30).await;
    let d = on_loopback().await;
    connect_oauth(&d, &server).await;
    let turn = follow_up(&d).await;
    step(&d, Handler::LoadTurn, &turn).await;
    // Two function instances (two cold starts, two vaults), as two Lambda invocations of a
    // step delivered twice are, each given the step's input four times at once.
    let instances = [
        d.cold_start(row(Handler::CallAgent)).await,
        d.cold_start(row(Handler::CallAgent)).await,
    ];
    let mut payload = sample_input(Handler::CallAgent);
    payload["turn"]["userSeq"] = json!(turn.0);
    payload["execution"]["startedAt"] = json!(turn.1);
    let calls = (0..8).map(|i| {
        let handler = instances[i % 2].task().unwrap();
        let payload = payload.clone();
        async move {
            handler
                .handle(LambdaEvent::new(payload, Context::default()))
                .await
        }
    });
    for output in futures_util::future::join_all(calls).await {
        let output = output.unwrap();
        assert!(output.get("next").is_some(), "{output}");
    }
    let stats = server.stats().await;
    assert_eq!(
        (stats["refreshes"].as_u64(), stats["reuses"].as_u64()),
        (Some(1), Some(0)),
        "{stats}"
    );
}

#[tokio::test]
async fn a_task_given_malformed_input_fails_with_the_error_name_the_state_machine_matches() {
    let d = Deployment::new().await;
    let error = task(&d, Handler::LoadTurn, json!({ "session": 7 }))
        .await
        .unwrap_err();
    assert_eq!(error.error_type, "InvalidStepInput");
    let ok = task(&d, Handler::LoadTurn, sample_input(Handler::LoadTurn)).await;
    assert!(ok.is_ok(), "{ok:?}");
}

fn pascal(name: &str) -> String {
    name.split('-')
        .map(|w| w[..1].to_uppercase() + &w[1..])
        .collect()
}

/// The row of `handler`'s function.
fn row(handler: Handler) -> Function {
    let row = functions::ALL
        .into_iter()
        .find(|f| matches!(f.serves, Serves::Task(h) if h == handler));
    row.expect("every handler has its function")
}

#[test]
fn every_function_has_its_binary_event_and_template_resource_under_one_name() {
    let template = repo_file("template.yaml");
    let mut names = BTreeSet::new();
    for function in functions::ALL {
        let name = function.name;
        assert!(names.insert(name), "{name} has two rows");
        let row = name.to_uppercase().replace('-', "_");
        let binary = repo_file(&format!("functions/src/bin/{name}.rs"));
        assert!(
            binary.contains(&format!("knowledge_aws::main!({row});")),
            "{name}"
        );
        repo_file(&format!("events/{name}.json"));
        let resource = format!("  {}Function:\n", pascal(name));
        assert!(
            template.contains(&resource),
            "template.yaml lacks {resource}"
        );
        assert!(template.contains(&format!("Binary: {name}\n")), "{name}");
    }
    // And nothing is declared that has no row.
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    for entry in std::fs::read_dir(root.join("functions/src/bin")).unwrap() {
        let file = entry.unwrap().file_name().into_string().unwrap();
        let name = file.strip_suffix(".rs").unwrap();
        assert!(names.contains(name), "functions/src/bin/{file} has no row");
    }
    for line in template
        .lines()
        .filter(|l| l.trim_start().starts_with("Binary: "))
    {
        let name = line.trim_start().trim_start_matches("Binary: ");
        assert!(
            names.contains(name),
            "template.yaml builds {name}, which has no row"
        );
    }
    // Every Task of the state machine gets its function's ARN.
    for h in Handler::ALL {
        assert!(repo_file("infra/statemachine/agent.asl.json").contains(&h.resource()));
        let substitution = format!("{0}FunctionArn: !GetAtt {0}Function.Arn", h.name());
        assert!(template.contains(&substitution), "{substitution}");
    }
}

#[test]
fn every_function_refuses_private_destinations_unless_the_deployment_says_otherwise() {
    let template = repo_file("template.yaml");
    let globals =
        &template[template.find("\nGlobals:").unwrap()..template.find("\nResources:").unwrap()];
    assert!(
        globals.contains("KNOWLEDGE_ALLOW_PRIVATE_DESTINATIONS: !Ref AllowPrivateDestinations"),
        "{globals}"
    );
    let parameter = &template[template.find("  AllowPrivateDestinations:").unwrap()..];
    let parameter = &parameter[..parameter.find("\n  AppOrigin:").unwrap()];
    assert!(parameter.contains("Default: \"false\""), "{parameter}");
    // Unset, a function's environment refuses them too.
    assert_eq!(
        knowledge_aws::config::Env::default().egress,
        knowledge_egress::Egress::PUBLIC_ONLY
    );
}

impl Deployment {
    /// A session of the sample user whose turn's execution died: its claim's lease ran out a
    /// minute ago, with `revivals` revivals behind it. Returns its key and run.
    async fn dead_run(&self, revivals: u32) -> (SessionKey, RunId) {
        let key = SessionKey {
            session: SessionId::generate(),
            ..self.key.clone()
        };
        let ago = SystemClock.now().plus_millis(-(LEASE_MS + 60_000));
        let mut s = Session::new(key.clone(), "stuck".into(), ago);
        let run = RunId::generate();
        s.start_run(run.clone(), ago);
        s.exec.as_mut().unwrap().revivals = revivals;
        let placed = s.place(ago, vec![NewEvent::user_message("Still there?")]);
        s.pending = vec![placed[0].seq];
        self.store.create_session(&s, &placed, None).await.unwrap();
        self.counter.take();
        (key, run)
    }

    /// The sweep function fed its sample event; returns its answer and the DynamoDB requests
    /// it made, checked against its policies.
    async fn sweep(&self) -> (Value, BTreeMap<String, u64>) {
        let sweep = self.cold_start(functions::SWEEP).await.sweep();
        let payload = serde_json::from_str(&repo_file("events/sweep.json")).unwrap();
        self.counter.take();
        let answer = sweep
            .handle(LambdaEvent::new(payload, Context::default()))
            .await;
        (answer.unwrap(), self.take_checked("sweep"))
    }

    /// Runs the turn of `key`'s run in the execution `name`, Task by Task; returns the event
    /// types of its log.
    async fn answered_in(&self, key: &SessionKey, run: &RunId, name: &str) -> Vec<EventKind> {
        let started_at = SystemClock.now().to_iso8601();
        let mut turn = Value::Null;
        for h in [
            Handler::LoadTurn,
            Handler::CallAgent,
            Handler::FinishTurn,
            Handler::LoadTurn,
        ] {
            let mut payload = sample_input(h);
            payload["session"]["session"] = json!(key.session.as_str());
            payload["runId"] = json!(run.as_str());
            payload["execution"] =
                json!({ "id": format!("{name}:exec"), "name": name, "startedAt": started_at });
            if payload.get("turn").is_some() {
                payload["turn"] = turn.clone();
            }
            let out = task(self, h, payload).await.unwrap();
            turn = out["turn"].clone();
        }
        let events = self.store.list_events(key, 0, 100).await.unwrap();
        events.iter().map(|e| e.kind()).collect()
    }
}

#[tokio::test]
async fn sweep_event_revives_a_run_whose_execution_was_stopped_and_its_turn_is_answered() {
    let d = Deployment::new().await;
    let (key, run) = d.dead_run(0).await;
    // Its execution ran on Step Functions and was stopped there, never to come back.
    let started = d
        .sfn
        .start_execution()
        .state_machine_arn(&d.state_machine_arn)
        .name(run.as_str())
        .input("{}")
        .send()
        .await
        .unwrap();
    let arn = started.execution_arn().to_owned();
    d.sfn
        .stop_execution()
        .execution_arn(arn)
        .send()
        .await
        .unwrap();

    let (answer, made) = d.sweep().await;
    assert_eq!(answer, json!({ "revived": 1, "failed": 0 }));
    // The index, one query per shard; the session read again and committed alone.
    let shards = u64::from(knowledge_dynamo::keys::STALE_SHARDS);
    assert_eq!(
        made,
        requests(&[("Query", shards), ("GetItem", 1), ("PutItem", 1)])
    );
    let successor = format!("{run}-1");
    assert!(
        d.executions().await.contains(&successor),
        "{:?}",
        d.executions().await
    );
    // A sweep a moment later finds nothing: the new execution's lease runs.
    assert_eq!(d.sweep().await.0, json!({ "revived": 0, "failed": 0 }));

    let kinds = d.answered_in(&key, &run, &successor).await;
    assert_eq!(
        kinds,
        [
            EventKind::UserMessage,
            EventKind::AgentMessage,
            EventKind::StatusIdle
        ]
    );
    assert_eq!(
        d.store.get_session(&key).await.unwrap().unwrap().run_id,
        None
    );
}

#[tokio::test]
async fn sweep_event_ends_a_turn_that_keeps_killing_its_executions_as_failed() {
    let d = Deployment::new().await;
    let (key, run) = d.dead_run(MAX_REVIVALS).await;
    let (answer, made) = d.sweep().await;
    assert_eq!(answer, json!({ "revived": 0, "failed": 1 }));
    // The error and the turn's end with the session, in one transaction.
    let shards = u64::from(knowledge_dynamo::keys::STALE_SHARDS);
    let expected = requests(&[("Query", shards), ("GetItem", 1), ("TransactWriteItems", 1)]);
    assert_eq!(made, expected);
    let events = d.store.list_events(&key, 0, 100).await.unwrap();
    let kinds: Vec<EventKind> = events.iter().map(|e| e.kind()).collect();
    assert_eq!(
        kinds,
        [
            EventKind::UserMessage,
            EventKind::Error,
            EventKind::StatusIdle
        ]
    );
    assert_eq!(events[1].body.payload()["code"], "run_died");
    assert_eq!(
        d.store.get_session(&key).await.unwrap().unwrap().run_id,
        None
    );
    assert!(
        !d.executions()
            .await
            .iter()
            .any(|e| e.starts_with(run.as_str()))
    );
}

#[tokio::test]
async fn a_sweep_racing_a_message_to_the_dead_run_starts_exactly_one_execution() {
    let d = Deployment::new().await;
    let (key, run) = d.dead_run(0).await;
    let mut event = d.event(functions::MESSAGE);
    let body = json!({ "sessionId": key.session.as_str(), "text": "Hello?" }).to_string();
    *event.body_mut() = lambda_http::Body::Text(body);
    let message = d.router(functions::MESSAGE).await;
    // Both count their requests in one counter here: the sweep's are checked alone above.
    let sweep = d.cold_start(functions::SWEEP).await.sweep();
    let payload = serde_json::from_str(&repo_file("events/sweep.json")).unwrap();
    let swept = sweep.handle(LambdaEvent::new(payload, Context::default()));
    let (answered, swept) = tokio::join!(message.oneshot(event), swept);
    assert_eq!(answered.unwrap().status().as_u16(), 200);
    let swept = swept.unwrap();
    assert!(swept["revived"].as_u64().unwrap() <= 1, "{swept}");
    let revived: Vec<String> = (d.executions().await.into_iter())
        .filter(|e| e.starts_with(run.as_str()))
        .collect();
    assert_eq!(revived, [format!("{run}-1")], "one execution, whoever won");
    let claim = d
        .store
        .get_session(&key)
        .await
        .unwrap()
        .unwrap()
        .exec
        .unwrap();
    assert_eq!(claim.name, format!("{run}-1"));
}

/// CallAgent on a provider streaming its answer over about three seconds, while the
/// transcript function is polled: the answer's draft is written beside the session at most
/// once a second (one UpdateItem each, on top of the step's own requests), every poll reads
/// what a poll reads without a draft, and the draft is gone with the answer's commit.
#[tokio::test]
async fn call_agent_writes_a_streamed_answers_draft_at_most_once_a_second_and_a_poll_reads_no_more()
{
    use knowledge_providers::fake::{AgentSetup, Fake, OpenAi, Reply, Wire};
    use std::time::{Duration, Instant};

    let d = Deployment::new().await;
    let fake = Fake::start().await;
    fake.pace(Duration::from_millis(150));
    let words: Vec<String> = (1..=20).map(|n| format!("word{n}")).collect();
    fake.script(Reply::json(200, OpenAi::answer(&words.join(" "))));
    let turn = follow_up(&d).await;
    step(&d, Handler::LoadTurn, &turn).await;

    let parts = Parts::of(row(Handler::CallAgent));
    let mut settings = knowledge_aws::settings(parts, &d.shared, &d.env)
        .await
        .unwrap();
    settings.agent = Some(OpenAi::agent(&fake.base(), AgentSetup::default()));
    let cold = ColdStart::new(&d.shared, &d.env, settings, parts, d.counter.clone());
    let mut payload = sample_input(Handler::CallAgent);
    payload["turn"]["userSeq"] = json!(turn.0);
    payload["execution"]["startedAt"] = json!(turn.1);
    let polls = RequestCounter::default();
    let transcript = ColdStart::load(
        Parts::of(functions::TRANSCRIPT),
        &d.shared,
        &d.env,
        polls.clone(),
    )
    .await
    .unwrap()
    .router()
    .unwrap();
    d.counter.take();

    let started = Instant::now();
    let task = cold.task().unwrap();
    let answering = task.handle(LambdaEvent::new(payload, Context::default()));
    tokio::pin!(answering);
    // Poll until a draft shows (bounded), then once more while it grows.
    let mut drafts: Vec<String> = vec![];
    let answered = loop {
        tokio::select! {
            answered = &mut answering => break answered.unwrap(),
            () = tokio::time::sleep(Duration::from_millis(300)) => {
                let response = transcript.clone().oneshot(d.event(functions::TRANSCRIPT)).await.unwrap();
                let body: Value = serde_json::from_slice(
                    &axum::body::to_bytes(response.into_body(), 1 << 20).await.unwrap(),
                )
                .unwrap();
                if let Some(text) = body["draft"]["text"].as_str() {
                    drafts.push(text.to_owned());
                }
                // The draft is never beside its own answer: after the question, no answer yet.
                let answers_after = body["events"].as_array().unwrap().iter().filter(|e| {
                    e["type"] == "agent_message"
                        && e["id"].as_str().unwrap()[4..].parse::<u64>().unwrap() > turn.0
                });
                assert!(answers_after.count() == 0 || body.get("draft").is_none(), "{body}");
                // A poll costs what it costs without a draft.
                assert_eq!(polls.take(), requests(&[("BatchGetItem", 1), ("Query", 1)]));
                assert!(started.elapsed() < Duration::from_secs(20), "the answer took too long");
            }
        }
    };
    let took = started.elapsed();
    assert_eq!(answered["next"], "finish", "{answered}");
    // Seen growing, word by word, never past the answer.
    assert!(drafts.len() >= 3, "{drafts:?}");
    assert!(
        drafts.windows(2).all(|w| w[1].starts_with(&w[0])),
        "{drafts:?}"
    );
    assert!(
        drafts
            .iter()
            .all(|t| words.join(" ").starts_with(t.as_str()))
    );
    // The step's own requests, and one UpdateItem per draft: the first at once, then one a
    // second at most.
    let made = d.take_checked(functions::CALL_AGENT.name);
    let writes = made.get("UpdateItem").copied().unwrap_or(0);
    let most = took.as_secs() + 1;
    assert!(
        (2..=most).contains(&writes),
        "{writes} draft writes in {took:?}"
    );
    // Beside them, the step's own: as for an answer at once, plus the cancel watch's read of
    // the session each WATCH_INTERVAL (1 s) while the call is in flight.
    let mut step = made.clone();
    step.remove("UpdateItem");
    let watched = step.remove("GetItem").unwrap_or(0) - 1;
    assert!(
        watched <= took.as_secs(),
        "{watched} watch reads in {took:?}"
    );
    assert_eq!(
        step,
        requests(&[("BatchGetItem", 1), ("Query", 2), ("TransactWriteItems", 1)])
    );
    // The answer's commit took the draft with it.
    let response = transcript
        .oneshot(d.event(functions::TRANSCRIPT))
        .await
        .unwrap();
    let body: Value = serde_json::from_slice(
        &axum::body::to_bytes(response.into_body(), 1 << 20)
            .await
            .unwrap(),
    )
    .unwrap();
    assert!(body.get("draft").is_none(), "{body}");
}
