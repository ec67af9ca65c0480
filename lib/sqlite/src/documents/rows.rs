//! The `collections`, `documents` and `org_storage` rows: their codec and the reads the port
//! and its transactions share.

use knowledge_core::clock::Timestamp;
use knowledge_core::domain::{Access, Collection, Document};
use knowledge_core::ids::{CollectionId, DocumentId, OrgId, UserId};
use knowledge_core::ports::StoreResult;
use rusqlite::{Connection, OptionalExtension, Row, ToSql, params};

use crate::{backend, conversion, text_parse};

pub(super) const COLLECTION_COLUMNS: &str = "org_id, collection_id, name, description, access, \
                                             source, version, created_at, updated_at";

/// In the order of [`with_document`]'s parameters, so that an insert and an update bind alike.
pub(super) const DOCUMENT_COLUMNS: &str = "org_id, collection_id, document_id, name, format, \
                                           bytes, sha256, status, reason, generation, passages, \
                                           attempts, lease_until, version, by_user, created_at, \
                                           updated_at";

/// A collection's access as stored: the domain's JSON (`{"kind":"everyone"}`, or
/// `{"kind":"groups","groups":[…]}`), at most 20 group ids.
pub(super) fn access_text(access: &Access) -> StoreResult<String> {
    serde_json::to_string(access).map_err(backend)
}

pub(super) fn collection_from(r: &Row<'_>) -> rusqlite::Result<Collection> {
    Ok(Collection {
        org: OrgId::parse(&r.get::<_, String>(0)?).map_err(conversion)?,
        id: CollectionId::parse(&r.get::<_, String>(1)?).map_err(conversion)?,
        name: r.get(2)?,
        description: r.get(3)?,
        access: serde_json::from_str(&r.get::<_, String>(4)?).map_err(conversion)?,
        source: text_parse(r.get(5)?)?,
        version: r.get(6)?,
        created_at: Timestamp(r.get(7)?),
        updated_at: Timestamp(r.get(8)?),
    })
}

pub(super) fn document_from(r: &Row<'_>) -> rusqlite::Result<Document> {
    let by: Option<String> = r.get(14)?;
    Ok(Document {
        org: OrgId::parse(&r.get::<_, String>(0)?).map_err(conversion)?,
        collection: CollectionId::parse(&r.get::<_, String>(1)?).map_err(conversion)?,
        id: DocumentId::parse(&r.get::<_, String>(2)?).map_err(conversion)?,
        name: r.get(3)?,
        format: text_parse(r.get(4)?)?,
        bytes: r.get(5)?,
        sha256: r.get(6)?,
        status: text_parse(r.get(7)?)?,
        reason: r.get(8)?,
        generation: r.get(9)?,
        passages: r.get(10)?,
        attempts: r.get(11)?,
        lease_until: r.get::<_, Option<i64>>(12)?.map(Timestamp),
        version: r.get(13)?,
        by: by
            .map(|u| UserId::parse(&u))
            .transpose()
            .map_err(conversion)?,
        created_at: Timestamp(r.get(15)?),
        updated_at: Timestamp(r.get(16)?),
    })
}

/// Calls `f` with every field of `d` as parameters `?1` to `?17`, in [`DOCUMENT_COLUMNS`]'s order.
pub(super) fn with_document<T>(d: &Document, f: impl FnOnce(&[&dyn ToSql]) -> T) -> T {
    f(params![
        d.org.as_str(),
        d.collection.as_str(),
        d.id.as_str(),
        d.name,
        d.format.as_str(),
        d.bytes,
        d.sha256,
        d.status.as_str(),
        d.reason,
        d.generation,
        d.passages,
        d.attempts,
        d.lease_until.map(Timestamp::millis),
        d.version,
        d.by.as_ref().map(UserId::as_str),
        d.created_at.millis(),
        d.updated_at.millis(),
    ])
}

pub(super) fn read_collection(
    c: &Connection, org: &OrgId, id: &CollectionId,
) -> rusqlite::Result<Option<Collection>> {
    c.prepare_cached(&format!(
        "SELECT {COLLECTION_COLUMNS} FROM collections WHERE org_id = ?1 AND collection_id = ?2"
    ))?
    .query_row([org.as_str(), id.as_str()], collection_from)
    .optional()
}

pub(super) fn read_document(
    c: &Connection, org: &OrgId, collection: &CollectionId, id: &DocumentId,
) -> rusqlite::Result<Option<Document>> {
    c.prepare_cached(&format!(
        "SELECT {DOCUMENT_COLUMNS} FROM documents
         WHERE org_id = ?1 AND collection_id = ?2 AND document_id = ?3"
    ))?
    .query_row(
        [org.as_str(), collection.as_str(), id.as_str()],
        document_from,
    )
    .optional()
}

/// The stored version and bytes of `d`'s row, for a write conditional on its version.
pub(super) fn stored_version(c: &Connection, d: &Document) -> StoreResult<Option<(u64, u64)>> {
    c.prepare_cached(
        "SELECT version, bytes FROM documents
         WHERE org_id = ?1 AND collection_id = ?2 AND document_id = ?3",
    )
    .and_then(|mut s| {
        s.query_row(
            [d.org.as_str(), d.collection.as_str(), d.id.as_str()],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()
    })
    .map_err(backend)
}

/// Bytes of originals `org` stores: its `org_storage` row, none before its first upload.
pub(super) fn used(c: &Connection, org: &OrgId) -> rusqlite::Result<u64> {
    let used = c
        .prepare_cached("SELECT used_bytes FROM org_storage WHERE org_id = ?1")?
        .query_row([org.as_str()], |r| r.get(0))
        .optional()?;
    Ok(used.unwrap_or(0))
}
