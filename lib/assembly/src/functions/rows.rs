//! The rows: one constant per function, and [`ALL`].

use knowledge_core::steps::Handler;
use knowledge_http::endpoints;

use super::Operation::{
    BatchGetItem, BatchWriteItem, ConditionCheckItem, DeleteItem, GetItem, PutItem, Query,
    UpdateItem,
};
use super::{
    DocumentsUse, Function, Identity, Index, Integrations, Lambda, Secrets, Serves, TableUse, Uses,
};

/// Operations on the table alone.
const fn items(operations: &'static [super::Operation]) -> TableUse {
    TableUse {
        operations,
        indexes: &[],
    }
}

/// Operations on the table, and queries of the directory's index.
const fn with_gsi1(operations: &'static [super::Operation]) -> TableUse {
    TableUse {
        operations,
        indexes: &[Index::Gsi1],
    }
}

pub const CREATE_SESSION: Function = Function {
    parts: Uses {
        agent: true,
        integrations: Integrations::Reach,
        ..Uses::NOTHING
    },
    secrets: Secrets {
        cookie_key: true,
        sealing_key: true,
        provider_key: true,
    },
    starts_runs: true,
    ..Function::routes(
        "create-session",
        endpoints::CREATE_SESSION,
        items(&[GetItem, BatchGetItem, Query, PutItem, UpdateItem]),
    )
};
pub const MESSAGE: Function = Function {
    starts_runs: true,
    ..Function::routes(
        "message",
        endpoints::MESSAGE,
        items(&[GetItem, BatchGetItem, PutItem, UpdateItem]),
    )
};
pub const TRANSCRIPT: Function = Function::routes(
    "transcript",
    endpoints::TRANSCRIPT,
    items(&[GetItem, BatchGetItem, Query]),
);
pub const LIST_SESSIONS: Function = Function::routes(
    "list-sessions",
    endpoints::LIST_SESSIONS,
    with_gsi1(&[GetItem, Query]),
);
pub const CANCEL: Function = Function {
    starts_runs: true,
    ..Function::routes(
        "cancel",
        endpoints::CANCEL,
        items(&[GetItem, BatchGetItem, PutItem]),
    )
};
/// The member's answer to a call the agent asks them about: the session and the call's event
/// read together, the rate window put, one transaction of the session and the rewritten
/// `tool_use` event, and for `always` the member's allowed tools swapped (a transaction that
/// may bump the member's version). The answer that leaves no call waiting starts the run.
pub const APPROVE: Function = Function {
    starts_runs: true,
    ..Function::routes(
        "approve",
        endpoints::APPROVE,
        items(&[GetItem, BatchGetItem, Query, PutItem, UpdateItem]),
    )
};
/// Renaming a session and finding sessions by title, beside the interface's endpoints.
pub const TITLES: Function = Function::routes(
    "titles",
    endpoints::TITLES,
    with_gsi1(&[GetItem, BatchGetItem, PutItem, Query]),
);
/// A member's own memory: what the agent keeps, forgetting, the switch, the export.
pub const MEMORY: Function = Function::routes(
    "memory",
    endpoints::MEMORY,
    items(&[GetItem, PutItem, UpdateItem]),
);
/// A member's own usage, by day and by model, against their allowance.
pub const USAGE: Function =
    Function::routes("usage", endpoints::USAGE, items(&[GetItem, BatchGetItem]));
pub const DELETE_SESSION: Function = Function::routes(
    "delete-session",
    endpoints::DELETE_SESSION,
    items(&[GetItem, PutItem, Query, BatchWriteItem, DeleteItem]),
);
pub const SWITCH_ORG: Function =
    Function::routes("switch-org", endpoints::SWITCH_ORG, items(&[GetItem]));
pub const ME: Function = Function::routes("me", endpoints::ME, with_gsi1(&[GetItem, Query]));
/// Signing out stamps every membership of the person as signed out.
pub const LOGOUT: Function = Function::routes(
    "logout",
    endpoints::LOGOUT,
    with_gsi1(&[GetItem, Query, PutItem]),
);
/// A single-use sign-in link (`knowledge signin-link`).
pub const SIGNIN_LINK: Function = Function::routes(
    "signin-link",
    endpoints::SIGN_IN_LINK,
    items(&[GetItem, DeleteItem]),
);
/// Single sign-on reaches the identity providers with the client secrets it opens.
pub const SSO_LOGIN: Function = Function {
    parts: Uses {
        identity: Identity::SignIn,
        ..Uses::NOTHING
    },
    secrets: Secrets {
        sealing_key: true,
        ..Secrets::COOKIE
    },
    ..Function::routes("sso-login", endpoints::SSO_LOGIN, items(&[GetItem]))
};
/// Back from the identity provider: the code exchanged, the ID token verified, the member
/// signed in (the state consumed and the login recorded in one transaction).
pub const SSO_CALLBACK: Function = Function {
    name: "sso-callback",
    serves: Serves::Routes(endpoints::SSO_CALLBACK),
    table: items(&[GetItem, Query, PutItem, DeleteItem, ConditionCheckItem]),
    lambda: Lambda::lasting(15),
    ..SSO_LOGIN
};
/// A member's connections to OAuth integrations: grants are sealed, and disconnecting revokes
/// them at the authorization server.
pub const INTEGRATIONS: Function = Function {
    parts: Uses {
        integrations: Integrations::Grants,
        ..Uses::NOTHING
    },
    secrets: Secrets {
        sealing_key: true,
        ..Secrets::COOKIE
    },
    lambda: Lambda::lasting(20),
    ..Function::routes(
        "integrations",
        endpoints::CONNECTIONS,
        items(&[GetItem, Query, PutItem, DeleteItem]),
    )
};
/// Authorization servers send the browser back here; the code is exchanged and the grant
/// sealed.
pub const OAUTH_CALLBACK: Function = Function {
    name: "oauth-callback",
    serves: Serves::Routes(endpoints::OAUTH_CALLBACK),
    table: items(&[GetItem, Query, PutItem, UpdateItem, DeleteItem]),
    lambda: Lambda::lasting(30),
    ..INTEGRATIONS
};
/// The admin function seals identity providers' secrets and integration credentials, tests a
/// provider's discovery, and revokes a removed member's grants. It pre-signs the uploads of
/// documents' originals, deletes originals, and sends the index's removals to the indexer.
pub const ADMIN: Function = Function {
    parts: Uses {
        identity: Identity::Discovery,
        integrations: Integrations::Grants,
        agent: false,
        documents: DocumentsUse::Manage,
    },
    secrets: Secrets {
        sealing_key: true,
        ..Secrets::COOKIE
    },
    ..Function::routes(
        "admin",
        endpoints::ADMIN,
        with_gsi1(&[
            GetItem,
            Query,
            PutItem,
            UpdateItem,
            DeleteItem,
            ConditionCheckItem,
            BatchGetItem,
            BatchWriteItem,
        ]),
    )
};
/// An admin's test of an integration lists its tools through the MCP client (with the
/// admin's own credential, sealed): a function of its own, so that the admin function links no
/// MCP client (1.3 MB of its arm64 binary).
pub const TEST_INTEGRATION: Function = Function {
    parts: Uses {
        integrations: Integrations::Tools,
        ..Uses::NOTHING
    },
    secrets: Secrets {
        sealing_key: true,
        ..Secrets::COOKIE
    },
    ..Function::routes(
        "test-integration",
        endpoints::ADMIN_TEST_INTEGRATION,
        items(&[GetItem, Query, PutItem]),
    )
};
/// Searching the documents a member may open: the member's groups (a query), the collections
/// (a query), and the candidates' documents in one batch; the organisation's index copied from
/// the bucket.
pub const SEARCH: Function = Function {
    parts: READS_DOCUMENTS,
    lambda: READS_DOCUMENTS_LAMBDA,
    ..Function::routes(
        "search",
        endpoints::SEARCH,
        items(&[GetItem, Query, BatchGetItem]),
    )
};
/// A document a member may open, its passages (from the index's copy) and its original.
pub const DOCUMENTS: Function = Function {
    parts: READS_DOCUMENTS,
    lambda: READS_DOCUMENTS_LAMBDA,
    ..Function::routes("documents", endpoints::DOCUMENTS, items(&[GetItem, Query]))
};
const READS_DOCUMENTS: Uses = Uses {
    documents: DocumentsUse::Read,
    ..Uses::NOTHING
};
/// A reader of the documents links tantivy and the S3 client (with the checksums it computes):
/// 11.95 MB on arm64 when they came, against about 7.6 MB for an endpoint without them. A
/// search answers from the index it holds, so the cold start it costs is the function's own.
/// It embeds each query with the model of the `EmbeddingModel` layer (hybrid search): a
/// gigabyte buys the CPU share (about 0.6 of a vCPU) that keeps that to tens of milliseconds,
/// and holds the model's 90 MB of weights. The model's code (candle's BERT and the tokenizer)
/// brought the binary to 14.74 MB on arm64 (2026-11-28); the start itself did not slow (10.6
/// ms of init without the model against transcript's 10.1, docs/performance.md).
const READS_DOCUMENTS_LAMBDA: Lambda = Lambda {
    memory_mb: 1024,
    max_bytes: 16_000_000,
    ..Lambda::ENDPOINT
};
/// The index's one writer: an original's event finds its document (the organisation's
/// collections, a query; the document's key in each, a batch), queues it and takes it with a
/// lease (transactions that move the storage counter), reads and parses the original, and
/// publishes the organisation's index to the bucket; a removal from the admin function
/// rewrites the index alone. Every quarter of an hour its schedule sweeps: the uploads cut
/// short (GSI2's uploads) queued or deleted (a transaction that deletes the document and
/// releases its bytes), then the documents left queued (GSI2's queue) indexed. Parsing is bounded to a minute; a gigabyte holds a 25 MiB file
/// parsed, its passages and tantivy's writer. It links the parsers besides tantivy and the S3
/// client (13.43 MB on arm64 when it came; 16.31 MB with the embedding model's code,
/// 2026-11-28); it answers no person, so its cold start waits on no one.
pub const INDEXER: Function = Function {
    name: "indexer",
    serves: Serves::Indexer,
    parts: Uses {
        documents: DocumentsUse::Index,
        ..Uses::NOTHING
    },
    secrets: Secrets::NONE,
    table: TableUse {
        operations: &[
            GetItem,
            Query,
            BatchGetItem,
            PutItem,
            UpdateItem,
            DeleteItem,
        ],
        indexes: &[Index::Gsi2],
    },
    starts_runs: false,
    lambda: Lambda {
        memory_mb: 1024,
        timeout_secs: 120,
        max_bytes: 17_500_000,
    },
};
/// SCIM authenticates by the organisation's bearer token: no cookie. Deprovisioning opens a
/// member's OAuth grants to revoke them.
pub const SCIM: Function = Function {
    name: "scim",
    serves: Serves::Scim,
    parts: Uses {
        integrations: Integrations::Grants,
        ..Uses::NOTHING
    },
    secrets: Secrets::SEALING,
    // Groups: a membership's transaction moves the member's version (UpdateItem) and checks
    // the group (ConditionCheckItem); members named are read at once (BatchGetItem); a
    // deleted group's memberships go in batches (BatchWriteItem).
    table: with_gsi1(&[
        GetItem,
        Query,
        PutItem,
        DeleteItem,
        UpdateItem,
        ConditionCheckItem,
        BatchGetItem,
        BatchWriteItem,
    ]),
    starts_runs: false,
    lambda: Lambda::lasting(30),
};
pub const OPENAPI: Function = Function {
    name: "openapi",
    serves: Serves::Document,
    parts: Uses::NOTHING,
    secrets: Secrets::NONE,
    table: TableUse::NONE,
    starts_runs: false,
    lambda: Lambda::ENDPOINT,
};
pub const WEB: Function = Function {
    name: "web",
    serves: Serves::AppFiles,
    ..OPENAPI
};
pub const LOAD_TURN: Function = Function::task("load-turn", Handler::LoadTurn, 30);
/// A call to the model lasts up to two minutes.
pub const CALL_AGENT: Function = Function {
    table: items(&[GetItem, BatchGetItem, Query, PutItem, UpdateItem]),
    ..Function::task("call-agent", Handler::CallAgent, 125)
};
/// A tool call lasts up to a minute.
pub const RUN_TOOL: Function = Function::task("run-tool", Handler::RunTool, 65);
pub const FINISH_TURN: Function = Function::task("finish-turn", Handler::FinishTurn, 30);
pub const TERMINATE: Function = Function::task("terminate", Handler::Terminate, 30);
/// Every minute: the runs whose execution died (their claim's lease ran out, GSI2) get a new
/// execution, or their turn ends as failed after three revivals. Each dead run's session is
/// read and committed (alone, a put; with its failed turn's events, a transaction of puts).
pub const SWEEP: Function = Function {
    name: "sweep",
    serves: Serves::Sweep,
    parts: Uses::NOTHING,
    secrets: Secrets::NONE,
    table: TableUse {
        operations: &[GetItem, Query, PutItem],
        indexes: &[Index::Gsi2],
    },
    starts_runs: true,
    lambda: Lambda::lasting(60),
};

/// Every function, in the order `template.yaml` lists them.
pub const ALL: [Function; 32] = [
    CREATE_SESSION,
    MESSAGE,
    TRANSCRIPT,
    LIST_SESSIONS,
    CANCEL,
    APPROVE,
    DELETE_SESSION,
    TITLES,
    MEMORY,
    USAGE,
    SWITCH_ORG,
    ME,
    LOGOUT,
    SIGNIN_LINK,
    SSO_LOGIN,
    SSO_CALLBACK,
    INTEGRATIONS,
    OAUTH_CALLBACK,
    SCIM,
    OPENAPI,
    WEB,
    ADMIN,
    TEST_INTEGRATION,
    SEARCH,
    DOCUMENTS,
    INDEXER,
    LOAD_TURN,
    CALL_AGENT,
    RUN_TOOL,
    FINISH_TURN,
    TERMINATE,
    SWEEP,
];
