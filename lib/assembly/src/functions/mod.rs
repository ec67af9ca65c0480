//! The service's functions, one row each: its name, what it serves, the optional parts it
//! builds, the secrets it reads, what it asks of the table and of the workflow, and its Lambda
//! settings. On AWS each row is a Lambda function, and everything about it derives from its
//! row: its router, the parts its binary links, the secrets its cold start reads, and the
//! files `cargo xtask derive` writes from the rows (its resource in `template.yaml` with its
//! environment, routes and IAM policy; `functions/src/bin/<name>.rs`; its `[[bin]]` entry;
//! its line in `functions/README.md`). The local service serves every row's routes in one
//! process, and the OpenAPI document describes them.
//!
//! A row is a constant (`rows.rs`), and a function's `main` names only its own
//! (`knowledge_aws::main!`): nothing in its binary names another row's routes or parts, so the
//! linker leaves them out. [`ALL`] names every row, for the local service, the document, the
//! derived files and the tests.

mod rows;

pub use rows::*;

use knowledge_core::steps::Handler;
use knowledge_http::Routes;

/// One function of the service.
#[derive(Clone, Copy)]
pub struct Function {
    /// Its name in `functions/src/bin/`, in `template.yaml` (in PascalCase, followed by
    /// `Function`) and in `events/`.
    pub name: &'static str,
    pub serves: Serves,
    pub parts: Uses,
    pub secrets: Secrets,
    /// What it may ask of the table: its IAM policy, and what the tests check every request
    /// they see it make against.
    pub table: TableUse,
    /// Whether it starts executions of the agent workflow (a new turn, a stop, a revival).
    pub starts_runs: bool,
    pub lambda: Lambda,
}

/// A function's Lambda settings.
#[derive(Clone, Copy)]
pub struct Lambda {
    pub memory_mb: u16,
    /// How long one invocation may run: an endpoint's bound, or a Task's longest step.
    pub timeout_secs: u16,
    /// The most bytes its arm64 binary may hold, as `cargo lambda build --release --arm64`
    /// builds it (`CargoLambda.toml`): a function's size is its cold start's first cost.
    /// Checked by `scripts/binary_sizes.sh`.
    pub max_bytes: u32,
}

impl Lambda {
    /// An endpoint's: 256 MB, 10 s, and the size every function stays under unless its row
    /// says otherwise, 10 MB, which keeps a cold start short (docs/performance.md).
    pub const ENDPOINT: Self = Self {
        memory_mb: 256,
        timeout_secs: 10,
        max_bytes: 10_000_000,
    };

    /// An endpoint's settings with a longer bound, for one that waits on another server.
    pub const fn lasting(timeout_secs: u16) -> Self {
        Self {
            timeout_secs,
            ..Self::ENDPOINT
        }
    }
}

/// What a function serves.
#[derive(Clone, Copy)]
pub enum Serves {
    /// Session, `/api/auth` or admin routes, behind API Gateway.
    Routes(Routes),
    /// Every SCIM route, under `/api/scim` and `/api/scim/v2`.
    Scim,
    /// The OpenAPI document, `GET /api/openapi.json`: built in, no settings, no clients.
    Document,
    /// The browser app's page and assets: built in, no settings, no clients.
    AppFiles,
    /// A Task state of the agent workflow.
    Task(Handler),
    /// The scheduled sweep for runs whose execution died.
    Sweep,
    /// The indexer's queue (SQS, through an event source mapping that reports each failed
    /// message): the bucket's events of originals created, and the admin function's removals.
    /// At most [`INDEXER_CONCURRENCY`] invocations at once, each given one message.
    Indexer,
}

/// Invocations of the indexer at once (its event source mapping's `MaximumConcurrency`, the
/// least SQS allows): writers of one organisation's index seldom meet, and when they do the
/// index's conditional write settles it. A limit on the mapping, not reserved concurrency,
/// which would throttle the queue's pollers (each throttled receive counting towards the
/// dead-letter queue) and take from the account's unreserved pool.
pub const INDEXER_CONCURRENCY: u16 = 2;

/// The optional parts a function builds beyond the store, the workflow and its keys.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Uses {
    /// The agent's provider: creating a session checks its health; `CallAgent` asks it.
    pub agent: bool,
    pub identity: Identity,
    pub integrations: Integrations,
    pub documents: DocumentsUse,
}

impl Uses {
    /// None of them.
    pub const NOTHING: Self = Self {
        agent: false,
        identity: Identity::None,
        integrations: Integrations::None,
        documents: DocumentsUse::None,
    };
}

/// How much of the organisations' documents a function reaches on AWS: the bucket of their
/// originals and indexes, and the indexer's queue. Its [`DocumentsUse::permissions`] are its
/// IAM policy's, and what the tests check each request it makes against.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum DocumentsUse {
    None,
    /// Reading: a copy of the organisation's index searched (one conditional `GET` of its
    /// manifest per request, new files fetched), an original downloaded.
    Read,
    /// Managing: pre-signed uploads of originals, and what is to be removed (originals,
    /// passages) sent to the indexer's queue: the indexer is the bucket's only writer besides
    /// the browsers' uploads.
    Manage,
    /// Indexing: originals read (and stray ones deleted), parsed, and the index written.
    Index,
}

/// What a permission is on: the bucket's originals (`org/*`; for `s3:ListBucket`, listing
/// under `org/` only), its indexes (`index/*`), the bucket itself (listing all of it), or the
/// indexer's queue.
#[derive(Clone, Copy, PartialEq, Eq, Debug, PartialOrd, Ord)]
pub enum DocumentsResource {
    Originals,
    Indexes,
    Bucket,
    Queue,
}

/// An IAM action on what it is for.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Permission {
    /// As IAM writes it: `s3:GetObject`.
    pub action: &'static str,
    pub on: DocumentsResource,
}

const fn allow(action: &'static str, on: DocumentsResource) -> Permission {
    Permission { action, on }
}

impl DocumentsUse {
    /// What this use may do, and nothing more. Listing the bucket is granted to those that
    /// read objects that may be missing (an organisation's manifest before its first
    /// document): without it S3 answers 403 for a missing key, not 404; the indexer lists a
    /// document's generations to delete them.
    pub const fn permissions(self) -> &'static [Permission] {
        match self {
            Self::None => &[],
            Self::Read => READ,
            Self::Manage => MANAGE,
            Self::Index => INDEX,
        }
    }
}

const READ: &[Permission] = &[
    allow("s3:GetObject", DocumentsResource::Originals),
    allow("s3:GetObject", DocumentsResource::Indexes),
    allow("s3:ListBucket", DocumentsResource::Bucket),
];
const MANAGE: &[Permission] = &[
    // Pre-signing a PUT signs it with the function's own permission to make it.
    allow("s3:PutObject", DocumentsResource::Originals),
    // Removals (passages, originals) go to the indexer.
    allow("sqs:SendMessage", DocumentsResource::Queue),
];
const INDEX: &[Permission] = &[
    allow("s3:GetObject", DocumentsResource::Originals),
    allow("s3:DeleteObject", DocumentsResource::Originals),
    allow("s3:GetObject", DocumentsResource::Indexes),
    allow("s3:PutObject", DocumentsResource::Indexes),
    allow("s3:DeleteObject", DocumentsResource::Indexes),
    allow("s3:ListBucket", DocumentsResource::Bucket),
    // The event source mapping polls with the function's role.
    allow("sqs:ReceiveMessage", DocumentsResource::Queue),
    allow("sqs:DeleteMessage", DocumentsResource::Queue),
    allow("sqs:GetQueueAttributes", DocumentsResource::Queue),
];

/// How much of the organisations' identity providers a function reaches.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Identity {
    None,
    /// Their discovery alone, to test a configuration: the admin function signs nobody in.
    Discovery,
    /// Signing in: discovery, the code exchange and ID-token verification.
    SignIn,
}

/// How much of the organisations' connected integrations a function reaches.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Integrations {
    None,
    /// Only whether a member reaches any (what creating a session asks): no MCP client.
    Reach,
    /// Their tools, through the MCP client.
    Tools,
    /// The members' OAuth grants alone: connecting, disconnecting and revoking them at their
    /// authorization servers, with no MCP client.
    Grants,
}

/// The secrets a function's cold start reads.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Secrets {
    /// Signs and checks the session cookie.
    pub cookie_key: bool,
    /// Seals and opens integration credentials and identity providers' client secrets.
    pub sealing_key: bool,
    /// The agent provider's API key, where one is configured.
    pub provider_key: bool,
}

impl Secrets {
    pub const NONE: Self = Self {
        cookie_key: false,
        sealing_key: false,
        provider_key: false,
    };
    /// The cookie key alone: the session and `/api/auth` endpoints.
    pub const COOKIE: Self = Self {
        cookie_key: true,
        ..Self::NONE
    };
    /// The sealing key alone.
    pub const SEALING: Self = Self {
        sealing_key: true,
        ..Self::NONE
    };
}

/// What a function may ask of the table: operations on the table's items, and queries of its
/// secondary indexes.
#[derive(Clone, Copy)]
pub struct TableUse {
    pub operations: &'static [Operation],
    /// The indexes it queries (`Query` on an index, which `operations` does not grant).
    pub indexes: &'static [Index],
}

impl TableUse {
    /// No table at all: the built-in document and app files.
    pub const NONE: Self = Self {
        operations: &[],
        indexes: &[],
    };

    /// Whether it reaches the table at all.
    pub const fn any(self) -> bool {
        !self.operations.is_empty() || !self.indexes.is_empty()
    }
}

/// A DynamoDB operation on the table's items. A transaction is authorised item by item, so a
/// function that writes transactions declares the operations of their items.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Operation {
    GetItem,
    BatchGetItem,
    Query,
    PutItem,
    UpdateItem,
    DeleteItem,
    BatchWriteItem,
    ConditionCheckItem,
}

impl Operation {
    /// Its name, as DynamoDB's API and IAM (after `dynamodb:`) write it.
    pub const fn name(self) -> &'static str {
        match self {
            Self::GetItem => "GetItem",
            Self::BatchGetItem => "BatchGetItem",
            Self::Query => "Query",
            Self::PutItem => "PutItem",
            Self::UpdateItem => "UpdateItem",
            Self::DeleteItem => "DeleteItem",
            Self::BatchWriteItem => "BatchWriteItem",
            Self::ConditionCheckItem => "ConditionCheckItem",
        }
    }
}

/// A secondary index of the table (its keys: `lib/dynamo/src/keys.rs`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Index {
    /// A member's sessions by when they were last updated, and the directory's lookups.
    Gsi1,
    /// The runs whose execution may have died, for the sweep.
    Gsi2,
}

impl Index {
    /// Its name in the table.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Gsi1 => "GSI1",
            Self::Gsi2 => "GSI2",
        }
    }
}

impl Function {
    /// An endpoint that reads and mints session cookies and builds no optional part.
    const fn routes(name: &'static str, routes: Routes, table: TableUse) -> Self {
        Self {
            name,
            serves: Serves::Routes(routes),
            parts: Uses::NOTHING,
            secrets: Secrets::COOKIE,
            table,
            starts_runs: false,
            lambda: Lambda::ENDPOINT,
        }
    }

    /// The function of a workflow Task: `CallAgent` asks the agent, `CallAgent` lists the
    /// integrations' tools and `RunTool` calls them (their credentials sealed). Every Task
    /// reads and commits its session's run: a claim, its events, its steps.
    const fn task(name: &'static str, handler: Handler, timeout_secs: u16) -> Self {
        let integrations = handler.uses_integrations();
        Self {
            name,
            serves: Serves::Task(handler),
            parts: Uses {
                agent: handler.asks_agent(),
                identity: Identity::None,
                integrations: if integrations {
                    Integrations::Tools
                } else {
                    Integrations::None
                },
                documents: DocumentsUse::None,
            },
            secrets: Secrets {
                cookie_key: false,
                sealing_key: integrations,
                provider_key: handler.asks_agent(),
            },
            table: TableUse {
                operations: &[
                    Operation::GetItem,
                    Operation::Query,
                    Operation::PutItem,
                    Operation::UpdateItem,
                ],
                indexes: &[],
            },
            starts_runs: false,
            lambda: Lambda::lasting(timeout_secs),
        }
    }

    /// The routes it serves behind the session guards, if any.
    pub const fn session_routes(self) -> Option<Routes> {
        match self.serves {
            Serves::Routes(routes) => Some(routes),
            _ => None,
        }
    }
}

/// The routes of every function that serves session, `/api/auth` or admin routes.
pub fn session_routes() -> Vec<Routes> {
    ALL.iter().filter_map(|f| f.session_routes()).collect()
}

/// The OpenAPI document of every route the service serves, as served and committed
/// (`docs/openapi.json`).
pub fn document_json() -> String {
    knowledge_http::openapi::to_json(&knowledge_http::document(&session_routes()))
}
