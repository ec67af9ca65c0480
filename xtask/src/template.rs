//! Each function's resource in `template.yaml`, from its row: the binary it builds, its
//! memory and timeout, its environment (from the parts and secrets it uses), its routes as
//! API events (from the routes' declarations), and its IAM policy (from what it asks of the
//! table, the secrets it reads, whether it starts runs and what it does with the documents);
//! for the indexer, the event source mapping of its queue.

use std::fmt::Write;

use knowledge_assembly::functions::{
    ADMIN, ALL, DocumentsResource, DocumentsUse, Function, INDEXER_CONCURRENCY, Index, Serves,
};
use knowledge_aws::config::{
    APP_ORIGIN_ENV, DOCUMENTS_BUCKET_ENV, EMBEDDING_MODEL_ENV, INDEXER_QUEUE_ENV,
    PROVIDER_KEY_SECRET_ENV, SEALING_KEY_SECRET_ENV, SIGNING_KEY_SECRET_ENV, STATE_MACHINE_ENV,
    TABLE_ENV,
};
use knowledge_http::declared_routes;

use crate::pascal;

/// An event of a function: a route of the HTTP API, or its schedule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    Api {
        name: String,
        /// `ANY` or a method in upper case.
        method: &'static str,
        path: String,
    },
    /// EventBridge Scheduler invoking the function at `rate` with `input`, never retried: the
    /// next one comes at the next tick.
    Schedule {
        name: &'static str,
        rate: &'static str,
        input: &'static str,
    },
}

/// The sweep of runs, every minute.
const SWEEP_SCHEDULE: Event = Event::Schedule {
    name: "EveryMinute",
    rate: "rate(1 minute)",
    input: r#"{"source": "knowledge.sweep"}"#,
};

/// The indexer's own sweep: uploads cut short settled, and documents left queued (their
/// bucket's event lost, or its deliveries spent) indexed.
const INDEXER_SCHEDULE: Event = Event::Schedule {
    name: "Every15Minutes",
    rate: "rate(15 minutes)",
    input: r#"{"source": "knowledge.documents"}"#,
};

/// The resources of every function, as the derived part of `template.yaml` holds them, and
/// the policy their roles get when a collector runs beside them.
pub fn functions() -> String {
    let mut resources: Vec<String> = ALL.iter().map(|row| resource(*row)).collect();
    resources.push(collector_policy());
    format!("\n{}\n", resources.join("\n"))
}

/// What the collector of `CollectorLayerArn` needs of every function's role, only with one:
/// to send X-Ray the spans (its default exporter). A policy of its own that names the roles
/// SAM makes (`<Function>Role`), since SAM cannot make a managed policy of a function
/// conditional.
fn collector_policy() -> String {
    let mut out = String::new();
    let mut line = |indent: usize, text: &str| {
        let _ = writeln!(out, "{:indent$}{text}", "", indent = indent);
    };
    line(2, "CollectorPolicy:");
    line(4, "Type: AWS::IAM::ManagedPolicy");
    line(4, "Condition: HasCollectorLayer");
    line(4, "Properties:");
    line(
        6,
        "Description: The functions' collector sends their spans to X-Ray.",
    );
    line(6, "PolicyDocument:");
    line(8, "Version: \"2012-10-17\"");
    line(8, "Statement:");
    line(10, "- Effect: Allow");
    line(12, "Action:");
    line(14, "- xray:PutTraceSegments");
    line(14, "- xray:PutTelemetryRecords");
    line(12, "Resource: \"*\"");
    line(6, "Roles:");
    for row in ALL {
        line(8, &format!("- !Ref {}FunctionRole", pascal(row.name)));
    }
    out
}

/// The routes API Gateway sends to a function, and its schedule.
pub fn events(row: Function) -> Vec<Event> {
    let api = |name: &str, method: &'static str, path: &str| Event::Api {
        name: name.to_owned(),
        method,
        path: path.to_owned(),
    };
    match row.serves {
        // The admin function takes every path under the prefix that no other function's route
        // names more exactly (API Gateway picks the most specific route): its own, and unknown
        // ones, which it answers 401, 404 or 405 as the local service does.
        Serves::Routes(_) if row.name == ADMIN.name => {
            vec![api("Api", "ANY", "/api/admin/{proxy+}")]
        }
        Serves::Routes(routes) => declared_routes(&[routes])
            .into_iter()
            .map(|r| api(&pascal(&r.operation_id), r.method, &r.path))
            .collect(),
        Serves::Scim => vec![
            api("Scim", "ANY", "/api/scim/{proxy+}"),
            api("ScimV2", "ANY", "/api/scim/v2/{proxy+}"),
        ],
        Serves::Document => vec![api("Document", "GET", "/api/openapi.json")],
        Serves::AppFiles => knowledge_web::PAGES
            .iter()
            .chain([&knowledge_web::ASSETS])
            .map(|path| api(&path_name(path), "GET", path))
            .collect(),
        Serves::Task(_) => Vec::new(),
        // Its queue is an event source mapping of its own (`queue_mapping`): SAM's SQS event
        // would add a managed policy that polls every queue of the account.
        Serves::Indexer => vec![INDEXER_SCHEDULE],
        Serves::Sweep => vec![SWEEP_SCHEDULE],
    }
}

/// An event's name from its path: `/admin/{section}` is `AdminSection`, `/` is `Home`.
fn path_name(path: &str) -> String {
    let name = pascal(&path.replace(['/', '{', '}'], "-"));
    if name.is_empty() { "Home".into() } else { name }
}

/// What the function is, for a person reading the console and `functions/README.md`.
pub(crate) fn description(row: Function) -> String {
    match row.serves {
        Serves::Routes(_) if row.name == ADMIN.name => {
            "Every route under /api/admin that no other function serves".to_owned()
        }
        Serves::Routes(_) => events(row)
            .iter()
            .filter_map(|e| match e {
                Event::Api { method, path, .. } => Some(format!("{method} {path}")),
                Event::Schedule { .. } => None,
            })
            .collect::<Vec<_>>()
            .join(", "),
        Serves::Scim => {
            "SCIM 2.0 provisioning: every route under /api/scim and /api/scim/v2".into()
        }
        Serves::Document => "GET /api/openapi.json: the OpenAPI document, built in".into(),
        Serves::AppFiles => "The browser app: its page and hashed assets, built in".into(),
        Serves::Task(handler) => format!("{} Task of the agent workflow", handler.name()),
        Serves::Sweep => {
            "Every minute: revives the runs whose execution died, or ends their turn".into()
        }
        Serves::Indexer => "The indexer's queue: documents' originals uploaded to the bucket \
                            indexed, and documents removed from the index"
            .into(),
    }
}

/// The environment its cold start reads: names only, never a secret's value.
fn environment(row: Function) -> Vec<(&'static str, &'static str)> {
    let mut vars = Vec::new();
    if row.table.any() {
        vars.push((TABLE_ENV, "!Ref Table"));
    }
    if matches!(row.serves, Serves::Routes(_) | Serves::Scim) {
        vars.push((APP_ORIGIN_ENV, "!Ref AppOrigin"));
    }
    if row.secrets.cookie_key {
        vars.push((SIGNING_KEY_SECRET_ENV, "!Ref SigningKeySecretArn"));
    }
    if row.secrets.sealing_key {
        vars.push((SEALING_KEY_SECRET_ENV, "!Ref SealingKeySecretArn"));
    }
    if row.starts_runs {
        vars.push((STATE_MACHINE_ENV, "!Ref AgentStateMachine"));
    }
    if row.parts.agent {
        // The provider's settings (lib/providers/src/config.rs).
        vars.extend([
            ("KNOWLEDGE_AGENT", "!Ref AgentProvider"),
            ("KNOWLEDGE_MODEL", "!Ref AgentModel"),
            ("KNOWLEDGE_PRICES", "!Ref AgentPrices"),
            ("OPENAI_BASE_URL", "!Ref ProviderBaseUrl"),
            ("ANTHROPIC_BASE_URL", "!Ref ProviderBaseUrl"),
        ]);
    }
    if row.secrets.provider_key {
        vars.push((PROVIDER_KEY_SECRET_ENV, PROVIDER_KEY));
    }
    // The app's page names the bucket in its policy: the browser uploads originals to it.
    let names_bucket = matches!(row.serves, Serves::AppFiles);
    if row.parts.documents != DocumentsUse::None || names_bucket {
        vars.push((DOCUMENTS_BUCKET_ENV, "!Ref DocumentsBucket"));
    }
    if row.parts.documents == DocumentsUse::Manage {
        vars.push((INDEXER_QUEUE_ENV, "!Ref IndexerQueue"));
    }
    if embeds(row) {
        vars.push((EMBEDDING_MODEL_ENV, EMBEDDING_MODEL_DIR));
    }
    vars
}

/// Where the `EmbeddingModel` layer puts the model's folder: a layer is unpacked under `/opt`.
const EMBEDDING_MODEL_DIR: &str = "/opt/models";

/// Whether the row searches or writes passages, and so embeds: the layer and its variable.
fn embeds(row: Function) -> bool {
    matches!(
        row.parts.documents,
        DocumentsUse::Read | DocumentsUse::Index
    )
}

/// The provider's key, when the deployment names one.
const PROVIDER_KEY: &str = "!If [HasProviderKey, !Ref ProviderApiKeySecretArn, !Ref AWS::NoValue]";

/// One statement of its policy: the actions, and the resources they are allowed on, on a
/// condition (its lines, under `Condition:`).
struct Statement {
    actions: Vec<String>,
    resources: Vec<String>,
    condition: Vec<String>,
}

impl Statement {
    fn new(actions: Vec<String>, resources: Vec<String>) -> Self {
        Self {
            actions,
            resources,
            condition: Vec::new(),
        }
    }
}

/// The statements of what its row does with the documents: one per resource, its actions.
fn documents_statements(documents: DocumentsUse) -> Vec<Statement> {
    let resources = [
        DocumentsResource::Originals,
        DocumentsResource::Indexes,
        DocumentsResource::Bucket,
        DocumentsResource::Queue,
    ];
    let mut statements = Vec::new();
    for on in resources {
        let granted = documents.permissions().iter().filter(|p| p.on == on);
        let (listing, objects): (Vec<_>, Vec<_>) =
            granted.partition(|p| p.action == "s3:ListBucket");
        let actions = |ps: Vec<&knowledge_assembly::functions::Permission>| -> Vec<String> {
            ps.iter().map(|p| p.action.to_owned()).collect()
        };
        if !objects.is_empty() {
            let resource = match on {
                DocumentsResource::Originals => "!Sub \"${DocumentsBucket.Arn}/org/*\"",
                DocumentsResource::Indexes => "!Sub \"${DocumentsBucket.Arn}/index/*\"",
                DocumentsResource::Bucket => "!GetAtt DocumentsBucket.Arn",
                DocumentsResource::Queue => "!GetAtt IndexerQueue.Arn",
            };
            statements.push(Statement::new(actions(objects), vec![resource.into()]));
        }
        if !listing.is_empty() {
            let mut listed =
                Statement::new(actions(listing), vec!["!GetAtt DocumentsBucket.Arn".into()]);
            if on == DocumentsResource::Originals {
                listed.condition = vec![
                    "StringLike:".into(),
                    "  s3:prefix:".into(),
                    "    - \"org/*\"".into(),
                ];
            }
            statements.push(listed);
        }
    }
    statements
}

/// Its policy: no more than its row declares.
fn statements(row: Function) -> Vec<Statement> {
    let mut statements = Vec::new();
    if !row.table.operations.is_empty() {
        statements.push(Statement::new(
            (row.table.operations.iter())
                .map(|op| format!("dynamodb:{}", op.name()))
                .collect(),
            vec!["!GetAtt Table.Arn".into()],
        ));
    }
    if !row.table.indexes.is_empty() {
        statements.push(Statement::new(
            vec!["dynamodb:Query".into()],
            (row.table.indexes.iter())
                .map(|index: &Index| format!("!Sub \"${{Table.Arn}}/index/{}\"", index.name()))
                .collect(),
        ));
    }
    let secrets = [
        (row.secrets.cookie_key, "!Ref SigningKeySecretArn"),
        (row.secrets.sealing_key, "!Ref SealingKeySecretArn"),
        (row.secrets.provider_key, PROVIDER_KEY),
    ];
    let secrets: Vec<String> = (secrets.iter())
        .filter(|(read, _)| *read)
        .map(|(_, arn)| (*arn).to_owned())
        .collect();
    if !secrets.is_empty() {
        statements.push(Statement::new(
            vec!["secretsmanager:GetSecretValue".into()],
            secrets,
        ));
    }
    if row.starts_runs {
        statements.push(Statement::new(
            vec!["states:StartExecution".into()],
            vec!["!Ref AgentStateMachine".into()],
        ));
    }
    statements.extend(documents_statements(row.parts.documents));
    statements
}

/// The function's resource, indented as an entry of `Resources:`.
fn resource(row: Function) -> String {
    let mut out = String::new();
    let mut line = |indent: usize, text: &str| {
        let _ = writeln!(out, "{:indent$}{text}", "", indent = indent);
    };
    line(2, &format!("{}Function:", pascal(row.name)));
    line(4, "Type: AWS::Serverless::Function");
    line(4, "Metadata:");
    line(6, "BuildMethod: rust-cargolambda");
    line(6, "BuildProperties:");
    line(8, &format!("Binary: {}", row.name));
    line(4, "Properties:");
    line(6, &format!("Description: {}", quoted(&description(row))));
    line(6, &format!("MemorySize: {}", row.lambda.memory_mb));
    line(6, &format!("Timeout: {}", row.lambda.timeout_secs));
    if embeds(row) {
        line(6, "Layers:");
        line(8, "- !Ref EmbeddingModelLayer");
    }
    let environment = environment(row);
    if !environment.is_empty() {
        line(6, "Environment:");
        line(8, "Variables:");
        for (name, value) in environment {
            line(10, &format!("{name}: {value}"));
        }
    }
    let events = events(row);
    if !events.is_empty() {
        line(6, "Events:");
    }
    for event in events {
        match event {
            Event::Api { name, method, path } => {
                line(8, &format!("{name}:"));
                line(10, "Type: HttpApi");
                line(10, "Properties:");
                line(12, "ApiId: !Ref HttpApi");
                line(12, &format!("Method: {method}"));
                line(12, &format!("Path: {path}"));
            }
            Event::Schedule { name, rate, input } => {
                line(8, &format!("{name}:"));
                line(10, "Type: ScheduleV2");
                line(10, "Properties:");
                line(12, &format!("ScheduleExpression: {rate}"));
                line(12, &format!("Input: '{input}'"));
                line(
                    12,
                    "# One that fails is not retried: the next one comes at the next tick.",
                );
                line(12, "RetryPolicy:");
                line(14, "MaximumRetryAttempts: 0");
            }
        }
    }
    let statements = statements(row);
    if !statements.is_empty() {
        line(6, "Policies:");
        line(8, "- Version: \"2012-10-17\"");
        line(10, "Statement:");
        for statement in statements {
            line(12, "- Effect: Allow");
            line(14, "Action:");
            for action in statement.actions {
                line(16, &format!("- {action}"));
            }
            line(14, "Resource:");
            for resource in statement.resources {
                line(16, &format!("- {resource}"));
            }
            if !statement.condition.is_empty() {
                line(14, "Condition:");
                for condition in statement.condition {
                    line(16, &condition);
                }
            }
        }
    }
    if matches!(row.serves, Serves::Indexer) {
        out.push('\n');
        out.push_str(&queue_mapping(row));
    }
    out
}

/// The indexer's event source mapping: one message per invocation (so that a receive is an
/// attempt, and the dead-letter queue's count of receives is the core's count of attempts),
/// each failure reported alone, at most [`INDEXER_CONCURRENCY`] invocations at once.
fn queue_mapping(row: Function) -> String {
    let name = pascal(row.name);
    format!(
        "  {name}FunctionQueue:\n    \
         Type: AWS::Lambda::EventSourceMapping\n    \
         Properties:\n      \
         FunctionName: !Ref {name}Function\n      \
         EventSourceArn: !GetAtt IndexerQueue.Arn\n      \
         BatchSize: 1\n      \
         FunctionResponseTypes:\n        \
         - ReportBatchItemFailures\n      \
         ScalingConfig:\n        \
         MaximumConcurrency: {INDEXER_CONCURRENCY}\n"
    )
}

/// A YAML string in double quotes.
fn quoted(text: &str) -> String {
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}
