//! The organisation the search figures are measured on, built through the real path: the
//! local service over its embedded SQLite store, with `FolderOriginals` and a `TantivyIndex`
//! on disk in its data directory, the core's `Documents` use cases for the collections and the
//! uploads, and the core's `Workers` (with the `Ingest` parser) for the indexing.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use knowledge_assembly::DocumentParts;
use knowledge_assembly::operator::{DEFAULT_ORG, DEFAULT_USER, Operator};
use knowledge_core::adapters::agent::BuiltinAgent;
use knowledge_core::adapters::integrations::FixedIntegrations;
use knowledge_core::admin::{Admin, AdminStores, Administration};
use knowledge_core::clock::SystemClock;
use knowledge_core::documents::{
    DocumentLimits, Documents, IndexOutcome, NewCollection, Upload, Workers,
};
use knowledge_core::domain::{Access, Role};
use knowledge_core::ids::{CollectionId, GroupId, OrgId, UserId};
use knowledge_core::ports::Store;
use knowledge_core::service::Principal;
use knowledge_local::{FolderOriginals, LocalService, LocalStore, SqliteStore};
use knowledge_search::{PassageIndex, TantivyIndex};
use serde_json::json;

/// Collections of the organisation; the even ones are open to a group of the member's.
pub const COLLECTIONS: usize = 20;
/// Groups of the organisation; the member is in the first [`MEMBER_GROUPS`].
const GROUPS: usize = 8;
const MEMBER_GROUPS: usize = 3;

/// The bench's limits: the defaults, with a business plan's allowance for every organisation.
pub fn limits() -> DocumentLimits {
    DocumentLimits {
        free_bytes: DocumentLimits::DEFAULT.business_bytes,
        ..DocumentLimits::DEFAULT
    }
}

/// The local service over a data directory, with its documents' parts at hand.
pub struct Service {
    pub store: SqliteStore,
    pub service: LocalService,
    pub documents: Documents,
    pub workers: Workers,
    /// The index the core's port searches: the same open index, for the bare baseline.
    pub index: Arc<PassageIndex>,
}

impl Service {
    /// The service over `dir` (created if new) as it would serve at `origin`.
    pub fn open(dir: &Path, origin: &str) -> Self {
        let store = SqliteStore::open(dir).expect("the store");
        let index = Arc::new(PassageIndex::on_disk(dir.join("index")));
        let parts = DocumentParts {
            originals: Arc::new(FolderOriginals::in_data_dir(dir)),
            index: Arc::new(TantivyIndex::new(index.clone())),
            limits: limits(),
        };
        let settings = knowledge_assembly::Settings {
            documents: Some(parts),
            ..knowledge_bench::settings(
                origin,
                Arc::new(BuiltinAgent),
                Arc::new(FixedIntegrations::new()),
            )
        };
        let service = LocalService::new(settings, LocalStore::Sqlite(store.clone()), "bench")
            .expect("the service");
        let documents = service.documents.clone().expect("documents");
        let workers = service.workers.clone().expect("workers");
        Self {
            store,
            service,
            documents,
            workers,
            index,
        }
    }

    pub fn shared(&self) -> Arc<dyn Store> {
        Arc::new(self.store.clone())
    }

    /// Indexes every queued document with `count` workers, each taking one document at a time
    /// (`Workers::index_next`, as `Workers::run` does); answers how many it indexed.
    pub async fn drain(&self, count: usize) -> usize {
        let (started, counter) = (Instant::now(), Arc::new(AtomicUsize::new(0)));
        let tasks: Vec<_> = (0..count)
            .map(|_| {
                let (workers, counter) = (self.workers.clone(), counter.clone());
                tokio::spawn(async move {
                    let mut done = 0;
                    while let Some(outcome) = workers.index_next().await.expect("indexed") {
                        assert!(matches!(outcome, IndexOutcome::Indexed(_)), "{outcome:?}");
                        done += 1;
                        let all = counter.fetch_add(1, Ordering::Relaxed) + 1;
                        if all % 1_000 == 0 {
                            eprintln!("indexed {all} in {:.0?}", started.elapsed());
                        }
                    }
                    done
                })
            })
            .collect();
        let mut done = 0;
        for task in tasks {
            done += task.await.expect("a worker");
        }
        done
    }
}

/// Who searches: the admin, and a member whose access comes through their groups.
pub struct People {
    pub org: OrgId,
    pub admin: Principal,
    pub member: Principal,
    pub collections: Vec<CollectionId>,
    /// Documents uploaded and indexed.
    pub documents: usize,
}

impl People {
    fn path(dir: &Path) -> PathBuf {
        dir.join("bench-org.json")
    }

    /// As [`build`] recorded them in `dir`.
    pub fn read(dir: &Path) -> Self {
        let text = std::fs::read_to_string(Self::path(dir)).expect("a built organisation");
        let v: serde_json::Value = serde_json::from_str(&text).expect("its record");
        let org = OrgId::parse(v["org"].as_str().unwrap()).unwrap();
        let principal = |key: &str, role| Principal {
            user: UserId::parse(v[key].as_str().unwrap()).unwrap(),
            org: org.clone(),
            role,
            user_name: None,
        };
        Self {
            admin: principal("admin", Role::Admin),
            member: principal("member", Role::Viewer),
            collections: (v["collections"].as_array().unwrap().iter())
                .map(|c| CollectionId::parse(c.as_str().unwrap()).unwrap())
                .collect(),
            documents: v["documents"].as_u64().unwrap_or(0) as usize,
            org,
        }
    }

    /// Records them in `dir`, for later runs.
    pub fn write(&self, dir: &Path) {
        let record = json!({
            "org": self.org.as_str(),
            "admin": self.admin.user.as_str(),
            "member": self.member.user.as_str(),
            "collections": self.collections.iter().map(|c| c.as_str()).collect::<Vec<_>>(),
            "documents": self.documents,
        });
        std::fs::write(Self::path(dir), record.to_string()).expect("recorded");
    }

    /// The collections the member opens: the even ones.
    pub fn members(&self) -> Vec<CollectionId> {
        self.collections.iter().step_by(2).cloned().collect()
    }
}

/// The default organisation of a fresh data directory `dir`, with its groups, a member in
/// three of them, and [`COLLECTIONS`] collections, recorded in `dir`.
pub async fn people(service: &Service, dir: &Path) -> People {
    let store = service.shared();
    let (org, admin) = Operator {
        store: store.clone(),
    }
    .bootstrap()
    .await
    .expect("bootstrap")
    .unwrap_or_else(|| {
        (
            OrgId::parse(DEFAULT_ORG).unwrap(),
            UserId::parse(DEFAULT_USER).unwrap(),
        )
    });
    let operator = Operator {
        store: store.clone(),
    };
    let member = (operator.add_member(&org, None, Role::Viewer).await).expect("a member");
    let administration = Administration::new(AdminStores::of(&store), Arc::new(SystemClock));
    let by = Admin::operator(org.clone());
    let mut groups: Vec<GroupId> = Vec::new();
    for g in 0..GROUPS {
        let group = administration
            .create_group(&by, &format!("Group {g}"))
            .await;
        groups.push(group.expect("a group").id);
    }
    for g in &groups[..MEMBER_GROUPS] {
        (administration.add_group_member(&by, g, &member.user).await).expect("joined");
    }
    let mut collections = Vec::new();
    for c in 0..COLLECTIONS {
        // Even collections open to one of the member's groups, odd ones to one of the others.
        let group = match c % 2 {
            0 => groups[(c / 2) % MEMBER_GROUPS].clone(),
            _ => groups[MEMBER_GROUPS + (c / 2) % (GROUPS - MEMBER_GROUPS)].clone(),
        };
        let new = NewCollection {
            name: format!("Collection {c:02}"),
            description: String::new(),
            access: Access::Groups([group].into()),
        };
        let made = service.documents.create_collection(&by, new).await;
        collections.push(made.expect("a collection").id);
    }
    let principal = |user: &UserId, role| Principal {
        user: user.clone(),
        org: org.clone(),
        role,
        user_name: None,
    };
    let people = People {
        admin: principal(&admin, Role::Admin),
        member: principal(&member.user, Role::Viewer),
        collections,
        documents: 0,
        org: org.clone(),
    };
    people.write(dir);
    people
}

/// How long a build's steps took.
pub struct Built {
    pub documents: usize,
    pub bytes: u64,
    pub upload: Duration,
    pub index: Duration,
    /// The process's CPU time (user and system) while indexing.
    pub index_cpu: Duration,
    pub settle: Duration,
}

/// Uploads `files` (name, Markdown) round the collections and indexes them with `workers`
/// workers; then lets the index's merges finish, as a copy for elsewhere would.
pub async fn fill(
    service: &Service, people: &People, files: impl Iterator<Item = (String, String)>,
    workers: usize,
) -> Built {
    let by = Admin::operator(people.org.clone());
    let started = Instant::now();
    let (mut documents, mut bytes) = (0, 0);
    for (n, (name, text)) in files.enumerate() {
        let collection = &people.collections[n % people.collections.len()];
        bytes += text.len() as u64;
        let upload = Upload {
            name,
            bytes: Bytes::from(text),
        };
        (service.documents.upload(&by, collection, upload).await).expect("uploaded");
        documents += 1;
        if documents % 1_000 == 0 {
            eprintln!("uploaded {documents} in {:.0?}", started.elapsed());
        }
    }
    let upload = started.elapsed();
    let (started, cpu) = (Instant::now(), crate::stats::cpu());
    let indexed = service.drain(workers).await;
    assert_eq!(indexed, documents);
    let (index, index_cpu) = (started.elapsed(), crate::stats::cpu() - cpu);
    let started = Instant::now();
    let (root, org) = (service.index.clone(), people.org.as_str().to_owned());
    tokio::task::spawn_blocking(move || root.settle(&org))
        .await
        .unwrap()
        .expect("settled");
    Built {
        documents,
        bytes,
        upload,
        index,
        index_cpu,
        settle: started.elapsed(),
    }
}

/// The bytes and files of a folder, recursively.
pub fn size_of(dir: &Path) -> (u64, usize) {
    let (mut bytes, mut files) = (0, 0);
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let meta = entry.metadata().expect("metadata");
        if meta.is_dir() {
            let (b, f) = size_of(&entry.path());
            bytes += b;
            files += f;
        } else {
            bytes += meta.len();
            files += 1;
        }
    }
    (bytes, files)
}
