//! The `knowledge` binary's command line: the global options, the commands and their flags.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, Subcommand};
use knowledge_core::documents::DocumentLimits;
use knowledge_core::domain::{COST_CAP_MAX_USD, IntegrationAuth, OrgStatus, Plan, QUOTA_MAX, Role};
use knowledge_core::ids::{OrgId, UserId};
use knowledge_http::cookie::Lifetime;
use knowledge_local::{LocalStore, ServerLimits, SqliteStore};

#[derive(Parser)]
#[command(
    name = "knowledge",
    version,
    about = "Conversational knowledge service, local edition"
)]
pub(crate) struct Cli {
    /// Where the embedded store and the signing key live.
    #[arg(long, global = true, default_value = "knowledge-data")]
    #[arg(env = "KNOWLEDGE_DATA_DIR")]
    pub(crate) data_dir: PathBuf,
    /// Print admin results as JSON.
    #[arg(long, global = true)]
    pub(crate) json: bool,
    /// Where sessions, events and organisations live: the embedded SQLite file in the data
    /// directory, or a DynamoDB table.
    #[arg(long, global = true, env = "KNOWLEDGE_STORE", default_value = "sqlite")]
    pub(crate) store: StoreKind,
    /// DynamoDB endpoint, for a stand-in such as moto or DynamoDB Local; default: AWS's own,
    /// from the standard AWS configuration.
    #[cfg(feature = "dynamodb")]
    #[arg(long, global = true, env = "KNOWLEDGE_DYNAMODB_ENDPOINT")]
    pub(crate) dynamodb_endpoint: Option<String>,
    /// DynamoDB table, created (on demand, with its index and TTL) when missing.
    #[cfg(feature = "dynamodb")]
    #[arg(long, global = true, default_value = "knowledge")]
    #[arg(env = "KNOWLEDGE_DYNAMODB_TABLE")]
    pub(crate) dynamodb_table: String,
    #[command(subcommand)]
    pub(crate) command: Option<Command>,
}

#[derive(Clone, Copy, clap::ValueEnum)]
pub(crate) enum StoreKind {
    Sqlite,
    #[cfg(feature = "dynamodb")]
    Dynamodb,
}

impl Cli {
    pub(crate) async fn open_store(&self) -> Result<LocalStore, Box<dyn std::error::Error>> {
        Ok(match self.store {
            StoreKind::Sqlite => LocalStore::Sqlite(SqliteStore::open(&self.data_dir)?),
            #[cfg(feature = "dynamodb")]
            StoreKind::Dynamodb => {
                let client = knowledge_dynamo::connect(
                    self.dynamodb_endpoint.as_deref(),
                    Default::default(),
                )
                .await;
                knowledge_dynamo::create_table_if_missing(&client, &self.dynamodb_table).await?;
                LocalStore::Dynamo(knowledge_dynamo::DynamoStore::new(
                    client,
                    &self.dynamodb_table,
                ))
            }
        })
    }
}

/// The server's bounds on slow and hostile clients (see `knowledge_local::server`).
#[derive(clap::Args)]
pub(crate) struct LimitFlags {
    /// Seconds a client has to send a request's headers, counted from when the connection is
    /// ready for a request; also how long an idle keep-alive connection stays open.
    #[arg(long = "header-timeout-secs", env = "KNOWLEDGE_HEADER_TIMEOUT_SECS", default_value = "10", value_name = "SECS", value_parser = seconds)]
    pub(crate) header_timeout: Duration,
    /// Seconds a client has to send a request's whole body, from its headers (408 past it).
    #[arg(long = "body-timeout-secs", env = "KNOWLEDGE_BODY_TIMEOUT_SECS", default_value = "30", value_name = "SECS", value_parser = seconds)]
    pub(crate) body_timeout: Duration,
    /// Seconds a write to a client may make no progress before the connection is closed.
    #[arg(long = "write-timeout-secs", env = "KNOWLEDGE_WRITE_TIMEOUT_SECS", default_value = "30", value_name = "SECS", value_parser = seconds)]
    pub(crate) write_timeout: Duration,
    /// Connections served at once; further ones wait to be accepted.
    #[arg(long, env = "KNOWLEDGE_MAX_CONNECTIONS", default_value_t = 512, value_parser = clap::value_parser!(u64).range(1..=65536))]
    pub(crate) max_connections: u64,
}

impl From<LimitFlags> for ServerLimits {
    fn from(f: LimitFlags) -> Self {
        Self {
            header_timeout: f.header_timeout,
            body_timeout: f.body_timeout,
            write_timeout: f.write_timeout,
            max_connections: f.max_connections as usize,
        }
    }
}

/// The bounds on the organisations' documents (see docs/documents.md).
#[derive(clap::Args)]
pub(crate) struct DocumentFlags {
    /// MiB of one uploaded file at most.
    #[arg(long = "max-file-mib", env = "KNOWLEDGE_MAX_FILE_MIB", default_value_t = 25, value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub(crate) max_file_mib: u64,
    /// MiB of originals an organisation on the free plan may store.
    #[arg(
        long = "storage-free-mib",
        env = "KNOWLEDGE_STORAGE_FREE_MIB",
        default_value_t = 100
    )]
    pub(crate) free_mib: u64,
    /// MiB of originals an organisation on the pro plan may store.
    #[arg(long = "storage-pro-mib", env = "KNOWLEDGE_STORAGE_PRO_MIB", default_value_t = 10 << 10)]
    pub(crate) pro_mib: u64,
    /// MiB of originals an organisation on the business plan may store.
    #[arg(long = "storage-business-mib", env = "KNOWLEDGE_STORAGE_BUSINESS_MIB", default_value_t = 100 << 10)]
    pub(crate) business_mib: u64,
    /// MiB of address space the process that reads one file may use (64 to 65,536): a file
    /// that needs more ends `failed`.
    #[arg(long = "parse-memory-mib", env = "KNOWLEDGE_PARSE_MEMORY_MIB", default_value_t = 1024, value_parser = clap::value_parser!(u64).range(64..=65_536))]
    pub(crate) parse_memory_mib: u64,
}

impl From<DocumentFlags> for DocumentLimits {
    fn from(f: DocumentFlags) -> Self {
        let bytes = |mib: u64| mib.saturating_mul(1 << 20);
        Self {
            max_file_bytes: bytes(f.max_file_mib),
            free_bytes: bytes(f.free_mib),
            pro_bytes: bytes(f.pro_mib),
            business_bytes: bytes(f.business_mib),
        }
    }
}

/// How long a sign-in lasts (see docs/auth.md).
#[derive(clap::Args)]
pub(crate) struct SessionFlags {
    /// Hours a session cookie lasts without a request (1 to 168).
    #[arg(long, env = "KNOWLEDGE_SESSION_IDLE_HOURS", default_value_t = 12)]
    pub(crate) session_idle_hours: u64,
    /// Days a sign-in lasts at most, however active (1 to 90).
    #[arg(long, env = "KNOWLEDGE_SESSION_MAX_DAYS", default_value_t = 7)]
    pub(crate) session_max_days: u64,
    /// Hours a tool call that asks its member waits for an answer before it expires (1 to 168).
    #[arg(long, env = "KNOWLEDGE_APPROVAL_HOURS", default_value_t = 24, value_parser = clap::value_parser!(u32).range(1..=168))]
    pub(crate) approval_hours: u32,
}

impl SessionFlags {
    /// Errors: a bound passed, named.
    pub(crate) fn lifetime(&self) -> Result<Lifetime, String> {
        Lifetime::from_hours_and_days(self.session_idle_hours, self.session_max_days)
    }
}

/// Whole seconds from 1 to 3600.
pub(crate) fn seconds(text: &str) -> Result<Duration, String> {
    match text.parse::<u64>() {
        Ok(secs @ 1..=3600) => Ok(Duration::from_secs(secs)),
        _ => Err("expected whole seconds from 1 to 3600".into()),
    }
}

#[derive(Subcommand)]
pub(crate) enum Command {
    /// Serve the API (the default command).
    Serve {
        #[arg(long, env = "KNOWLEDGE_ADDR", default_value = "127.0.0.1:3000")]
        addr: String,
        /// The application's origin that POST and DELETE must carry; default `http://<addr>`.
        #[arg(long, env = "KNOWLEDGE_APP_ORIGIN")]
        origin: Option<String>,
        /// A folder of documents (Markdown, text, HTML, PDF, DOCX) kept in step with a
        /// collection of the default organisation, named after the folder, open to every
        /// member: read at start and every minute; default `docs/guide` when that folder
        /// exists.
        #[arg(long, env = "KNOWLEDGE_DOCS")]
        docs: Option<PathBuf>,
        /// Serve the browser app from this folder (laid out as app/dist) instead of the copy
        /// built into the binary: for working on the app while `npm run build` rewrites it.
        #[arg(long, env = "KNOWLEDGE_APP_DIR")]
        app_dir: Option<PathBuf>,
        /// Whether requests to addresses admins name (identity providers, MCP servers) may go
        /// to loopback, private and link-local addresses: `true` here, where people run such
        /// servers on their own machine; `false` refuses them as the AWS deployment does.
        #[arg(long, env = "KNOWLEDGE_ALLOW_PRIVATE_DESTINATIONS", default_value_t = true, action = clap::ArgAction::Set)]
        allow_private_destinations: bool,
        /// How often to look for runs whose execution died (a process killed mid-turn) and
        /// revive them; they are found within the lease (180 s) plus this.
        #[arg(long = "sweep-every-secs", env = "KNOWLEDGE_SWEEP_EVERY_SECS", default_value = "60", value_name = "SECS", value_parser = seconds)]
        sweep_every: Duration,
        #[command(flatten)]
        limits: LimitFlags,
        #[command(flatten)]
        session: SessionFlags,
        #[command(flatten)]
        documents: DocumentFlags,
    },
    /// Organisations.
    #[command(subcommand)]
    Org(OrgCommand),
    /// Members of organisations.
    #[command(subcommand)]
    Member(MemberCommand),
    /// SCIM provisioning.
    #[command(subcommand)]
    Scim(ScimCommand),
    /// Remote MCP servers connected to organisations.
    #[command(subcommand)]
    Integration(IntegrationCommand),
    /// Single sign-on through an organisation's OpenID provider (Entra ID, Okta, ...).
    #[command(subcommand)]
    Sso(SsoCommand),
    /// The organisations' documents.
    #[command(subcommand)]
    Documents(DocumentsCommand),
    /// Print an organisation's audit log, newest first, one JSON entry per line.
    Audit {
        #[arg(long)]
        org: OrgId,
        /// Entries to print at most.
        #[arg(long, default_value_t = 100)]
        limit: usize,
    },
    /// Print a single-use link that signs a member in, in the browser, within ten minutes.
    SigninLink {
        #[arg(long)]
        org: OrgId,
        #[arg(long)]
        user: UserId,
        #[command(flatten)]
        origin: OriginFlag,
    },
    /// Print a `Cookie` header value for a user acting in an organisation (named
    /// `__Host-ks_session` when the origin is https, as the deployed service expects).
    Cookie {
        #[arg(long)]
        org: OrgId,
        #[arg(long)]
        user: UserId,
        /// Lifetime in seconds.
        #[arg(long, default_value_t = 12 * 3600)]
        ttl: u64,
        #[command(flatten)]
        origin: OriginFlag,
    },
}

#[derive(Subcommand)]
pub(crate) enum OrgCommand {
    /// Create an organisation; prints its id.
    Create {
        #[arg(long)]
        name: String,
        #[arg(long, default_value = "pro")]
        plan: Plan,
        /// Choose the id instead of generating one.
        #[arg(long)]
        id: Option<OrgId>,
    },
    /// Change an organisation's limits, plan or status; prints it.
    Set {
        #[arg(long)]
        org: OrgId,
        /// Queries per calendar month, or `unlimited`.
        #[arg(long, value_parser = parse_quota)]
        query_quota: Option<Limit>,
        /// Spend cap per calendar month in US dollars, or `unlimited`.
        #[arg(long, value_parser = parse_usd)]
        cost_cap_usd: Option<Limit>,
        #[arg(long)]
        plan: Option<Plan>,
        #[arg(long)]
        status: Option<OrgStatus>,
    },
    /// Show an organisation and its usage this month.
    Show {
        #[arg(long)]
        org: OrgId,
    },
}

#[derive(Subcommand)]
pub(crate) enum IntegrationCommand {
    /// Connect an MCP server (streamable HTTP) to an organisation, or change the one of that
    /// name; its tools are offered to the agent from the next step on.
    Add {
        #[arg(long)]
        org: OrgId,
        /// Short name (a-z, 0-9, -); it prefixes the server's tool names.
        #[arg(long)]
        name: String,
        /// The server's MCP endpoint, such as https://mcp.example.com/mcp.
        #[arg(long)]
        url: String,
        /// `none`, or `per-user`: each member's own bearer token, set with `integration
        /// credential`; members without one do not reach the server.
        #[arg(long, default_value = "none")]
        auth: AuthKind,
    },
    /// Disconnect an integration.
    Remove {
        #[arg(long)]
        org: OrgId,
        #[arg(long)]
        name: String,
    },
    /// List an organisation's integrations, one JSON object per line.
    List {
        #[arg(long)]
        org: OrgId,
    },
    /// Store a member's bearer token for a per-user integration, read from standard input (so
    /// it stays out of the shell history); stored sealed, removed when the member is.
    Credential {
        #[arg(long)]
        org: OrgId,
        #[arg(long)]
        user: UserId,
        #[arg(long)]
        name: String,
    },
}

#[derive(Clone, Copy, clap::ValueEnum)]
pub(crate) enum AuthKind {
    None,
    PerUser,
}

impl From<AuthKind> for IntegrationAuth {
    fn from(a: AuthKind) -> Self {
        match a {
            AuthKind::None => Self::None,
            AuthKind::PerUser => Self::PerUser,
        }
    }
}

#[derive(Subcommand)]
pub(crate) enum SsoCommand {
    /// Configure the organisation's single sign-on, replacing what was set, and switch it on.
    /// The client secret is read from standard input (so it stays out of the shell history);
    /// an empty line keeps the stored one. Prints the configuration, never the secret.
    Set {
        #[arg(long)]
        org: OrgId,
        /// The provider's issuer, such as https://login.microsoftonline.com/<tenant>/v2.0.
        #[arg(long)]
        issuer: String,
        #[arg(long)]
        client_id: String,
        /// The ID-token claim holding the member's userName: `email` (the default),
        /// `preferred_username` or `upn` (Entra ID), ...
        #[arg(long)]
        user_name_claim: Option<String>,
        /// An e-mail domain whose people sign in here; repeat for several.
        #[arg(long = "domain")]
        domains: Vec<String>,
        /// Make a person the provider vouches for a viewer at their first sign-in, instead of
        /// refusing whoever SCIM or an admin has not provisioned.
        #[arg(long)]
        just_in_time: bool,
        /// Store the configuration switched off.
        #[arg(long)]
        disabled: bool,
        #[command(flatten)]
        origin: OriginFlag,
    },
    /// Show the organisation's single sign-on and the callback URL to register at the provider.
    Show {
        #[arg(long)]
        org: OrgId,
        #[command(flatten)]
        origin: OriginFlag,
    },
    /// Switch the stored configuration on.
    Enable {
        #[arg(long)]
        org: OrgId,
        #[command(flatten)]
        origin: OriginFlag,
    },
    /// Switch single sign-on off: nobody signs in through it, and SCIM stops, until enabled.
    Disable {
        #[arg(long)]
        org: OrgId,
        #[command(flatten)]
        origin: OriginFlag,
    },
}

/// The application's origin, which links, cookie names and callback URLs are on.
#[derive(clap::Args)]
pub(crate) struct OriginFlag {
    /// Default: the origin `serve` last served this data directory on, else
    /// http://127.0.0.1:3000.
    #[arg(long, env = "KNOWLEDGE_APP_ORIGIN")]
    origin: Option<String>,
}

impl OriginFlag {
    /// The origin given, else the one `serve` recorded in `data_dir`, else the default
    /// address's.
    pub(crate) fn resolve(&self, data_dir: &std::path::Path) -> String {
        self.origin
            .clone()
            .or_else(|| knowledge_local::served_origin(data_dir))
            .unwrap_or_else(|| "http://127.0.0.1:3000".into())
    }
}

#[derive(Subcommand)]
pub(crate) enum DocumentsCommand {
    /// Queue every indexed or failed document of the organisation again, so that the running
    /// service (or the next `serve`) rebuilds its passages from the originals. To rebuild a
    /// damaged index: stop the service, delete `<data-dir>/index`, run this, start it.
    Reindex {
        #[arg(long)]
        org: OrgId,
    },
}

#[derive(Subcommand)]
pub(crate) enum ScimCommand {
    /// Generate the organisation's SCIM bearer token and print it, once; the previous token
    /// stops working.
    Token {
        #[arg(long)]
        org: OrgId,
    },
}

#[derive(Subcommand)]
pub(crate) enum MemberCommand {
    /// Add a member (or change their role); prints the user id.
    Add {
        #[arg(long)]
        org: OrgId,
        /// Choose the user id instead of generating one.
        #[arg(long)]
        user: Option<UserId>,
        #[arg(long, default_value = "viewer")]
        role: Role,
        /// The member's userName (their e-mail, usually): what single sign-on matches the
        /// provider's claim against.
        #[arg(long)]
        user_name: Option<String>,
    },
    /// Remove a member; their cookies stop working at once and their running turns are
    /// cancelled.
    Remove {
        #[arg(long)]
        org: OrgId,
        #[arg(long)]
        user: UserId,
    },
}

/// A limit: a number, or unlimited (`None`).
#[derive(Clone, Copy)]
pub(crate) struct Limit(pub(crate) Option<u64>);

pub(crate) fn parse_quota(s: &str) -> Result<Limit, String> {
    if s == "unlimited" {
        return Ok(Limit(None));
    }
    match s.parse::<u64>() {
        Ok(n) if n <= QUOTA_MAX => Ok(Limit(Some(n))),
        _ => Err(format!("a whole number up to {QUOTA_MAX}, or 'unlimited'")),
    }
}

pub(crate) fn parse_usd(s: &str) -> Result<Limit, String> {
    if s == "unlimited" {
        return Ok(Limit(None));
    }
    match s.parse::<f64>() {
        Ok(usd) if usd.is_finite() && (0.0..=COST_CAP_MAX_USD).contains(&usd) => {
            Ok(Limit(Some((usd * 1_000_000.0).round() as u64)))
        }
        _ => Err(format!(
            "an amount in dollars such as 25.50, up to {COST_CAP_MAX_USD}, or 'unlimited'"
        )),
    }
}
