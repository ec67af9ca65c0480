//! What the documents' use cases need: the store of collections and documents (the truth), the
//! originals' store, the parser and the passages' index (a cache of what the store says is
//! indexed). Every key starts with the organisation.

use async_trait::async_trait;
use bytes::Bytes;

use super::store::StoreResult;
use crate::clock::Timestamp;
use crate::domain::{AuditEntry, Collection, Document, Format, FoundPassage, Passage};
use crate::ids::{CollectionId, DocumentId, OrgId};

/// Collections, documents and the organisation's storage used.
#[async_trait]
pub trait DocumentStore: Send + Sync {
    /// Creates `collection` and writes `audit`, all or nothing. Errors: `AlreadyExists` when
    /// the id is taken.
    async fn create_collection(
        &self, collection: &Collection, audit: &AuditEntry,
    ) -> StoreResult<()>;
    /// The collection; `None` for an id of another organisation's or being deleted.
    async fn get_collection(
        &self, org: &OrgId, id: &CollectionId,
    ) -> StoreResult<Option<Collection>>;
    /// Every collection of the organisation, by id; none being deleted. One query.
    async fn list_collections(&self, org: &OrgId) -> StoreResult<Vec<Collection>>;
    /// Replaces `previous` by `next` (`next.version == previous.version + 1`) and writes
    /// `audit`, all or nothing. Errors: `Gone`, `Conflict` (the stored version moved).
    async fn update_collection(
        &self, previous: &Collection, next: &Collection, audit: &AuditEntry,
    ) -> StoreResult<()>;
    /// Deletes the collection and every document of it, releases their bytes from the
    /// organisation's storage and writes `audit`, answering the documents deleted (whose
    /// originals and passages the caller then removes); `Ok(None)`, writing nothing, when there
    /// is no such collection. From its first write the collection is gone to every other
    /// method; a deletion cut short is finished by calling it again.
    async fn delete_collection(
        &self, org: &OrgId, id: &CollectionId, audit: &AuditEntry,
    ) -> StoreResult<Option<Vec<Document>>>;

    /// Writes the new `document` (generation 1) and adds its bytes to the organisation's
    /// storage, on the conditions that its collection exists and the storage stays within
    /// `allowance` bytes, and writes `audit`, all or nothing.
    /// Errors: `AlreadyExists` (the id), `Gone` (the collection), `Full` (the allowance).
    async fn create_document(
        &self, document: &Document, allowance: u64, audit: &AuditEntry,
    ) -> StoreResult<()>;
    /// Replaces `previous` by `next` (`next.version == previous.version + 1`), moving the
    /// organisation's storage by the difference of their bytes within `allowance`, and writes
    /// `audit` when given, all or nothing. What workers write (a lease, a status) comes with
    /// no audit and the same bytes.
    /// Errors: `Gone`, `Conflict` (the stored version moved), `Full` (the allowance).
    async fn update_document(
        &self, previous: &Document, next: &Document, allowance: u64, audit: Option<&AuditEntry>,
    ) -> StoreResult<()>;
    /// The document; `None` for another organisation's, another collection's or none.
    async fn get_document(
        &self, org: &OrgId, collection: &CollectionId, id: &DocumentId,
    ) -> StoreResult<Option<Document>>;
    /// The documents of `keys` that exist, in no particular order: one batched read, for the
    /// check of a search's hits (at most 100 keys).
    async fn get_documents(
        &self, org: &OrgId, keys: &[(CollectionId, DocumentId)],
    ) -> StoreResult<Vec<Document>>;
    /// Every document of the collection, by id.
    async fn list_documents(
        &self, org: &OrgId, collection: &CollectionId,
    ) -> StoreResult<Vec<Document>>;
    /// Deletes the document stored at `previous.version`, releases its bytes and writes
    /// `audit`, all or nothing; `Ok(false)`, writing nothing, when there is no such document.
    /// Errors: `Conflict` (the stored version moved).
    async fn delete_document(&self, previous: &Document, audit: &AuditEntry) -> StoreResult<bool>;
    /// Bytes of originals the organisation stores.
    async fn storage_used(&self, org: &OrgId) -> StoreResult<u64>;
    /// The longest-waiting document a worker may take at `now` ([`Document::claimable`]) of
    /// each organisation that has one (the head of its queue), the longest waiting first, at
    /// most `limit`: the candidates among which workers let organisations take turns. One
    /// query of an index of queued documents (on DynamoDB, the heads among its first 300).
    async fn claimable_documents(&self, now: Timestamp, limit: usize)
    -> StoreResult<Vec<Document>>;
    /// Every queued document of every organisation, leased or not, the longest waiting first,
    /// at most `limit`: for releasing a dead process's leases. One query of the index of
    /// queued documents (a page at a time on DynamoDB).
    async fn queued_documents(&self, limit: usize) -> StoreResult<Vec<Document>>;
    /// Documents of every organisation `uploading` and last written before `before` (the
    /// announcement of their generation: nothing writes an upload between it and its original
    /// arriving), the oldest first, at most `limit`: uploads cut short, for the sweep. One
    /// query of an index of uploading documents, which a write that moves a document on leaves.
    async fn stale_uploads(&self, before: Timestamp, limit: usize) -> StoreResult<Vec<Document>>;
}

/// Where a document's originals are kept: a file per generation, under the organisation.
#[async_trait]
pub trait Originals: Send + Sync {
    /// Stores `bytes` as the original of `document`'s `generation`, replacing any.
    async fn put(
        &self, org: &OrgId, document: &DocumentId, generation: u64, bytes: Bytes,
    ) -> Result<(), OriginalsError>;
    /// The original of that generation; `None` when it is not stored.
    async fn get(
        &self, org: &OrgId, document: &DocumentId, generation: u64,
    ) -> Result<Option<Bytes>, OriginalsError>;
    /// Removes every generation of `document`. Idempotent.
    async fn delete(&self, org: &OrgId, document: &DocumentId) -> Result<(), OriginalsError>;
    /// Removes the generations of `document` older than `generation`. Idempotent.
    async fn delete_older(
        &self, org: &OrgId, document: &DocumentId, generation: u64,
    ) -> Result<(), OriginalsError>;
    /// Where an admin's browser sends the original of `document`'s generation, announced
    /// `uploading` with its size, when this store takes uploads itself (a pre-signed request to
    /// a bucket): the file then never passes through the service, and the store's own event
    /// tells the service it arrived ([`crate::documents::Documents::arrived`]). `None`, the
    /// default, where the service takes the bytes and stores them
    /// ([`crate::documents::Documents::receive`]).
    async fn upload_target(
        &self, document: &Document,
    ) -> Result<Option<UploadTarget>, OriginalsError> {
        let _ = document;
        Ok(None)
    }
    /// Where a reader's browser fetches the original of `document`'s generation itself, when
    /// this store serves downloads (a pre-signed request to a bucket, valid for minutes,
    /// answering it as an attachment named as uploaded, [`crate::domain::content_disposition`],
    /// of its format's media type): the file then never passes through the service. `None`,
    /// the default, where the service reads the bytes ([`Originals::get`]) and sends them.
    async fn download_link(&self, document: &Document) -> Result<Option<String>, OriginalsError> {
        let _ = document;
        Ok(None)
    }
}

/// A request that stores an announced original: `method` to `url`, with `headers` sent exactly
/// as given (a pre-signed request's signature covers them, the file's size among them) and the
/// file as its body, before `expires_at`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UploadTarget {
    /// `PUT`.
    pub method: String,
    /// Absolute.
    pub url: String,
    /// Names in lower case, in the order to send them.
    pub headers: Vec<(String, String)>,
    pub expires_at: Timestamp,
}

/// The originals' store failed; the cause is for logs.
#[derive(Debug, thiserror::Error)]
#[error("the originals' store failed")]
pub struct OriginalsError(#[source] pub super::BackendError);

/// Turns an original into passages, within the bounds it was made with.
#[async_trait]
pub trait Parser: Send + Sync {
    /// The passages of `bytes`, an original in `format`. Errors: why it cannot be indexed, in
    /// words a person can act on (a bound broken, no text layer, damaged).
    async fn parse(&self, format: Format, bytes: Bytes) -> Result<Vec<Passage>, String>;
}

/// The passages' full-text index: a cache of what the store says is indexed.
#[async_trait]
pub trait PassageIndex: Send + Sync {
    /// Replaces the document's passages by `passages` of `generation`, in one commit, unless
    /// the index holds a newer generation of it already (then nothing changes).
    async fn replace(
        &self, org: &OrgId, collection: &CollectionId, document: &DocumentId, generation: u64,
        passages: Vec<Passage>,
    ) -> Result<(), IndexError>;
    /// Removes every passage of `document`. Idempotent.
    async fn remove(&self, org: &OrgId, document: &DocumentId) -> Result<(), IndexError>;
    /// Removes every passage of `collection`. Idempotent.
    async fn remove_collection(
        &self, org: &OrgId, collection: &CollectionId,
    ) -> Result<(), IndexError>;
    /// The best passages for `query` within `collections`, best first, at most `limit`: the
    /// candidates the caller checks against the store.
    async fn search(
        &self, org: &OrgId, query: &str, collections: &[CollectionId], limit: usize,
    ) -> Result<Vec<FoundPassage>, IndexError>;
    /// The passages of `document`'s `generation` at places `from` to `from + limit - 1`, in
    /// order (score 0): a window of the document for a reader.
    async fn passages(
        &self, org: &OrgId, document: &DocumentId, generation: u64, from: u32, limit: usize,
    ) -> Result<Vec<FoundPassage>, IndexError>;
}

/// The index failed; the cause is for logs.
#[derive(Debug, thiserror::Error)]
#[error("the passages' index failed")]
pub struct IndexError(#[source] pub super::BackendError);
