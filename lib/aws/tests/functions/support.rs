//! What the tests share: a [`Deployment`] on moto with the sample data, the sample events and
//! Step Functions inputs fed to the functions, and the check of each request against the
//! function's policies in template.yaml.

use std::collections::{BTreeMap, BTreeSet};

use aws_sdk_sfn::config::Credentials;
use knowledge_aws::{ColdStart, Env, Function, Handler, Parts, Serves, functions};
use knowledge_core::clock::{Clock, SystemClock};
use knowledge_core::domain::{
    Actor, AuditAction, AuditEntry, Member, NewEvent, Org, Plan, Role, Session,
};
use knowledge_core::ids::{OrgId, RunId, SessionId, SessionKey, UserId};
use knowledge_core::ports::{DirectoryStore, OrgStore, SessionStore};
use knowledge_core::seal::Sealer;
use knowledge_core::signin;
use knowledge_core::sso::{self, SsoChange, SsoSettings};
use knowledge_dynamo::{DynamoStore, RequestCounter};
use knowledge_http::cookie::{CookieSigner, SECURE_COOKIE_NAME as COOKIE_NAME};
use lambda_runtime::{Context, LambdaEvent};
use serde_json::{Value, json};
use tower::ServiceExt;

pub(crate) const KEY_HEX: &str = "2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a";
pub(crate) const USER: &str = "usr_sample";
pub(crate) const ORG: &str = "org_sample";
pub(crate) const SECOND_ORG: &str = "org_second";
pub(crate) const SESSION: &str = "ses_0123456789abcdef0123456789abcdef";
pub(crate) const RUN: &str = "run_0123456789abcdef0123456789abcdef";
pub(crate) const ORIGIN: &str = "https://app.example.com";

/// moto's endpoint; a test that reaches it begins with `skip_without_dynamodb!()`, so that a
/// plain `cargo test` skips it (`knowledge_test_support::stores`).
pub(crate) fn endpoint() -> String {
    knowledge_test_support::stores::dynamodb_endpoint()
}

pub(crate) fn repo_file(path: &str) -> String {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    std::fs::read_to_string(root.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A deployment on moto: its own table, secrets and state machine; each function is built from
/// them as its cold start builds it.
pub(crate) struct Deployment {
    pub(crate) shared: aws_config::SdkConfig,
    /// The documents' bucket and the indexer's queue (with its dead-letter queue), and where
    /// this deployment's functions keep their index copies.
    pub(crate) s3: aws_sdk_s3::Client,
    pub(crate) sqs: aws_sdk_sqs::Client,
    pub(crate) dead_letters: String,
    _index_root: tempfile::TempDir,
    pub(crate) env: Env,
    /// The table, counting requests in `counter` as the functions do.
    pub(crate) store: DynamoStore,
    /// The sample organisation's SCIM token.
    scim_token: String,
    /// A single-use sign-in link's secret for the sample user.
    link_secret: String,
    pub(crate) counter: RequestCounter,
    pub(crate) sfn: aws_sdk_sfn::Client,
    pub(crate) state_machine_arn: String,
    pub(crate) key: SessionKey,
}

impl Deployment {
    pub(crate) async fn new() -> Self {
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
        let (s3, sqs, bucket, queue, dead_letters) = documents_resources(&shared, &unique).await;
        let index_root = tempfile::tempdir().unwrap();
        let env = Env {
            table,
            state_machine_arn: Some(machine.state_machine_arn().to_owned()),
            app_origin: Some(ORIGIN.into()),
            signing_key_secret: Some(secret.arn().unwrap().to_owned()),
            sealing_key_secret: Some(sealing.arn().unwrap().to_owned()),
            provider_key_secret: None,
            documents_bucket: Some(bucket),
            indexer_queue_url: Some(queue),
            index_root: Some(index_root.path().to_owned()),
            // The functions that search and index load the model as the layer lays it out.
            embedding_models: std::env::var_os("KNOWLEDGE_TEST_MODELS").map(Into::into),
            lifetime: Default::default(),
            egress: Default::default(),
            approval_wait: std::time::Duration::from_secs(24 * 3600),
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
            s3,
            sqs,
            dead_letters,
            _index_root: index_root,
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
    pub(crate) fn event(&self, function: Function) -> lambda_http::Request {
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
    /// The indexer reads files in process here: its parser children are its own binary
    /// (`Parts::first`), which a test binary is not (`scripts/link_guard.sh` starts the real
    /// indexer as one).
    pub(crate) async fn cold_start(&self, function: Function) -> ColdStart {
        let mut parts = Parts::of(function);
        if parts.parser.is_some() {
            parts.parser = Some(|| std::sync::Arc::new(knowledge_ingest::Ingest::default()));
        }
        ColdStart::load(parts, &self.shared, &self.env, self.counter.clone())
            .await
            .unwrap()
    }

    /// The router of `function`.
    pub(crate) async fn router(&self, function: Function) -> axum::Router {
        self.cold_start(function).await.router().unwrap()
    }

    /// Feeds the sample event to the function; returns status, body and the DynamoDB requests
    /// it made.
    pub(crate) async fn invoke(&self, function: Function) -> (u16, Value, BTreeMap<String, u64>) {
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

    /// `GET path` on `function`, signed in as the sample user; returns status, body as text
    /// and the DynamoDB requests it made.
    pub(crate) async fn invoke_get(
        &self, function: Function, path: &str,
    ) -> (u16, String, BTreeMap<String, u64>) {
        let mut request = self.event(function);
        *request.method_mut() = axum::http::Method::GET;
        *request.uri_mut() = path.parse().unwrap();
        *request.body_mut() = lambda_http::Body::Empty;
        let response = self.router(function).await.oneshot(request).await.unwrap();
        let status = response.status().as_u16();
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
            .await
            .unwrap();
        let text = String::from_utf8(bytes.to_vec()).unwrap();
        (status, text, self.take_checked(function.name))
    }

    /// `method path` with a JSON `body` (none when `Null`) on `function`, with its sample
    /// event's headers (its cookie or bearer token); returns status, body and the DynamoDB
    /// requests it made, checked against its row.
    pub(crate) async fn send(
        &self, function: Function, method: &str, path: &str, body: Value,
    ) -> (u16, Value, BTreeMap<String, u64>) {
        let mut request = self.event(function);
        *request.method_mut() = method.parse().unwrap();
        *request.uri_mut() = path.parse().unwrap();
        *request.body_mut() = if body.is_null() {
            lambda_http::Body::Empty
        } else {
            lambda_http::Body::Text(body.to_string())
        };
        let response = self.router(function).await.oneshot(request).await.unwrap();
        let status = response.status().as_u16();
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
            .await
            .unwrap();
        let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        (status, body, self.take_checked(function.name))
    }

    /// The DynamoDB requests made since the last take, checked against what `function`'s
    /// policies allow ([`allowed`]).
    pub(crate) fn take_checked(&self, function: &str) -> BTreeMap<String, u64> {
        // Taking the counts forgets the transactions' item actions: those first.
        let items = self.counter.take_item_actions();
        let made = self.counter.take();
        allowed(function, &made, &items);
        made
    }

    pub(crate) async fn executions(&self) -> Vec<String> {
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

/// The documents' bucket and the indexer's queue of a deployment, as template.yaml makes them:
/// the queue's dead-letter queue after as many receives as the template says. Returns the
/// clients, the bucket's name and the queues' URLs.
async fn documents_resources(
    shared: &aws_config::SdkConfig, unique: &str,
) -> (
    aws_sdk_s3::Client,
    aws_sdk_sqs::Client,
    String,
    String,
    String,
) {
    let s3 = aws_sdk_s3::Client::from_conf(knowledge_s3::config(shared).build());
    let bucket = format!("knowledge-docs-{unique}");
    s3.create_bucket().bucket(&bucket).send().await.unwrap();
    let sqs = aws_sdk_sqs::Client::new(shared);
    let dead = (sqs.create_queue())
        .queue_name(format!("indexer-dead-{unique}"))
        .send()
        .await
        .unwrap();
    let dead_url = dead.queue_url().unwrap().to_owned();
    let dead_arn = (sqs.get_queue_attributes())
        .queue_url(&dead_url)
        .attribute_names(aws_sdk_sqs::types::QueueAttributeName::QueueArn)
        .send()
        .await
        .unwrap()
        .attributes()
        .unwrap()[&aws_sdk_sqs::types::QueueAttributeName::QueueArn]
        .clone();
    let redrive = serde_json::json!({
        "deadLetterTargetArn": dead_arn,
        "maxReceiveCount": template_receives(),
    });
    let queue = (sqs.create_queue())
        .queue_name(format!("indexer-{unique}"))
        .attributes(
            aws_sdk_sqs::types::QueueAttributeName::RedrivePolicy,
            redrive.to_string(),
        )
        .send()
        .await
        .unwrap();
    let queue_url = queue.queue_url().unwrap().to_owned();
    (s3, sqs, bucket, queue_url, dead_url)
}

/// The receives after which template.yaml's indexer queue moves a message to its dead-letter
/// queue.
pub(crate) fn template_receives() -> u32 {
    let template = repo_file("template.yaml");
    let (_, queue) = template.split_once("\n  IndexerQueue:\n").unwrap();
    let (_, count) = queue.split_once("maxReceiveCount: ").unwrap();
    count.lines().next().unwrap().trim().parse().unwrap()
}

pub(crate) fn requests(pairs: &[(&str, u64)]) -> BTreeMap<String, u64> {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

/// The IAM action of an S3 or SQS operation the functions make; `None` for DynamoDB's.
fn documents_action(operation: &str) -> Option<&'static str> {
    Some(match operation {
        "GetObject" | "HeadObject" => "s3:GetObject",
        "PutObject" => "s3:PutObject",
        "DeleteObject" | "DeleteObjects" => "s3:DeleteObject",
        "ListObjectsV2" => "s3:ListBucket",
        "SendMessage" => "sqs:SendMessage",
        _ => return None,
    })
}

/// Checks that `function`'s row declares each DynamoDB operation in `made` and each action its
/// transactions' items and its queries need (`needs`, from
/// [`RequestCounter::take_item_actions`]), and each S3 and SQS operation (what it does with the
/// documents): the row is its IAM policy in template.yaml (`cargo xtask derive`), and moto does
/// not enforce IAM, so an operation the row leaves out would fail only on AWS. A transaction is
/// authorised item by item, so `TransactWriteItems` itself is not an action; a query, by what
/// it reads (the table or an index).
fn allowed(function: &str, made: &BTreeMap<String, u64>, needs: &BTreeSet<String>) {
    let row = functions::ALL
        .into_iter()
        .find(|row| row.name == function)
        .expect("the function's row");
    let declared: BTreeSet<String> = (row.table.operations.iter())
        .map(|op| format!("dynamodb:{}", op.name()))
        .chain(
            (row.table.indexes.iter())
                .map(|index| format!("dynamodb:Query index/{}", index.name())),
        )
        .chain((row.parts.documents.permissions().iter()).map(|p| p.action.to_owned()))
        .collect();
    let operations = made
        .keys()
        .filter(|op| *op != "TransactWriteItems" && *op != "Query")
        .map(|op| match documents_action(op) {
            Some(action) => action.to_owned(),
            None => format!("dynamodb:{op}"),
        });
    for action in operations.chain(needs.iter().cloned()) {
        assert!(
            declared.contains(&action),
            "{function} needs {action}, which its row (lib/assembly/src/functions/rows.rs) does not \
             declare"
        );
    }
}

/// The row of `handler`'s function.
pub(crate) fn row(handler: Handler) -> Function {
    let row = functions::ALL
        .into_iter()
        .find(|f| matches!(f.serves, Serves::Task(h) if h == handler));
    row.expect("every handler has its function")
}

/// The sample Step Functions input of `handler`'s function.
pub(crate) fn sample_input(handler: Handler) -> Value {
    serde_json::from_str(&repo_file(&format!("events/{}.json", row(handler).name))).unwrap()
}

/// Feeds `payload` to `handler`'s task function.
pub(crate) async fn task(
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
pub(crate) async fn follow_up(d: &Deployment) -> (u64, String) {
    let mut s = d.store.get_session(&d.key).await.unwrap().unwrap();
    let expected = s.version;
    s.version += 1;
    s.start_run(RunId::parse(RUN).unwrap(), SystemClock.now(), None);
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
pub(crate) async fn step(
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
