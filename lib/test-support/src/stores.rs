//! The stores the HTTP tests run on beyond the embedded ones: DynamoDB on moto, a table per
//! data directory; and whether a DynamoDB case runs at all (the one place that decides it).
//!
//! A plain `cargo test` has no DynamoDB: its DynamoDB cases are skipped, each passing without
//! running, and each test binary says so once on stderr with how to run them. `scripts/test`
//! starts moto, names it in [`DYNAMODB_ENDPOINT_ENV`] and sets [`REQUIRE_DYNAMODB_ENV`], which
//! turns a skip into a failure: there every DynamoDB case runs, or the run fails.

use std::io::Write;
use std::sync::Once;

/// The DynamoDB endpoint (moto on loopback, started by `scripts/test`) for the DynamoDB store.
pub const DYNAMODB_ENDPOINT_ENV: &str = "KNOWLEDGE_TEST_DYNAMODB_ENDPOINT";
/// Set (to `1`) by `scripts/test`: a DynamoDB case without [`DYNAMODB_ENDPOINT_ENV`] fails
/// instead of being skipped.
pub const REQUIRE_DYNAMODB_ENV: &str = "KNOWLEDGE_TEST_REQUIRE_DYNAMODB";
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
/// [`skip_without_dynamodb!`], or one that was asked to (`KNOWLEDGE_TEST_STORE=dynamodb`).
pub fn dynamodb_endpoint() -> String {
    std::env::var(DYNAMODB_ENDPOINT_ENV).unwrap_or_else(|_| {
        panic!("{DYNAMODB_ENDPOINT_ENV} must name a DynamoDB endpoint; run {HOW}")
    })
}

/// A DynamoDB store on a table of its own for the data directory `dir`: the table's name is
/// kept in `dir`, so that a service started again on the same directory finds the same data.
pub async fn dynamo_store(dir: &std::path::Path) -> knowledge_dynamo::DynamoStore {
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
    knowledge_dynamo::DynamoStore::new(client, table)
}
