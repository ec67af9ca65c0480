//! The storage ports' contract on DynamoDB: a table of its own for each case, in the stand-in
//! (moto on loopback) that `KNOWLEDGE_TEST_DYNAMODB_ENDPOINT` names; `scripts/test` starts it.

use std::sync::Arc;

use knowledge_dynamo::{DynamoStore, RequestCounter, connect, create_table_if_missing};
use knowledge_store_tests::Tested;

const ENDPOINT_ENV: &str = "KNOWLEDGE_TEST_DYNAMODB_ENDPOINT";

async fn open() -> (Arc<dyn Tested>, ()) {
    let endpoint = std::env::var(ENDPOINT_ENV).unwrap_or_else(|_| {
        panic!("{ENDPOINT_ENV} must name a DynamoDB endpoint; scripts/test starts moto and sets it")
    });
    let client = connect(Some(&endpoint), RequestCounter::default()).await;
    let table = format!("conformance-{}", uuid::Uuid::new_v4().simple());
    create_table_if_missing(&client, &table).await.unwrap();
    (Arc::new(DynamoStore::new(client, table)), ())
}

knowledge_store_tests::conformance!(open);
