//! `DynamoStore`: the storage ports on one DynamoDB table (keys in [`keys`]).
//!
//! Every port method is one request, except `delete_session`, `delete_group` and
//! `delete_collection`, which page through the events, the memberships or the documents, those
//! that read a record before their transaction (a member's removal, an addition to a group),
//! and `claimable_documents` and `stale_uploads` (a page of GSI2, then its documents in one
//! batch). Reads that decide a write are strongly consistent; only the session list (GSI1) and
//! the documents' queue and uploads (GSI2) read an index, which is eventually consistent, so a
//! session or a document can take a moment to appear there.
//!
//! One module per storage role implements its port; `codec` turns records into items and
//! back, `transact` builds and classifies transactions, `read` holds the query helpers.
//! Its client is configured as every AWS client of the service is, by
//! `knowledge_aws_sdk::sdk_config_loader` (the SDK's HTTP/1.1 client).

mod batch;
mod codec;
pub mod counter;
mod directory;
mod documents;
mod gate;
mod grants;
mod groups;
pub mod keys;
mod limits;
mod orgs;
mod read;
mod sessions;
mod table;
mod tally;
mod tickets;
mod transact;

use aws_sdk_dynamodb::Client;

pub use crate::counter::RequestCounter;
pub use crate::table::{TableError, config, connect, create_table_if_missing};

/// The storage ports on a DynamoDB table. Cheap to clone.
#[derive(Clone, Debug)]
pub struct DynamoStore {
    client: Client,
    table: String,
}

impl DynamoStore {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self {
            client,
            table: table.into(),
        }
    }

    pub fn table(&self) -> &str {
        &self.table
    }
}

/// The row counts the conformance suite checks deletes by, and the search's page bound made
/// small enough to test.
#[cfg(feature = "testing")]
mod testing {
    use knowledge_core::domain::{FoundSessions, TitleQuery};
    use knowledge_core::ids::{OrgId, SessionKey, UserId};
    use knowledge_core::ports::{StoreResult, StoredRows};

    impl DynamoStore {
        /// `find_sessions` with `pages` Queries of `page` index entries at most.
        pub async fn find_sessions_in_pages(
            &self, user: &UserId, org: &OrgId, query: &TitleQuery, limit: usize, page: usize,
            pages: usize,
        ) -> StoreResult<FoundSessions> {
            self.find_in_pages(user, org, query, limit, page, pages)
                .await
        }
    }

    use crate::codec::{backend, get_s, s};
    use crate::{DynamoStore, keys};

    #[async_trait::async_trait]
    impl StoredRows for DynamoStore {
        async fn rows_for(&self, key: &SessionKey) -> StoreResult<(u64, u64)> {
            let (mut sessions, mut events) = (0, 0);
            let mut start = None;
            loop {
                let out = self
                    .client
                    .query()
                    .table_name(&self.table)
                    .key_condition_expression("#pk = :pk")
                    .expression_attribute_names("#pk", keys::PK)
                    .expression_attribute_values(":pk", s(keys::session_partition(key)))
                    .projection_expression("#sk")
                    .expression_attribute_names("#sk", keys::SK)
                    .consistent_read(true)
                    .set_exclusive_start_key(start)
                    .send()
                    .await
                    .map_err(backend)?;
                for item in out.items() {
                    if keys::is_event_sort(get_s(item, keys::SK)?) {
                        events += 1;
                    } else {
                        sessions += 1;
                    }
                }
                match out.last_evaluated_key {
                    Some(k) => start = Some(k),
                    None => return Ok((sessions, events)),
                }
            }
        }
    }
}
