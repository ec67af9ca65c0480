//! [`DocumentStore`] on DynamoDB: an organisation's collections in one partition, each
//! collection's documents in one of their own, the organisation's storage a counter moved in
//! each document's transaction, and the queued and uploading documents of every organisation in
//! GSI2.

mod items;

use std::collections::BTreeSet;

use async_trait::async_trait;
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::types::{
    CancellationReason, ConditionCheck, Delete, ReturnValuesOnConditionCheckFailure,
    TransactWriteItem, Update,
};
use knowledge_core::clock::Timestamp;
use knowledge_core::domain::{AuditEntry, Collection, Document, DocumentStatus};
use knowledge_core::ids::{CollectionId, DocumentId, OrgId};
use knowledge_core::ports::{DocumentStore, StoreError, StoreResult};

use self::items::*;
use crate::codec::*;
use crate::transact::{Refusal, TransactError, reason_code};
use crate::{DynamoStore, keys};

/// Documents a collection's deletion removes per transaction: with the storage counter's
/// release, the 100 items a transaction takes at most.
const DELETE_PAGE: usize = 99;
/// Keys one `BatchGetItem` takes at most.
const BATCH_GET: usize = 100;

/// Why a transaction of this module was cancelled: the reasons, one per item in order, and
/// the error for logs.
struct Cancelled {
    reasons: Vec<CancellationReason>,
    error: StoreError,
}

impl Cancelled {
    /// Whether item `at` (when there is one) failed its condition.
    fn failed(&self, at: Option<usize>) -> bool {
        at.and_then(|i| self.reasons.get(i))
            .is_some_and(|r| reason_code(r) == "ConditionalCheckFailed")
    }

    /// The stored record, when the first item failed its condition on one that is stored.
    fn first_stored(&self) -> Option<&Item> {
        (self.reasons.first())
            .filter(|r| reason_code(r) == "ConditionalCheckFailed")
            .and_then(|r| r.item())
            .filter(|item| !item.is_empty())
    }

    /// As the store's other transactions classify a cancellation.
    fn classified(self) -> TransactError {
        TransactError::cancelled(&self.reasons, self.error, false)
    }
}

impl DynamoStore {
    /// Sends a transaction; a cancelled one comes back with its reasons.
    async fn send_documents(
        &self, writes: Vec<TransactWriteItem>,
    ) -> StoreResult<Result<(), Cancelled>> {
        match self.send_transaction(writes).await {
            Ok(()) => Ok(Ok(())),
            Err(Refusal::Cancelled { reasons, error }) => Ok(Err(Cancelled { reasons, error })),
            Err(Refusal::Backend(e)) => Err(e),
        }
    }

    /// The collection's item, being deleted or not.
    async fn collection_item(&self, org: &OrgId, id: &CollectionId) -> StoreResult<Option<Item>> {
        self.get(keys::collection(org, id)).await
    }

    /// The document stored at `expected`, put alone (a worker's lease or status: no bytes
    /// moved, no audit): one conditional `PutItem`, 1 WRU, instead of a transaction at 2.
    async fn put_document(&self, next: &Document, expected: u64) -> StoreResult<()> {
        let put = built(self.versioned_put(document_item(next), expected).build())?;
        match self.put_item(put).send().await {
            Ok(_) => Ok(()),
            Err(e) => match e.as_service_error() {
                Some(PutItemError::ConditionalCheckFailedException(c)) => {
                    match c.item().is_some_and(|item| !item.is_empty()) {
                        true => Err(StoreError::Conflict),
                        false => Err(StoreError::Gone),
                    }
                }
                Some(PutItemError::TransactionConflictException(_)) => Err(StoreError::Conflict),
                _ => Err(backend(e)),
            },
        }
    }

    /// Deletes a collection marked as being deleted: its documents a page at a time, each
    /// page in one transaction with their bytes released from the organisation's storage, then
    /// its item. Answers the documents it deleted.
    async fn finish_collection(
        &self, org: &OrgId, id: &CollectionId,
    ) -> StoreResult<Vec<Document>> {
        let mut deleted = Vec::new();
        let mut refused = 0;
        loop {
            let pk = keys::documents_partition(org, id);
            let page = self
                .query_page(pk, keys::DOCUMENT, None, DELETE_PAGE)
                .await?;
            let page: Vec<Document> = page.iter().map(document_from).collect::<StoreResult<_>>()?;
            if page.is_empty() {
                break;
            }
            let mut writes = Vec::with_capacity(page.len() + 1);
            for d in &page {
                writes.push(self.delete_at_version(d)?);
            }
            let bytes: u64 = page.iter().map(|d| d.bytes).sum();
            if bytes > 0 {
                writes.push(self.storage_move(org, -i128::from(bytes), u64::MAX)?);
            }
            match self.send_documents(writes).await? {
                Ok(()) => {
                    deleted.extend(page);
                    refused = 0;
                }
                Err(c) => match c.classified() {
                    TransactError::Backend(e) => return Err(e),
                    // A worker wrote one of them meanwhile (its version moved), or another
                    // call deleted them: read the page again.
                    _ if refused < REMOVE_ATTEMPTS => refused += 1,
                    _ => return Err(StoreError::Conflict),
                },
            }
        }
        self.delete_all(vec![key_item(keys::collection(org, id))])
            .await?;
        Ok(deleted)
    }

    /// A transaction item that deletes `d` only at its version, returning the stored document
    /// when the condition fails.
    fn delete_at_version(&self, d: &Document) -> StoreResult<TransactWriteItem> {
        let delete = Delete::builder()
            .table_name(&self.table)
            .set_key(Some(key_item(keys::document(&d.org, &d.collection, &d.id))))
            .condition_expression("#v = :expected")
            .expression_attribute_names("#v", "version")
            .expression_attribute_values(":expected", n(d.version))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
        Ok(TransactWriteItem::builder()
            .delete(built(delete.build())?)
            .build())
    }

    /// The items stored under `wanted` (at most 100 distinct keys), in its order.
    async fn documents_of(&self, wanted: Vec<(String, String)>) -> StoreResult<Vec<Item>> {
        if wanted.is_empty() {
            return Ok(Vec::new());
        }
        let mut found = self.batch_get(wanted.clone()).await?;
        Ok(wanted.iter().filter_map(|k| found.remove(k)).collect())
    }
}

#[async_trait]
impl DocumentStore for DynamoStore {
    async fn create_collection(
        &self, collection: &Collection, audit: &AuditEntry,
    ) -> StoreResult<()> {
        let writes = vec![
            self.put_new(collection_item(collection)?)?,
            self.put_new(audit_item(audit))?,
        ];
        self.transact(writes)
            .await
            .map_err(TransactError::of_create)
    }

    async fn get_collection(
        &self, org: &OrgId, id: &CollectionId,
    ) -> StoreResult<Option<Collection>> {
        match self.collection_item(org, id).await? {
            Some(item) if !deleting(&item) => Ok(Some(collection_from(org, &item)?)),
            _ => Ok(None),
        }
    }

    async fn list_collections(&self, org: &OrgId) -> StoreResult<Vec<Collection>> {
        let pk = keys::collections_partition(org);
        let items = self.query_items(pk, Some(keys::COLLECTION), None).await?;
        (items.iter())
            .filter(|item| !deleting(item))
            .map(|item| collection_from(org, item))
            .collect()
    }

    async fn update_collection(
        &self, previous: &Collection, next: &Collection, audit: &AuditEntry,
    ) -> StoreResult<()> {
        let writes = vec![
            self.put_versioned(collection_item(next)?, previous.version)?,
            self.put_new(audit_item(audit))?,
        ];
        match self.send_documents(writes).await? {
            Ok(()) => Ok(()),
            // Being deleted moved its version; it is gone all the same.
            Err(c) if c.failed(Some(0)) => match c.first_stored() {
                Some(item) if !deleting(item) => Err(StoreError::Conflict),
                _ => Err(StoreError::Gone),
            },
            Err(c) => Err(c.classified().of_replace()),
        }
    }

    /// The collection is first marked `deleting` (its version moved, so no update lands, and
    /// no document is added to it), with the audit entry, in one transaction: from then on
    /// `get_collection` and `list_collections` leave it out. Its documents then go a page at a
    /// time, and its item last, so that a call cut short leaves the mark, and the next call
    /// finds the collection still there and finishes (with no second audit entry). The
    /// documents answered are those this call deleted. Until its page goes, a document stays
    /// readable by its key, as its collection is not.
    async fn delete_collection(
        &self, org: &OrgId, id: &CollectionId, audit: &AuditEntry,
    ) -> StoreResult<Option<Vec<Document>>> {
        for _ in 0..REMOVE_ATTEMPTS {
            let Some(item) = self.collection_item(org, id).await? else {
                return Ok(None);
            };
            if deleting(&item) {
                return self.finish_collection(org, id).await.map(Some);
            }
            let version: u64 = get_n(&item, "version")?;
            let mark = Update::builder()
                .table_name(&self.table)
                .set_key(Some(key_item(keys::collection(org, id))))
                .update_expression("SET #d = :d ADD #v :one")
                .condition_expression("#v = :expected")
                .expression_attribute_names("#d", DELETING)
                .expression_attribute_names("#v", "version")
                .expression_attribute_values(":d", n(1))
                .expression_attribute_values(":one", n(1))
                .expression_attribute_values(":expected", n(version));
            let writes = vec![
                TransactWriteItem::builder()
                    .update(built(mark.build())?)
                    .build(),
                self.put_new(audit_item(audit))?,
            ];
            match self.transact(writes).await {
                Ok(()) => return self.finish_collection(org, id).await.map(Some),
                Err(TransactError::Backend(e)) => return Err(e),
                // Changed or marked meanwhile: read it again.
                Err(_) => continue,
            }
        }
        Err(StoreError::Conflict)
    }

    async fn create_document(
        &self, document: &Document, allowance: u64, audit: &AuditEntry,
    ) -> StoreResult<()> {
        let (org, c) = (&document.org, &document.collection);
        let check = ConditionCheck::builder()
            .table_name(&self.table)
            .set_key(Some(key_item(keys::collection(org, c))))
            .condition_expression("attribute_exists(#pk) AND attribute_not_exists(#d)")
            .expression_attribute_names("#pk", keys::PK)
            .expression_attribute_names("#d", DELETING);
        let mut writes = vec![
            self.put_new(document_item(document))?,
            TransactWriteItem::builder()
                .condition_check(built(check.build())?)
                .build(),
        ];
        let storage = (document.bytes > 0).then_some(writes.len());
        if storage.is_some() {
            writes.push(self.storage_move(org, i128::from(document.bytes), allowance)?);
        }
        writes.push(self.put_new(audit_item(audit))?);
        match self.send_documents(writes).await? {
            Ok(()) => Ok(()),
            Err(c) if c.failed(Some(0)) => Err(StoreError::AlreadyExists),
            Err(c) if c.failed(Some(1)) => Err(StoreError::Gone),
            Err(c) if c.failed(storage) => Err(StoreError::Full),
            Err(c) => Err(c.classified().of_create()),
        }
    }

    async fn update_document(
        &self, previous: &Document, next: &Document, allowance: u64, audit: Option<&AuditEntry>,
    ) -> StoreResult<()> {
        let delta = i128::from(next.bytes) - i128::from(previous.bytes);
        if delta == 0 && audit.is_none() {
            return self.put_document(next, previous.version).await;
        }
        let mut writes = vec![self.put_versioned(document_item(next), previous.version)?];
        let storage = (delta != 0).then_some(writes.len());
        if storage.is_some() {
            writes.push(self.storage_move(&next.org, delta, allowance)?);
        }
        if let Some(audit) = audit {
            writes.push(self.put_new(audit_item(audit))?);
        }
        match self.send_documents(writes).await? {
            Ok(()) => Ok(()),
            Err(c) if c.failed(Some(0)) => match c.first_stored() {
                Some(_) => Err(StoreError::Conflict),
                None => Err(StoreError::Gone),
            },
            Err(c) if c.failed(storage) => Err(StoreError::Full),
            Err(c) => Err(c.classified().of_replace()),
        }
    }

    async fn get_document(
        &self, org: &OrgId, collection: &CollectionId, id: &DocumentId,
    ) -> StoreResult<Option<Document>> {
        let item = self.get(keys::document(org, collection, id)).await?;
        item.as_ref().map(document_from).transpose()
    }

    async fn get_documents(
        &self, org: &OrgId, asked: &[(CollectionId, DocumentId)],
    ) -> StoreResult<Vec<Document>> {
        let wanted: BTreeSet<_> = asked
            .iter()
            .map(|(c, d)| keys::document(org, c, d))
            .collect();
        let wanted: Vec<_> = wanted.into_iter().collect();
        let mut found = Vec::new();
        for chunk in wanted.chunks(BATCH_GET) {
            for item in self.documents_of(chunk.to_vec()).await? {
                found.push(document_from(&item)?);
            }
        }
        Ok(found)
    }

    async fn list_documents(
        &self, org: &OrgId, collection: &CollectionId,
    ) -> StoreResult<Vec<Document>> {
        let pk = keys::documents_partition(org, collection);
        let items = self.query_items(pk, Some(keys::DOCUMENT), None).await?;
        items.iter().map(document_from).collect()
    }

    async fn delete_document(&self, previous: &Document, audit: &AuditEntry) -> StoreResult<bool> {
        let mut writes = vec![self.delete_at_version(previous)?];
        if previous.bytes > 0 {
            writes.push(self.storage_move(&previous.org, -i128::from(previous.bytes), u64::MAX)?);
        }
        writes.push(self.put_new(audit_item(audit))?);
        match self.send_documents(writes).await? {
            Ok(()) => Ok(true),
            Err(c) if c.failed(Some(0)) => match c.first_stored() {
                Some(_) => Err(StoreError::Conflict),
                None => Ok(false),
            },
            Err(c) => Err(c.classified().of_replace()),
        }
    }

    async fn storage_used(&self, org: &OrgId) -> StoreResult<u64> {
        used_from(self.get(keys::storage(org)).await?.as_ref())
    }

    /// A page of GSI2's `QUEUED` partition, the longest waiting first, then those documents
    /// in one `BatchGetItem` (the index holds keys only, and lags), kept when claimable at
    /// `now`: a live lease is filtered here. Another page only when leases left the first
    /// short.
    async fn claimable_documents(
        &self, now: Timestamp, limit: usize,
    ) -> StoreResult<Vec<Document>> {
        let mut orgs = std::collections::HashSet::new();
        let head = |d: &Document| d.claimable(now) && orgs.insert(d.org.clone());
        let listed = Listed {
            limit,
            page: BATCH_GET,
            pages: CLAIMABLE_PAGES,
        };
        self.listed_documents(keys::QUEUED, None, listed, head)
            .await
    }

    /// GSI2's `QUEUED` partition whole (a page at a time), then those documents, kept while
    /// still queued (the index lags).
    async fn queued_documents(&self, limit: usize) -> StoreResult<Vec<Document>> {
        let listed = Listed {
            limit,
            page: limit.min(BATCH_GET),
            pages: usize::MAX,
        };
        let queued = |d: &Document| d.status == DocumentStatus::Queued;
        self.listed_documents(keys::QUEUED, None, listed, queued)
            .await
    }

    /// GSI2's `UPLOADING` partition below `before`, the oldest first, then those documents in
    /// one `BatchGetItem`, kept when still `uploading` from before `before` (the index lags).
    async fn stale_uploads(&self, before: Timestamp, limit: usize) -> StoreResult<Vec<Document>> {
        let stale = |d: &Document| d.status == DocumentStatus::Uploading && d.updated_at < before;
        let below = keys::stale_before(before);
        let listed = Listed {
            limit,
            page: limit.min(BATCH_GET),
            pages: usize::MAX,
        };
        self.listed_documents(keys::UPLOADING, Some(below), listed, stale)
            .await
    }
}

/// Pages of GSI2's queue read for the heads of the organisations' queues: the heads among the
/// 300 longest-waiting documents.
const CLAIMABLE_PAGES: usize = 3;

/// How much of a GSI2 partition to read: at most `limit` documents kept, `page` entries a
/// query (at most [`BATCH_GET`]), `pages` queries.
struct Listed {
    limit: usize,
    page: usize,
    pages: usize,
}

impl DynamoStore {
    /// At most `listed.limit` documents listed in GSI2's partition `partition` (below the sort
    /// key `below`, when given), in the index's order, that `keep` keeps: a page of the index
    /// at a time, each page's documents read in one `BatchGetItem`; another page only when
    /// `keep` left the first short, up to `listed.pages`.
    async fn listed_documents(
        &self, partition: &str, below: Option<String>, listed: Listed,
        mut keep: impl FnMut(&Document) -> bool,
    ) -> StoreResult<Vec<Document>> {
        let Listed { limit, page, pages } = listed;
        let mut found = Vec::new();
        let mut start = None;
        for _ in 0..pages {
            if found.len() >= limit {
                break;
            }
            let mut query = self
                .client
                .query()
                .table_name(&self.table)
                .index_name(keys::GSI2)
                .expression_attribute_names("#pk", keys::GSI2PK)
                .expression_attribute_values(":pk", s(partition))
                .limit(i32::try_from(page.clamp(1, BATCH_GET)).unwrap_or(100))
                .set_exclusive_start_key(start);
            query = match &below {
                None => query.key_condition_expression("#pk = :pk"),
                Some(below) => query
                    .key_condition_expression("#pk = :pk AND #sk < :below")
                    .expression_attribute_names("#sk", keys::GSI2SK)
                    .expression_attribute_values(":below", s(below)),
            };
            let out = query.send().await.map_err(backend)?;
            let entries = (out.items())
                .iter()
                .map(|i| {
                    Ok((
                        get_s(i, keys::PK)?.to_owned(),
                        get_s(i, keys::SK)?.to_owned(),
                    ))
                })
                .collect::<StoreResult<Vec<_>>>()?;
            for item in self.documents_of(entries).await? {
                let d = document_from(&item)?;
                if keep(&d) && found.len() < limit {
                    found.push(d);
                }
            }
            match out.last_evaluated_key {
                Some(k) => start = Some(k),
                None => break,
            }
        }
        Ok(found)
    }
}
