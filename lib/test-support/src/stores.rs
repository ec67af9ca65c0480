//! The stores the HTTP tests run on beyond the embedded ones: DynamoDB on moto, a table per
//! data directory.

/// The DynamoDB endpoint (moto on loopback, started by `scripts/test`) for the DynamoDB store.
pub const DYNAMODB_ENDPOINT_ENV: &str = "KNOWLEDGE_TEST_DYNAMODB_ENDPOINT";
/// The file in a data directory that names its table.
const TABLE_FILE: &str = "dynamodb-table";

pub fn dynamodb_endpoint() -> String {
    std::env::var(DYNAMODB_ENDPOINT_ENV).unwrap_or_else(|_| {
        panic!(
            "{DYNAMODB_ENDPOINT_ENV} must name a DynamoDB endpoint; scripts/test starts moto on \
             loopback and sets it"
        )
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
