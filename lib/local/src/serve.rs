//! The `serve` command: the local service assembled from its flags, its start-up work (deletes
//! and runs a previous process left, stale indexes, the docs folder), the lines it prints, and
//! the server until Ctrl-C.

use std::path::PathBuf;
use std::sync::Arc;

use knowledge_assembly::Settings;
use knowledge_assembly::operator::{DEFAULT_ORG, DEFAULT_USER, Operator};
use knowledge_core::adapters::integrations::FixedIntegrations;
use knowledge_core::clock::{OffsetClock, SystemClock};
use knowledge_core::documents::DocumentLimits;
use knowledge_core::error::Chain;
use knowledge_core::fault;
use knowledge_core::ids::{OrgId, UserId};
use knowledge_egress::Egress;
use knowledge_http::cookie::Lifetime;
use knowledge_ingest::{Bounds, Isolated};
use knowledge_local::documents::{Folder, Stale};
use knowledge_local::metrics::MetricsToken;
use knowledge_local::{LocalService, LocalStore, ServerLimits, cookie_signer, sealer};
use knowledge_oauth::{BoundedHttp, HttpAuthorizationServers};
use knowledge_oidc::OpenIdConnect;
use knowledge_providers::agent_from_env;
use knowledge_web::Files;

use crate::{SAMPLE_DOCS, sign_in_link};

/// What `serve` was asked for on its command line.
pub(crate) struct ServeOptions {
    pub(crate) addr: String,
    pub(crate) origin: Option<String>,
    pub(crate) limits: ServerLimits,
    pub(crate) docs: Option<PathBuf>,
    pub(crate) lifetime: Lifetime,
    /// How long a call that asks its member waits.
    pub(crate) approval_wait: std::time::Duration,
    pub(crate) app_files: Files,
    pub(crate) egress: Egress,
    pub(crate) sweep_every: std::time::Duration,
    pub(crate) documents: DocumentLimits,
    /// The model of hybrid search; `None` searches by words alone.
    pub(crate) embedder: Option<Arc<dyn knowledge_search::Embedder>>,
    /// Bytes of address space a parser child may use.
    pub(crate) parse_memory: u64,
    /// The token of the metrics' endpoint; `None` serves none.
    pub(crate) metrics: Option<MetricsToken>,
}

pub(crate) async fn serve(
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
        metrics,
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
    let mut service = LocalService::new(settings, store, &instance)?
        .sweeping_every(sweep_every)
        .parsing_with(Arc::new(parser));
    if let Some(token) = metrics {
        service = service.serving_also(knowledge_local::metrics::install(token)?);
        knowledge_core::telemetry::cold_start();
        println!(
            "metrics: served at {} to bearers of the metrics token",
            knowledge_local::metrics::PATH
        );
    }
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
