//! Building the DynamoDB client, and creating the table where nothing else does (the local
//! service on a stand-in, the tests). On AWS the SAM template creates the table; the two
//! definitions must stay alike, and the conformance suite runs on tables made here.

use std::time::Duration;

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::config::{Credentials, Region};
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, CreateGlobalSecondaryIndexAction, GlobalSecondaryIndex,
    GlobalSecondaryIndexUpdate, KeySchemaElement, KeyType, Projection, ProjectionType,
    ScalarAttributeType, TableStatus, TimeToLiveSpecification,
};

use knowledge_core::ports::BackendError;

use crate::counter::RequestCounter;
use crate::keys;

/// The table could not be described, created or waited for; the cause is the SDK's error.
#[derive(Debug, thiserror::Error)]
#[error("DynamoDB table")]
pub struct TableError(#[source] BackendError);

fn table_error(e: impl Into<BackendError>) -> TableError {
    TableError(e.into())
}

/// A client for DynamoDB, counting its requests in `counter`. With an `endpoint` (a stand-in
/// such as moto or DynamoDB Local) and no credentials in the environment, it signs with fixed
/// local credentials and defaults to `us-east-1`, so a laptop needs no AWS account. Without
/// one it uses the standard AWS configuration chain.
pub async fn connect(endpoint: Option<&str>, counter: RequestCounter) -> Client {
    let shared = knowledge_aws_sdk::sdk_config_loader().load().await;
    let mut config = config(&shared, counter);
    if let Some(url) = endpoint {
        config = config.endpoint_url(url);
        let configured = ["AWS_ACCESS_KEY_ID", "AWS_PROFILE"]
            .iter()
            .any(|v| std::env::var_os(v).is_some());
        if !configured {
            config = config.credentials_provider(Credentials::new(
                "local",
                "local",
                None,
                None,
                "knowledge-local",
            ));
        }
        if shared.region().is_none() {
            config = config.region(Region::new("us-east-1"));
        }
    }
    Client::from_conf(config.build())
}

/// The DynamoDB client configuration of `shared` (the one AWS configuration of a Lambda cold
/// start), counting requests in `counter`.
pub fn config(
    shared: &aws_config::SdkConfig, counter: RequestCounter,
) -> aws_sdk_dynamodb::config::Builder {
    aws_sdk_dynamodb::config::Builder::from(shared).interceptor(counter)
}

fn attribute(name: &str) -> Result<AttributeDefinition, TableError> {
    AttributeDefinition::builder()
        .attribute_name(name)
        .attribute_type(ScalarAttributeType::S)
        .build()
        .map_err(table_error)
}

fn key(name: &str, kind: KeyType) -> Result<KeySchemaElement, TableError> {
    KeySchemaElement::builder()
        .attribute_name(name)
        .key_type(kind)
        .build()
        .map_err(table_error)
}

/// GSI2, the index of work waiting: runs by when they go stale, queued and uploading
/// documents: keys only.
fn stale_index() -> Result<GlobalSecondaryIndex, TableError> {
    GlobalSecondaryIndex::builder()
        .index_name(keys::GSI2)
        .key_schema(key(keys::GSI2PK, KeyType::Hash)?)
        .key_schema(key(keys::GSI2SK, KeyType::Range)?)
        .projection(
            Projection::builder()
                .projection_type(ProjectionType::KeysOnly)
                .build(),
        )
        .build()
        .map_err(table_error)
}

/// Creates the table (on-demand, with GSI1, GSI2 and TTL) unless it exists; adds GSI2 to a
/// table an earlier version created without it. Waits until it is active.
pub async fn create_table_if_missing(client: &Client, table: &str) -> Result<(), TableError> {
    match client.describe_table().table_name(table).send().await {
        Ok(out) => {
            let indexes = out
                .table()
                .map(|t| t.global_secondary_indexes())
                .unwrap_or_default();
            if !indexes.iter().any(|i| i.index_name() == Some(keys::GSI2)) {
                add_stale_index(client, table).await?;
            }
            return wait_active(client, table).await;
        }
        Err(e)
            if e.as_service_error()
                .is_some_and(|e| e.is_resource_not_found_exception()) => {}
        Err(e) => return Err(table_error(e)),
    }
    let index = GlobalSecondaryIndex::builder()
        .index_name(keys::GSI1)
        .key_schema(key(keys::GSI1PK, KeyType::Hash)?)
        .key_schema(key(keys::GSI1SK, KeyType::Range)?)
        .projection(
            Projection::builder()
                .projection_type(ProjectionType::Include)
                .non_key_attributes("title")
                .non_key_attributes("updatedAt")
                .build(),
        )
        .build()
        .map_err(table_error)?;
    let created = client
        .create_table()
        .table_name(table)
        .billing_mode(BillingMode::PayPerRequest)
        .attribute_definitions(attribute(keys::PK)?)
        .attribute_definitions(attribute(keys::SK)?)
        .attribute_definitions(attribute(keys::GSI1PK)?)
        .attribute_definitions(attribute(keys::GSI1SK)?)
        .attribute_definitions(attribute(keys::GSI2PK)?)
        .attribute_definitions(attribute(keys::GSI2SK)?)
        .key_schema(key(keys::PK, KeyType::Hash)?)
        .key_schema(key(keys::SK, KeyType::Range)?)
        .global_secondary_indexes(index)
        .global_secondary_indexes(stale_index()?)
        .send()
        .await;
    match created {
        Ok(_) => {}
        // Someone else created it meanwhile.
        Err(e)
            if e.as_service_error()
                .is_some_and(|e| e.is_resource_in_use_exception()) => {}
        Err(e) => return Err(table_error(e)),
    }
    wait_active(client, table).await?;
    client
        .update_time_to_live()
        .table_name(table)
        .time_to_live_specification(
            TimeToLiveSpecification::builder()
                .enabled(true)
                .attribute_name(keys::TTL)
                .build()
                .map_err(table_error)?,
        )
        .send()
        .await
        .map_err(table_error)?;
    Ok(())
}

/// Adds GSI2 to an existing table (one written by an earlier version). Sessions written before
/// it are not in it until their next commit.
async fn add_stale_index(client: &Client, table: &str) -> Result<(), TableError> {
    // The same index as a new table gets.
    let index = stale_index()?;
    let create = CreateGlobalSecondaryIndexAction::builder()
        .index_name(index.index_name)
        .set_key_schema(Some(index.key_schema))
        .set_projection(index.projection)
        .build()
        .map_err(table_error)?;
    client
        .update_table()
        .table_name(table)
        .attribute_definitions(attribute(keys::GSI2PK)?)
        .attribute_definitions(attribute(keys::GSI2SK)?)
        .global_secondary_index_updates(
            GlobalSecondaryIndexUpdate::builder().create(create).build(),
        )
        .send()
        .await
        .map_err(table_error)?;
    Ok(())
}

async fn wait_active(client: &Client, table: &str) -> Result<(), TableError> {
    for _ in 0..120 {
        let out = client
            .describe_table()
            .table_name(table)
            .send()
            .await
            .map_err(table_error)?;
        if out.table().and_then(|t| t.table_status()) == Some(&TableStatus::Active) {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    Err(table_error(format!(
        "{table} did not become active in 60 s"
    )))
}
