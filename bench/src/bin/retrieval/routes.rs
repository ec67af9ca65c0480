//! The path a member and the agent take: the local service over SQLite in a data directory, its
//! index on disk (with the embedding model when one is given), the abstracts uploaded through
//! the core's `Documents::upload` into a collection open to everyone and indexed by the
//! service's own workers; then each claim sent to `GET /api/search` over loopback HTTP with a
//! member's cookie, and to the agent's `search_documents` tool as the agent calls it.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use knowledge_assembly::operator::{DEFAULT_ORG, DEFAULT_USER, Operator};
use knowledge_core::adapters::agent::BuiltinAgent;
use knowledge_core::adapters::integrations::FixedIntegrations;
use knowledge_core::admin::Admin;
use knowledge_core::documents::{
    DocumentLimits, IndexOutcome, NewCollection, SEARCH_TOOL, SEARCH_TOOL_DEFAULT_LIMIT, Upload,
    WithDocuments,
};
use knowledge_core::domain::Access;
use knowledge_core::ids::{CollectionId, OrgId, UserId};
use knowledge_core::ports::Integrations;
use knowledge_embed::{SentenceModel, fetch};
use knowledge_http::cookie::{COOKIE_NAME, CookieSigner};
use knowledge_local::{LocalService, LocalStore, SqliteStore};
use knowledge_search::Embedder;
use serde_json::{Value, json};

use crate::{Benchmark, Scores, bare};

/// Workers indexing at once: the local service's default.
const WORKERS: usize = knowledge_local::documents::WORKERS;
/// Passages a member's search asks for: the route's most.
const ROUTE_LIMIT: usize = 50;

/// The organisation as a previous run left it in `--data`.
fn recorded(path: &std::path::Path, model: &str) -> Option<CollectionId> {
    let record: Value = serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()?;
    if record["model"] != model {
        return None;
    }
    CollectionId::parse(record["collection"].as_str()?).ok()
}

pub async fn run(bench: &Benchmark, models: Option<PathBuf>, data: Option<PathBuf>) {
    let embedder: Option<Arc<dyn Embedder>> = models.map(|models| {
        let folder = fetch::ensure(&models, "python3").expect("the model");
        let model = SentenceModel::load(&folder).expect("the model loads");
        Arc::new(model) as Arc<dyn Embedder>
    });
    let model = embedder
        .as_ref()
        .map_or("none".to_owned(), |e| e.model().to_owned());
    println!("{:<44} {model}", "model");
    let temporary = tempfile::tempdir().unwrap();
    let dir = data.unwrap_or_else(|| temporary.path().to_owned());
    std::fs::create_dir_all(&dir).unwrap();

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let store = SqliteStore::open(&dir).expect("the store");
    let index = knowledge_local::documents::index(&dir, embedder);
    let settings = knowledge_assembly::Settings {
        documents: Some(knowledge_local::documents::parts_on(
            &dir,
            DocumentLimits::DEFAULT,
            index.clone(),
        )),
        ..knowledge_bench::settings(
            &base,
            Arc::new(BuiltinAgent),
            Arc::new(FixedIntegrations::new()),
        )
    };
    let service = LocalService::new(settings, LocalStore::Sqlite(store.clone()), "bench")
        .expect("the service");
    let documents = service.documents.clone().expect("documents");
    let workers = service.workers.clone().expect("workers");
    let shared: Arc<dyn knowledge_core::ports::Store> = Arc::new(store.clone());
    (Operator {
        store: shared.clone(),
    }
    .bootstrap()
    .await)
        .expect("bootstrap");
    let (org, user) = (
        OrgId::parse(DEFAULT_ORG).unwrap(),
        UserId::parse(DEFAULT_USER).unwrap(),
    );

    let record = dir.join("retrieval.json");
    let collection = match recorded(&record, &model) {
        Some(collection) => collection,
        None => {
            let by = Admin::operator(org.clone());
            let new = NewCollection {
                name: format!("SciFact {}", std::process::id()),
                description: String::new(),
                access: Access::Everyone,
            };
            let collection = (documents.create_collection(&by, new).await)
                .expect("made")
                .id;
            let started = Instant::now();
            for (id, title, text) in &bench.corpus {
                let upload = Upload {
                    name: format!("{id}.md"),
                    bytes: Bytes::from(Benchmark::markdown(title, text)),
                };
                (documents.upload(&by, &collection, upload).await).expect("uploaded");
            }
            let uploaded = started.elapsed();
            let started = Instant::now();
            let tasks: Vec<_> = (0..WORKERS)
                .map(|_| {
                    let workers = workers.clone();
                    tokio::spawn(async move {
                        while let Some(outcome) = workers.index_next().await.expect("indexed") {
                            assert!(matches!(outcome, IndexOutcome::Indexed(_)), "{outcome:?}");
                        }
                    })
                })
                .collect();
            for task in tasks {
                task.await.unwrap();
            }
            let indexed = started.elapsed().as_secs_f64();
            println!(
                "{:<44} {:.1} s",
                "uploaded through the use case",
                uploaded.as_secs_f64()
            );
            println!(
                "{:<44} {indexed:.1} s, {:.1} documents a second ({WORKERS} workers)",
                "indexed by the service's workers",
                bench.corpus.len() as f64 / indexed
            );
            let written = json!({ "model": model, "collection": collection.as_str() });
            std::fs::write(&record, written.to_string()).unwrap();
            collection
        }
    };

    let server = service.clone();
    tokio::spawn(async move {
        server
            .serve(listener, Default::default(), std::future::pending())
            .await
    });
    let signer = CookieSigner::new(&knowledge_bench::KEY).unwrap();
    let cookie = format!("{COOKIE_NAME}={}", signer.mint(&user, &org, 3600).unwrap());
    let client = reqwest::Client::new();
    let id_of = |name: &str| name.trim_end_matches(".md").to_owned();

    let mut route = Scores::default();
    for (id, text) in &bench.queries {
        let limit = ROUTE_LIMIT.to_string();
        let url = reqwest::Url::parse_with_params(
            &format!("{base}/api/search"),
            [("q", text.as_str()), ("limit", limit.as_str())],
        )
        .unwrap();
        let asked = Instant::now();
        let answer = client
            .get(url)
            .header("cookie", &cookie)
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 200);
        let answer: Value = answer.json().await.unwrap();
        route.took(asked.elapsed());
        let ranked: Vec<String> = (answer["results"].as_array().unwrap().iter())
            .map(|r| id_of(r["documentName"].as_str().unwrap()))
            .collect();
        route.add(bench, id, &ranked, ROUTE_LIMIT);
    }
    route.print("GET /api/search, as a member (50 passages)", ROUTE_LIMIT);

    let tools = WithDocuments::new(
        Arc::new(FixedIntegrations::new()),
        documents.clone(),
        shared.clone(),
    );
    let connected = tools.connected(&org, &user).await.expect("the tools");
    let search = (connected.iter())
        .find(|i| i.owns(SEARCH_TOOL) == Some(true))
        .expect("the documents' search");
    for limit in [None, Some(5)] {
        let passages = limit.unwrap_or(SEARCH_TOOL_DEFAULT_LIMIT);
        let mut tool = Scores::default();
        for (id, text) in &bench.queries {
            let asked = Instant::now();
            let input = match limit {
                None => json!({ "query": text }),
                Some(limit) => json!({ "query": text, "limit": limit }),
            };
            let never = std::pin::pin!(std::future::pending::<()>());
            let output = (search.call(SEARCH_TOOL, &input, never).await).expect("the tool answers");
            tool.took(asked.elapsed());
            let ranked: Vec<String> = (output.as_array().unwrap().iter())
                .map(|p| id_of(p["source"].as_str().unwrap()))
                .collect();
            tool.add(bench, id, &ranked, passages as usize);
        }
        let name = match limit {
            None => format!("the agent's search_documents (its default, {passages})"),
            Some(_) => format!("the agent's search_documents, limit {passages}"),
        };
        tool.print(&name, passages as usize);
    }

    let stored = (knowledge_core::ports::DocumentStore::list_documents(&store, &org, &collection)
        .await)
        .expect("the documents");
    let names: std::collections::HashMap<String, String> = (stored.into_iter())
        .map(|d| (d.id.as_str().to_owned(), id_of(&d.name)))
        .collect();
    let mut alone = Scores::default();
    let collections = [collection.as_str()];
    for (id, text) in &bench.queries {
        let asked = Instant::now();
        let ranked = bare::ranked(&index, org.as_str(), &collections, text, 100);
        alone.took(asked.elapsed());
        let ranked: Vec<String> = (ranked.into_iter())
            .map(|d| names.get(&d).cloned().unwrap_or(d))
            .collect();
        alone.add(bench, id, &ranked, 100);
    }
    alone.print("the service's index alone, 100 documents", 100);
}
