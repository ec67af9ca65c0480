//! The stores the HTTP tests run on, and the one place that picks one: [`STORE_ENV`] names it
//! ([`TestStore::from_env`]), each harness with its own default; [`TestStore::open`] opens it
//! for a data directory. DynamoDB runs on moto, a table per data directory; and whether a
//! DynamoDB case runs at all is decided here too ([`skip_dynamodb`]).
//!
//! A plain `cargo test` has no DynamoDB: its DynamoDB cases are skipped, each passing without
//! running, and each test binary says so once on stderr with how to run them. `scripts/test`
//! starts moto, names it in [`DYNAMODB_ENDPOINT_ENV`] and sets [`REQUIRE_DYNAMODB_ENV`], which
//! turns a skip into a failure: there every DynamoDB case runs, or the run fails.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex, Once};

use knowledge_core::testing::TransientStore;
use knowledge_dynamo::DynamoStore;
use knowledge_sqlite::SqliteStore;

/// Names the store every test service of a test binary runs on: `transient`, `sqlite` or
/// `dynamodb` (on the endpoint in [`DYNAMODB_ENDPOINT_ENV`]), among those its harness allows.
pub const STORE_ENV: &str = "KNOWLEDGE_TEST_STORE";

/// The DynamoDB endpoint (moto on loopback, started by `scripts/test`) for the DynamoDB store.
pub const DYNAMODB_ENDPOINT_ENV: &str = "KNOWLEDGE_TEST_DYNAMODB_ENDPOINT";
/// Set (to `1`) by `scripts/test`: a DynamoDB case without [`DYNAMODB_ENDPOINT_ENV`] fails
/// instead of being skipped.
pub const REQUIRE_DYNAMODB_ENV: &str = "KNOWLEDGE_TEST_REQUIRE_DYNAMODB";

/// A store the HTTP tests' services run on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TestStore {
    /// The transient store, one per data directory in the test process.
    Transient,
    /// SQLite, a file in the data directory.
    Sqlite,
    /// DynamoDB on moto, a table named in the data directory.
    Dynamodb,
}

/// A store opened for a data directory ([`TestStore::open`]).
pub enum Opened {
    Transient(Arc<TransientStore>),
    Sqlite(SqliteStore),
    Dynamodb(DynamoStore),
}

/// The transient stores by data directory, so that two services "on one data directory" share
/// one, as two local services on one SQLite file do.
static TRANSIENT: LazyLock<Mutex<HashMap<PathBuf, Arc<TransientStore>>>> =
    LazyLock::new(Default::default);

impl TestStore {
    /// Every store, for a harness that runs on any.
    pub const ALL: [Self; 3] = [Self::Transient, Self::Sqlite, Self::Dynamodb];

    /// The value of [`STORE_ENV`] that names this store.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Transient => "transient",
            Self::Sqlite => "sqlite",
            Self::Dynamodb => "dynamodb",
        }
    }

    /// The store [`STORE_ENV`] names, `default` when it is unset. Panics, naming the stores
    /// `allowed`, when it names another (or is not Unicode): a run asked for a store its
    /// harness does not have fails rather than testing another one.
    pub fn from_env(default: Self, allowed: &[Self]) -> Self {
        let value = match std::env::var(STORE_ENV) {
            Err(std::env::VarError::NotPresent) => return default,
            Err(std::env::VarError::NotUnicode(v)) => v.to_string_lossy().into_owned(),
            Ok(v) => v,
        };
        let names: Vec<&str> = allowed.iter().map(|s| s.name()).collect();
        allowed
            .iter()
            .copied()
            .find(|s| s.name() == value)
            .unwrap_or_else(|| {
                panic!(
                    "{STORE_ENV}={value} is no store of this harness: it runs on {} \
                     ({} when {STORE_ENV} is unset)",
                    names.join(", "),
                    default.name()
                )
            })
    }

    /// This store for the data directory `dir`; every service opened on `dir` finds the data of
    /// the ones before it (the same transient store, SQLite file or DynamoDB table).
    pub async fn open(self, dir: &Path) -> Opened {
        match self {
            Self::Transient => {
                let mut stores = TRANSIENT.lock().unwrap();
                Opened::Transient(stores.entry(dir.to_owned()).or_default().clone())
            }
            Self::Sqlite => Opened::Sqlite(SqliteStore::open(dir).unwrap()),
            Self::Dynamodb => Opened::Dynamodb(dynamo_store(dir).await),
        }
    }
}

/// The file in a data directory that names its table.
const TABLE_FILE: &str = "dynamodb-table";

/// How to run the DynamoDB cases, for the messages below.
const HOW: &str = "scripts/test rust (it starts moto), or start moto \
                   (.venv/bin/python scripts/moto_server.py 127.0.0.1 5599) and set \
                   KNOWLEDGE_TEST_DYNAMODB_ENDPOINT=http://127.0.0.1:5599 (docs/testing.md)";

/// Returns from the calling test, which then passes without running, when no DynamoDB endpoint
/// is set and none is required ([`skip_dynamodb`]); the first line of a DynamoDB case.
#[macro_export]
macro_rules! skip_without_dynamodb {
    () => {
        if $crate::stores::skip_dynamodb() {
            return;
        }
    };
}

/// Whether a DynamoDB case is to be skipped: true when [`DYNAMODB_ENDPOINT_ENV`] is not set,
/// saying so (once per test binary) on stderr, where the test harness does not capture it.
/// Panics, failing the case, when it is not set but [`REQUIRE_DYNAMODB_ENV`] is.
pub fn skip_dynamodb() -> bool {
    if std::env::var_os(DYNAMODB_ENDPOINT_ENV).is_some() {
        return false;
    }
    let required = std::env::var(REQUIRE_DYNAMODB_ENV).is_ok_and(|v| !v.is_empty() && v != "0");
    assert!(
        !required,
        "{REQUIRE_DYNAMODB_ENV} is set but {DYNAMODB_ENDPOINT_ENV} is not: the DynamoDB cases \
         must run here and have no endpoint; run {HOW}"
    );
    static SAID: Once = Once::new();
    SAID.call_once(|| {
        let _ = writeln!(
            std::io::stderr(),
            "skipped: DynamoDB cases need moto: {HOW}"
        );
    });
    true
}

/// The DynamoDB endpoint, for a case that runs on DynamoDB: one that began with
/// [`skip_without_dynamodb!`], or one that was asked to ([`STORE_ENV`]`=dynamodb`).
pub fn dynamodb_endpoint() -> String {
    std::env::var(DYNAMODB_ENDPOINT_ENV).unwrap_or_else(|_| {
        panic!("{DYNAMODB_ENDPOINT_ENV} must name a DynamoDB endpoint; run {HOW}")
    })
}

/// A DynamoDB store on a table of its own for the data directory `dir`: the table's name is
/// kept in `dir`, so that a service started again on the same directory finds the same data.
pub async fn dynamo_store(dir: &Path) -> DynamoStore {
    let path = dir.join(TABLE_FILE);
    let table = match std::fs::read_to_string(&path) {
        Ok(name) => name,
        Err(_) => {
            let name = format!("knowledge-test-{}", uuid::Uuid::new_v4().simple());
            std::fs::write(&path, &name).unwrap();
            name
        }
    };
    let client = knowledge_dynamo::connect(Some(&dynamodb_endpoint()), Default::default()).await;
    knowledge_dynamo::create_table_if_missing(&client, &table)
        .await
        .unwrap();
    DynamoStore::new(client, table)
}
