//! `knowledge`: the local service (`serve`) and its admin commands, on one data directory.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Parser, Subcommand};
use knowledge_app::Settings;
use knowledge_core::domain::{IntegrationAuth, OrgStatus, Plan, Role};
use knowledge_core::error::Chain;
use knowledge_core::ids::{OrgId, UserId};
use knowledge_core::integrations::FixedIntegrations;
use knowledge_docs::TantivyDocs;
use knowledge_http::cookie::COOKIE_NAME;
use knowledge_local::admin::{
    Admin, DEFAULT_ORG, OrgChanges, audit_json, integration_json, org_json,
};
use knowledge_local::{LocalService, LocalStore, ServerLimits, SqliteStore, cookie_signer, sealer};
use knowledge_providers::agent_from_env;
use serde_json::json;

/// The sample folder the default run searches, relative to the working directory.
const SAMPLE_DOCS: &str = "docs/guide";

#[derive(Parser)]
#[command(
    name = "knowledge",
    version,
    about = "Conversational knowledge service, local edition"
)]
struct Cli {
    /// Where the embedded store and the signing key live.
    #[arg(
        long,
        global = true,
        env = "KNOWLEDGE_DATA_DIR",
        default_value = "knowledge-data"
    )]
    data_dir: PathBuf,
    /// Print admin results as JSON.
    #[arg(long, global = true)]
    json: bool,
    /// Where sessions, events and organisations live: the embedded SQLite file in the data
    /// directory, or a DynamoDB table.
    #[arg(long, global = true, env = "KNOWLEDGE_STORE", default_value = "sqlite")]
    store: StoreKind,
    /// DynamoDB endpoint, for a stand-in such as moto or DynamoDB Local; default: AWS's own,
    /// from the standard AWS configuration.
    #[cfg(feature = "dynamodb")]
    #[arg(long, global = true, env = "KNOWLEDGE_DYNAMODB_ENDPOINT")]
    dynamodb_endpoint: Option<String>,
    /// DynamoDB table, created (on demand, with its index and TTL) when missing.
    #[cfg(feature = "dynamodb")]
    #[arg(
        long,
        global = true,
        env = "KNOWLEDGE_DYNAMODB_TABLE",
        default_value = "knowledge"
    )]
    dynamodb_table: String,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum StoreKind {
    Sqlite,
    #[cfg(feature = "dynamodb")]
    Dynamodb,
}

impl Cli {
    async fn open_store(&self) -> Result<LocalStore, Box<dyn std::error::Error>> {
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
struct LimitFlags {
    /// Seconds a client has to send a request's headers, counted from when the connection is
    /// ready for a request; also how long an idle keep-alive connection stays open.
    #[arg(long = "header-timeout-secs", env = "KNOWLEDGE_HEADER_TIMEOUT_SECS", default_value = "10", value_name = "SECS", value_parser = seconds)]
    header_timeout: Duration,
    /// Seconds a client has to send a request's whole body, from its headers (408 past it).
    #[arg(long = "body-timeout-secs", env = "KNOWLEDGE_BODY_TIMEOUT_SECS", default_value = "30", value_name = "SECS", value_parser = seconds)]
    body_timeout: Duration,
    /// Seconds a write to a client may make no progress before the connection is closed.
    #[arg(long = "write-timeout-secs", env = "KNOWLEDGE_WRITE_TIMEOUT_SECS", default_value = "30", value_name = "SECS", value_parser = seconds)]
    write_timeout: Duration,
    /// Connections served at once; further ones wait to be accepted.
    #[arg(long, env = "KNOWLEDGE_MAX_CONNECTIONS", default_value_t = 512, value_parser = clap::value_parser!(u64).range(1..=65536))]
    max_connections: u64,
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

/// Whole seconds from 1 to 3600.
fn seconds(text: &str) -> Result<Duration, String> {
    match text.parse::<u64>() {
        Ok(secs @ 1..=3600) => Ok(Duration::from_secs(secs)),
        _ => Err("expected whole seconds from 1 to 3600".into()),
    }
}

#[derive(Subcommand)]
enum Command {
    /// Serve the API (the default command).
    Serve {
        #[arg(long, env = "KNOWLEDGE_ADDR", default_value = "127.0.0.1:3000")]
        addr: String,
        /// The application's origin that POST and DELETE must carry; default `http://<addr>`.
        #[arg(long, env = "KNOWLEDGE_APP_ORIGIN")]
        origin: Option<String>,
        /// A folder of Markdown and text files to connect to the default organisation as its
        /// `docs` search integration; default `docs/guide` when that folder exists.
        #[arg(long, env = "KNOWLEDGE_DOCS")]
        docs: Option<PathBuf>,
        #[command(flatten)]
        limits: LimitFlags,
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
    /// Print an organisation's audit log, newest first, one JSON entry per line.
    Audit {
        #[arg(long)]
        org: OrgId,
        /// Entries to print at most.
        #[arg(long, default_value_t = 100)]
        limit: usize,
    },
    /// Print a `Cookie` header value for a user acting in an organisation.
    Cookie {
        #[arg(long)]
        org: OrgId,
        #[arg(long)]
        user: UserId,
        /// Lifetime in seconds.
        #[arg(long, default_value_t = 12 * 3600)]
        ttl: u64,
    },
}

#[derive(Subcommand)]
enum OrgCommand {
    /// Create an organisation; prints its id.
    Create {
        #[arg(long)]
        name: String,
        #[arg(long, default_value = "pro")]
        plan: Plan,
        /// Choose the id instead of generating one.
        #[arg(long)]
        id: Option<OrgId>,
        /// Mark enterprise SSO as enabled.
        #[arg(long)]
        sso: bool,
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
        /// Whether enterprise SSO is enabled (SCIM needs it).
        #[arg(long)]
        sso: Option<bool>,
    },
    /// Show an organisation and its usage this month.
    Show {
        #[arg(long)]
        org: OrgId,
    },
}

#[derive(Subcommand)]
enum IntegrationCommand {
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
enum AuthKind {
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
enum ScimCommand {
    /// Generate the organisation's SCIM bearer token and print it, once; the previous token
    /// stops working.
    Token {
        #[arg(long)]
        org: OrgId,
    },
}

#[derive(Subcommand)]
enum MemberCommand {
    /// Add a member (or change their role); prints the user id.
    Add {
        #[arg(long)]
        org: OrgId,
        /// Choose the user id instead of generating one.
        #[arg(long)]
        user: Option<UserId>,
        #[arg(long, default_value = "viewer")]
        role: Role,
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
struct Limit(Option<u64>);

fn parse_quota(s: &str) -> Result<Limit, String> {
    if s == "unlimited" {
        return Ok(Limit(None));
    }
    s.parse()
        .map(|n| Limit(Some(n)))
        .map_err(|_| "a whole number or 'unlimited'".into())
}

fn parse_usd(s: &str) -> Result<Limit, String> {
    if s == "unlimited" {
        return Ok(Limit(None));
    }
    match s.parse::<f64>() {
        Ok(usd) if usd.is_finite() && usd >= 0.0 => {
            Ok(Limit(Some((usd * 1_000_000.0).round() as u64)))
        }
        _ => Err("an amount in dollars such as 25.50, or 'unlimited'".into()),
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let cli = Cli::parse();
    match run(cli).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", Chain(&*e));
            ExitCode::FAILURE
        }
    }
}

async fn run(mut cli: Cli) -> Result<(), Box<dyn std::error::Error>> {
    let print = |id: String, full: serde_json::Value| {
        println!("{}", if cli.json { full.to_string() } else { id });
    };
    // With no subcommand, run `serve` exactly as if it had been typed (flags from the environment).
    let command = match cli.command.take() {
        Some(c) => c,
        None => Cli::parse_from(["knowledge", "serve"])
            .command
            .expect("serve parses"),
    };
    // Minting a cookie needs the signing key only, not the store.
    if let Command::Cookie { org, user, ttl } = command {
        let signer = cookie_signer(&cli.data_dir)?;
        let cookie = format!("{COOKIE_NAME}={}", signer.mint(&user, &org, ttl)?);
        print(
            cookie.clone(),
            json!({ "cookie": cookie, "ttlSeconds": ttl }),
        );
        return Ok(());
    }
    let store = cli.open_store().await?;
    let admin = Admin { store: &*store };
    match command {
        Command::Serve {
            addr,
            origin,
            docs,
            limits,
        } => {
            let limits = limits.into();
            serve(&cli.data_dir, store.clone(), &addr, origin, docs, limits).await?
        }
        Command::Org(OrgCommand::Create {
            name,
            plan,
            id,
            sso,
        }) => {
            let org = admin.create_org(id, &name, plan, sso).await?;
            print(org.id.to_string(), org_json(&org, None));
        }
        Command::Org(OrgCommand::Set {
            org,
            query_quota,
            cost_cap_usd,
            plan,
            status,
            sso,
        }) => {
            let org = admin
                .update_org(
                    &org,
                    OrgChanges {
                        quota: query_quota.map(|l| l.0),
                        cap_micros: cost_cap_usd.map(|l| l.0),
                        plan,
                        status,
                        sso,
                    },
                )
                .await?;
            print(org.id.to_string(), org_json(&org, None));
        }
        Command::Org(OrgCommand::Show { org }) => {
            let org = admin.org(&org).await?;
            let usage = admin.usage(&org.id).await?;
            println!("{}", org_json(&org, Some(usage)));
        }
        Command::Member(MemberCommand::Add { org, user, role }) => {
            let m = admin.add_member(&org, user, role).await?;
            print(
                m.user.to_string(),
                json!({ "orgId": m.org.to_string(), "userId": m.user.to_string(), "role": m.role.as_str() }),
            );
        }
        Command::Member(MemberCommand::Remove { org, user }) => {
            let cancelled = admin.remove_member(&org, &user).await?;
            print(
                user.to_string(),
                json!({ "orgId": org.to_string(), "userId": user.to_string(), "removed": true,
                        "cancelledTurns": cancelled }),
            );
        }
        Command::Scim(ScimCommand::Token { org }) => {
            let token = admin.generate_scim_token(&org).await?;
            print(
                token.clone(),
                json!({ "orgId": org.to_string(), "token": token }),
            );
        }
        Command::Integration(IntegrationCommand::Add {
            org,
            name,
            url,
            auth,
        }) => {
            let i = admin
                .connect_integration(&org, &name, &url, auth.into())
                .await?;
            print(i.name.clone(), integration_json(&i));
        }
        Command::Integration(IntegrationCommand::Remove { org, name }) => {
            admin.disconnect_integration(&org, &name).await?;
            print(name.clone(), json!({ "name": name, "removed": true }));
        }
        Command::Integration(IntegrationCommand::List { org }) => {
            for i in admin.integrations(&org).await? {
                println!("{}", integration_json(&i));
            }
        }
        Command::Integration(IntegrationCommand::Credential { org, user, name }) => {
            // Against a shared table the token must be sealed with the deployment's key; a
            // key file made up here would seal it so that the service cannot open it.
            if !matches!(cli.store, StoreKind::Sqlite)
                && std::env::var_os(knowledge_local::SEALING_KEY_ENV).is_none()
            {
                return Err(format!(
                    "set {} to the deployment's sealing key (the secret SealingKeySecretArn \
                     holds) to store a credential in DynamoDB",
                    knowledge_local::SEALING_KEY_ENV
                )
                .into());
            }
            let mut token = String::new();
            std::io::stdin().read_line(&mut token)?;
            let token = token.trim_end_matches(['\n', '\r']);
            admin
                .set_credential(&org, &user, &name, token, &sealer(&cli.data_dir)?)
                .await?;
            print(
                name.clone(),
                json!({ "orgId": org.to_string(), "userId": user.to_string(), "name": name, "stored": true }),
            );
        }
        Command::Audit { org, limit } => {
            for entry in admin.audit_log(&org, limit).await? {
                println!("{}", audit_json(&entry));
            }
        }
        Command::Cookie { .. } => unreachable!("handled before the store is opened"),
    }
    Ok(())
}

async fn serve(
    data_dir: &std::path::Path, store: LocalStore, addr: &str, origin: Option<String>,
    docs: Option<PathBuf>, limits: ServerLimits,
) -> Result<(), Box<dyn std::error::Error>> {
    let created = Admin { store: &*store }.bootstrap().await?;
    let kind = store.kind();
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    let origin = origin.unwrap_or_else(|| format!("http://{bound}"));
    let docs = match docs {
        Some(dir) => Some(dir),
        None => Some(PathBuf::from(SAMPLE_DOCS)).filter(|d| d.is_dir()),
    };
    let mut integrations = FixedIntegrations::new();
    let mut connected = None;
    if let Some(dir) = &docs {
        let index = TantivyDocs::open(dir)?;
        connected = Some(format!(
            "docs: {} passages from {} files in {} (organisation {DEFAULT_ORG})",
            index.passages(),
            index.files(),
            dir.display()
        ));
        integrations = integrations.connect(OrgId::parse(DEFAULT_ORG)?, Arc::new(index));
    }
    let agent = agent_from_env(|name| std::env::var(name).ok())?;
    let settings = Settings {
        cookie_signer: Some(Arc::new(cookie_signer(data_dir)?)),
        sealer: Some(Arc::new(sealer(data_dir)?)),
        agent: Some(agent.agent),
        fixed_integrations: Arc::new(integrations),
        ..Settings::new(&origin)
    };
    let service = LocalService::new(settings, store)?;
    // A store that fails here fails the first requests too; the deletes are finished at the
    // next start or by the client's retry, so the service starts anyway.
    let finished = service.finish_deletes().await.unwrap_or_else(|e| {
        tracing::error!(error = %Chain(&e), "could not finish the deletes cut short by the previous process");
        0
    });
    let resumed = service.resume_runs().await?;
    // The listening line comes last: scripts may read up to it and know the rest is printed.
    if finished > 0 {
        println!("finished {finished} delete(s) cut short by the previous process");
    }
    if resumed > 0 {
        println!("resumed {resumed} run(s) left in flight by the previous process");
    }
    println!("agent: {}", agent.description);
    match connected {
        Some(line) => println!("{line}"),
        None => println!("no docs folder connected; serve --docs DIR connects one"),
    }
    if let Some((org, user)) = created {
        println!(
            "created organisation {org} with admin {user}; get a cookie with:\n  \
             knowledge --data-dir {} cookie --org {org} --user {user}",
            data_dir.display()
        );
    }
    println!(
        "knowledge service listening on http://{bound} (origin {origin}, store {kind}, key in {})",
        data_dir.display()
    );
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    service.serve(listener, limits, shutdown).await;
    // Give turns in flight a moment to finish; any still running are resumed at the next start.
    let _ = tokio::time::timeout(std::time::Duration::from_secs(3), service.workflow.idle()).await;
    Ok(())
}
