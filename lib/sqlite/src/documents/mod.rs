//! [`DocumentStore`] on SQLite: the `collections` and `documents` tables, the partial indexes
//! `documents_queued` a worker's claim reads and `documents_uploading` the sweep reads, and
//! `org_storage`, a counter row per organisation moved in each write's immediate transaction
//! (with its audit entry), so that uploads at the same time never pass the allowance together.

use async_trait::async_trait;
use knowledge_core::clock::Timestamp;
use knowledge_core::domain::{AuditEntry, Collection, Document};
use knowledge_core::ids::{CollectionId, DocumentId, OrgId};
use knowledge_core::ports::{DocumentStore, StoreError, StoreResult};
use rusqlite::{Transaction, params};

use crate::directory::{insert_audit, unique};
use crate::{SqliteStore, backend};

mod rows;

use rows::{
    COLLECTION_COLUMNS, DOCUMENT_COLUMNS, access_text, collection_from, document_from,
    read_collection, read_document, stored_version, used, with_document,
};

/// Moves `org`'s storage by `delta` bytes, refusing to pass `allowance` when it grows. The
/// immediate transaction it runs in holds the file's write lock, so the read and the write of
/// the counter are one step for every writer, in this process or another.
fn charge(tx: &Transaction<'_>, org: &OrgId, delta: i128, allowance: u64) -> StoreResult<()> {
    let before = used(tx, org).map_err(backend)?;
    let next = u64::try_from(i128::from(before) + delta).unwrap_or(0);
    if delta > 0 && next > allowance {
        return Err(StoreError::Full);
    }
    tx.prepare_cached(
        "INSERT INTO org_storage (org_id, used_bytes) VALUES (?1, ?2)
         ON CONFLICT (org_id) DO UPDATE SET used_bytes = excluded.used_bytes",
    )
    .and_then(|mut s| s.execute(params![org.as_str(), next]))
    .map_err(backend)?;
    Ok(())
}

fn create_collection(tx: &Transaction<'_>, c: &Collection, a: &AuditEntry) -> StoreResult<()> {
    let inserted = tx.execute(
        &format!(
            "INSERT INTO collections ({COLLECTION_COLUMNS})
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"
        ),
        params![
            c.org.as_str(),
            c.id.as_str(),
            c.name,
            c.description,
            access_text(&c.access)?,
            c.source.as_str(),
            c.version,
            c.created_at.millis(),
            c.updated_at.millis(),
        ],
    );
    unique(inserted)?;
    insert_audit(tx, a)
}

fn update_collection(
    tx: &Transaction<'_>, p: &Collection, c: &Collection, a: &AuditEntry,
) -> StoreResult<()> {
    let updated = tx
        .execute(
            "UPDATE collections SET name = ?3, description = ?4, access = ?5, source = ?6,
                    version = ?7, updated_at = ?8
             WHERE org_id = ?1 AND collection_id = ?2 AND version = ?9",
            params![
                c.org.as_str(),
                c.id.as_str(),
                c.name,
                c.description,
                access_text(&c.access)?,
                c.source.as_str(),
                c.version,
                c.updated_at.millis(),
                p.version,
            ],
        )
        .map_err(backend)?;
    match updated {
        1 => insert_audit(tx, a),
        _ => match read_collection(tx, &c.org, &c.id).map_err(backend)? {
            Some(_) => Err(StoreError::Conflict),
            None => Err(StoreError::Gone),
        },
    }
}

fn delete_collection(
    tx: &Transaction<'_>, o: &OrgId, id: &CollectionId, a: &AuditEntry,
) -> StoreResult<Option<Vec<Document>>> {
    let p = [o.as_str(), id.as_str()];
    let n = (tx.execute(
        "DELETE FROM collections WHERE org_id = ?1 AND collection_id = ?2",
        p,
    ))
    .map_err(backend)?;
    if n == 0 {
        return Ok(None);
    }
    let gone = tx
        .prepare(&format!(
            "DELETE FROM documents WHERE org_id = ?1 AND collection_id = ?2
             RETURNING {DOCUMENT_COLUMNS}"
        ))
        .and_then(|mut s| {
            s.query_map(p, document_from)?
                .collect::<rusqlite::Result<Vec<_>>>()
        })
        .map_err(backend)?;
    let bytes: u64 = gone.iter().map(|d| d.bytes).sum();
    charge(tx, o, -i128::from(bytes), u64::MAX)?;
    insert_audit(tx, a)?;
    Ok(Some(gone))
}

fn insert_document(tx: &Transaction<'_>, d: &Document) -> StoreResult<()> {
    let insert = format!(
        "INSERT INTO documents ({DOCUMENT_COLUMNS})
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)"
    );
    unique(with_document(d, |p| tx.execute(&insert, p))).map(|_| ())
}

fn create_document(
    tx: &Transaction<'_>, d: &Document, allowance: u64, a: &AuditEntry,
) -> StoreResult<()> {
    insert_document(tx, d)?;
    if read_collection(tx, &d.org, &d.collection)
        .map_err(backend)?
        .is_none()
    {
        return Err(StoreError::Gone);
    }
    charge(tx, &d.org, i128::from(d.bytes), allowance)?;
    insert_audit(tx, a)
}

fn update_document(
    tx: &Transaction<'_>, p: &Document, d: &Document, allowance: u64, a: Option<&AuditEntry>,
) -> StoreResult<()> {
    let (version, bytes) = stored_version(tx, d)?.ok_or(StoreError::Gone)?;
    if version != p.version {
        return Err(StoreError::Conflict);
    }
    charge(
        tx,
        &d.org,
        i128::from(d.bytes) - i128::from(bytes),
        allowance,
    )?;
    let update = "UPDATE documents SET name = ?4, format = ?5, bytes = ?6, sha256 = ?7,
            status = ?8, reason = ?9, generation = ?10, passages = ?11, attempts = ?12,
            lease_until = ?13, version = ?14, by_user = ?15, created_at = ?16, updated_at = ?17
        WHERE org_id = ?1 AND collection_id = ?2 AND document_id = ?3";
    with_document(d, |p| tx.execute(update, p)).map_err(backend)?;
    match a {
        Some(a) => insert_audit(tx, a),
        None => Ok(()),
    }
}

fn delete_document(tx: &Transaction<'_>, p: &Document, a: &AuditEntry) -> StoreResult<bool> {
    let Some((version, bytes)) = stored_version(tx, p)? else {
        return Ok(false);
    };
    if version != p.version {
        return Err(StoreError::Conflict);
    }
    tx.execute(
        "DELETE FROM documents WHERE org_id = ?1 AND collection_id = ?2 AND document_id = ?3",
        [p.org.as_str(), p.collection.as_str(), p.id.as_str()],
    )
    .map_err(backend)?;
    charge(tx, &p.org, -i128::from(bytes), u64::MAX)?;
    insert_audit(tx, a)?;
    Ok(true)
}

#[async_trait]
impl DocumentStore for SqliteStore {
    async fn create_collection(
        &self, collection: &Collection, audit: &AuditEntry,
    ) -> StoreResult<()> {
        let (c, a) = (collection.clone(), audit.clone());
        self.write(move |tx| create_collection(tx, &c, &a)).await
    }

    async fn get_collection(
        &self, org: &OrgId, id: &CollectionId,
    ) -> StoreResult<Option<Collection>> {
        let (o, i) = (org.clone(), id.clone());
        self.read(move |c| read_collection(c, &o, &i)).await
    }

    async fn list_collections(&self, org: &OrgId) -> StoreResult<Vec<Collection>> {
        let o = org.clone();
        self.read(move |c| {
            let mut stmt = c.prepare_cached(&format!(
                "SELECT {COLLECTION_COLUMNS} FROM collections WHERE org_id = ?1
                 ORDER BY collection_id"
            ))?;
            let rows = stmt.query_map([o.as_str()], collection_from)?;
            rows.collect()
        })
        .await
    }

    async fn update_collection(
        &self, previous: &Collection, next: &Collection, audit: &AuditEntry,
    ) -> StoreResult<()> {
        let (p, c, a) = (previous.clone(), next.clone(), audit.clone());
        self.write(move |tx| update_collection(tx, &p, &c, &a))
            .await
    }

    async fn delete_collection(
        &self, org: &OrgId, id: &CollectionId, audit: &AuditEntry,
    ) -> StoreResult<Option<Vec<Document>>> {
        let (o, i, a) = (org.clone(), id.clone(), audit.clone());
        self.write(move |tx| delete_collection(tx, &o, &i, &a))
            .await
    }

    async fn create_document(
        &self, document: &Document, allowance: u64, audit: &AuditEntry,
    ) -> StoreResult<()> {
        let (d, a) = (document.clone(), audit.clone());
        self.write(move |tx| create_document(tx, &d, allowance, &a))
            .await
    }

    async fn update_document(
        &self, previous: &Document, next: &Document, allowance: u64, audit: Option<&AuditEntry>,
    ) -> StoreResult<()> {
        let (p, d, a) = (previous.clone(), next.clone(), audit.cloned());
        self.write(move |tx| update_document(tx, &p, &d, allowance, a.as_ref()))
            .await
    }

    async fn get_document(
        &self, org: &OrgId, collection: &CollectionId, id: &DocumentId,
    ) -> StoreResult<Option<Document>> {
        let (o, c, i) = (org.clone(), collection.clone(), id.clone());
        self.read(move |conn| read_document(conn, &o, &c, &i)).await
    }

    async fn get_documents(
        &self, org: &OrgId, keys: &[(CollectionId, DocumentId)],
    ) -> StoreResult<Vec<Document>> {
        let (o, ks) = (org.clone(), keys.to_vec());
        self.read(move |c| {
            let mut found = Vec::with_capacity(ks.len());
            for (collection, id) in &ks {
                found.extend(read_document(c, &o, collection, id)?);
            }
            Ok(found)
        })
        .await
    }

    async fn list_documents(
        &self, org: &OrgId, collection: &CollectionId,
    ) -> StoreResult<Vec<Document>> {
        let (o, col) = (org.clone(), collection.clone());
        self.read(move |c| {
            let mut stmt = c.prepare_cached(&format!(
                "SELECT {DOCUMENT_COLUMNS} FROM documents WHERE org_id = ?1 AND collection_id = ?2
                 ORDER BY document_id"
            ))?;
            let rows = stmt.query_map([o.as_str(), col.as_str()], document_from)?;
            rows.collect()
        })
        .await
    }

    async fn delete_document(&self, previous: &Document, audit: &AuditEntry) -> StoreResult<bool> {
        let (p, a) = (previous.clone(), audit.clone());
        self.write(move |tx| delete_document(tx, &p, &a)).await
    }

    async fn storage_used(&self, org: &OrgId) -> StoreResult<u64> {
        let o = org.clone();
        self.read(move |c| used(c, &o)).await
    }

    async fn claimable_documents(
        &self, now: Timestamp, limit: usize,
    ) -> StoreResult<Vec<Document>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.read(move |c| {
            let mut stmt = c.prepare_cached(&format!(
                "SELECT {DOCUMENT_COLUMNS} FROM (
                   SELECT *, ROW_NUMBER() OVER (PARTITION BY org_id ORDER BY updated_at) AS turn
                   FROM documents INDEXED BY documents_queued
                   WHERE status = 'queued' AND (lease_until IS NULL OR lease_until <= ?1))
                 WHERE turn = 1 ORDER BY updated_at LIMIT ?2"
            ))?;
            let rows = stmt.query_map(params![now.millis(), limit], document_from)?;
            rows.collect()
        })
        .await
    }

    async fn queued_documents(&self, limit: usize) -> StoreResult<Vec<Document>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.read(move |c| {
            let mut stmt = c.prepare_cached(&format!(
                "SELECT {DOCUMENT_COLUMNS} FROM documents INDEXED BY documents_queued
                 WHERE status = 'queued' ORDER BY updated_at LIMIT ?1"
            ))?;
            let rows = stmt.query_map(params![limit], document_from)?;
            rows.collect()
        })
        .await
    }

    async fn stale_uploads(&self, before: Timestamp, limit: usize) -> StoreResult<Vec<Document>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.read(move |c| {
            let mut stmt = c.prepare_cached(&format!(
                "SELECT {DOCUMENT_COLUMNS} FROM documents INDEXED BY documents_uploading
                 WHERE status = 'uploading' AND updated_at < ?1
                 ORDER BY updated_at LIMIT ?2"
            ))?;
            let rows = stmt.query_map(params![before.millis(), limit], document_from)?;
            rows.collect()
        })
        .await
    }
}
