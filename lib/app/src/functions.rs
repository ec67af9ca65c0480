//! The service's functions, one row each: its name, what it serves, the optional parts it
//! builds and the secrets it reads. On AWS each row is a Lambda function
//! (`functions/src/bin/<name>.rs`, `<Name>Function` in `template.yaml`, `events/<name>.json`),
//! and everything about it derives from its row: its router, the parts its binary links, the
//! secrets its cold start reads, the checks of those names. The local service serves every
//! row's routes in one process, and the OpenAPI document describes them.
//!
//! A row is a constant, and a function's `main` names only its own (`knowledge_aws::main!`):
//! nothing in its binary names another row's routes or parts, so the linker leaves them out.
//! [`ALL`] names every row, for the local service, the document and the tests.

use knowledge_core::steps::Handler;
use knowledge_http::{Routes, endpoints};

/// One function of the service.
#[derive(Clone, Copy)]
pub struct Function {
    /// Its name in `functions/src/bin/`, in `template.yaml` (in PascalCase, followed by
    /// `Function`) and in `events/`.
    pub name: &'static str,
    pub serves: Serves,
    pub parts: Uses,
    pub secrets: Secrets,
    /// The most bytes its arm64 binary may hold, as `cargo lambda build --release --arm64`
    /// builds it (`CargoLambda.toml`): a function's size is its cold start's first cost.
    /// Checked by `scripts/binary_sizes.sh`.
    pub max_bytes: u32,
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
}

/// The optional parts a function builds beyond the store, the workflow and its keys.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Uses {
    /// The agent's provider: creating a session checks its health; `CallAgent` asks it.
    pub agent: bool,
    pub identity: Identity,
    pub integrations: Integrations,
}

impl Uses {
    /// None of them.
    pub const NOTHING: Self = Self {
        agent: false,
        identity: Identity::None,
        integrations: Integrations::None,
    };
}

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

impl Function {
    /// The size every function stays under unless its row says otherwise: 10 MB, which keeps
    /// a cold start short (docs/performance.md).
    pub const MAX_BYTES: u32 = 10_000_000;

    /// An endpoint that reads and mints session cookies and builds no optional part.
    const fn routes(name: &'static str, routes: Routes) -> Self {
        Self {
            name,
            serves: Serves::Routes(routes),
            parts: Uses::NOTHING,
            secrets: Secrets::COOKIE,
            max_bytes: Self::MAX_BYTES,
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
    ..Function::routes("create-session", endpoints::CREATE_SESSION)
};
pub const MESSAGE: Function = Function::routes("message", endpoints::MESSAGE);
pub const TRANSCRIPT: Function = Function::routes("transcript", endpoints::TRANSCRIPT);
pub const LIST_SESSIONS: Function = Function::routes("list-sessions", endpoints::LIST_SESSIONS);
pub const CANCEL: Function = Function::routes("cancel", endpoints::CANCEL);
/// Renaming a session and finding sessions by title, beside the interface's endpoints.
pub const TITLES: Function = Function::routes("titles", endpoints::TITLES);
/// A member's own memory: what the agent keeps, forgetting, the switch, the export.
pub const MEMORY: Function = Function::routes("memory", endpoints::MEMORY);
/// A member's own usage, by day and by model, against their allowance.
pub const USAGE: Function = Function::routes("usage", endpoints::USAGE);
pub const DELETE_SESSION: Function = Function::routes("delete-session", endpoints::DELETE_SESSION);
pub const SWITCH_ORG: Function = Function::routes("switch-org", endpoints::SWITCH_ORG);
pub const ME: Function = Function::routes("me", endpoints::ME);
pub const LOGOUT: Function = Function::routes("logout", endpoints::LOGOUT);
pub const SIGNIN_LINK: Function = Function::routes("signin-link", endpoints::SIGN_IN_LINK);
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
    ..Function::routes("sso-login", endpoints::SSO_LOGIN)
};
pub const SSO_CALLBACK: Function = Function {
    name: "sso-callback",
    serves: Serves::Routes(endpoints::SSO_CALLBACK),
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
    ..Function::routes("integrations", endpoints::CONNECTIONS)
};
/// Authorization servers send the browser back here; the code is exchanged and the grant
/// sealed.
pub const OAUTH_CALLBACK: Function = Function {
    name: "oauth-callback",
    serves: Serves::Routes(endpoints::OAUTH_CALLBACK),
    ..INTEGRATIONS
};
/// The admin function seals identity providers' secrets and integration credentials, tests a
/// provider's discovery, and revokes a removed member's grants.
pub const ADMIN: Function = Function {
    parts: Uses {
        identity: Identity::Discovery,
        integrations: Integrations::Grants,
        agent: false,
    },
    secrets: Secrets {
        sealing_key: true,
        ..Secrets::COOKIE
    },
    ..Function::routes("admin", endpoints::ADMIN)
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
    ..Function::routes("test-integration", endpoints::ADMIN_TEST_INTEGRATION)
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
    max_bytes: Function::MAX_BYTES,
};
pub const OPENAPI: Function = Function {
    name: "openapi",
    serves: Serves::Document,
    parts: Uses::NOTHING,
    secrets: Secrets::NONE,
    max_bytes: Function::MAX_BYTES,
};
pub const WEB: Function = Function {
    name: "web",
    serves: Serves::AppFiles,
    parts: Uses::NOTHING,
    secrets: Secrets::NONE,
    max_bytes: Function::MAX_BYTES,
};
pub const LOAD_TURN: Function = Function::task("load-turn", Handler::LoadTurn);
pub const CALL_AGENT: Function = Function::task("call-agent", Handler::CallAgent);
pub const RUN_TOOL: Function = Function::task("run-tool", Handler::RunTool);
pub const FINISH_TURN: Function = Function::task("finish-turn", Handler::FinishTurn);
pub const TERMINATE: Function = Function::task("terminate", Handler::Terminate);
pub const SWEEP: Function = Function {
    name: "sweep",
    serves: Serves::Sweep,
    parts: Uses::NOTHING,
    secrets: Secrets::NONE,
    max_bytes: Function::MAX_BYTES,
};

impl Function {
    /// The function of a workflow Task: `CallAgent` asks the agent, `CallAgent` lists the
    /// integrations' tools and `RunTool` calls them (their credentials sealed).
    const fn task(name: &'static str, handler: Handler) -> Self {
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
            },
            secrets: Secrets {
                cookie_key: false,
                sealing_key: integrations,
                provider_key: handler.asks_agent(),
            },
            max_bytes: Self::MAX_BYTES,
        }
    }
}

/// Every function, as `template.yaml` lists them.
pub const ALL: [Function; 28] = [
    CREATE_SESSION,
    MESSAGE,
    TRANSCRIPT,
    LIST_SESSIONS,
    CANCEL,
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
    LOAD_TURN,
    CALL_AGENT,
    RUN_TOOL,
    FINISH_TURN,
    TERMINATE,
    SWEEP,
];

/// The routes of every function that serves session, `/api/auth` or admin routes.
pub fn session_routes() -> Vec<Routes> {
    ALL.iter().filter_map(|f| f.session_routes()).collect()
}

/// The OpenAPI document of every route the service serves, as served and committed
/// (`docs/openapi.json`).
pub fn document_json() -> String {
    knowledge_http::openapi::to_json(&knowledge_http::document(&session_routes()))
}
