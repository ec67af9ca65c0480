//! An index's files between the bucket and a local folder: the manifest read and written on
//! condition, files downloaded and uploaded, and the folder made what a manifest says.

use std::collections::BTreeSet;
use std::io;
use std::path::Path;

use aws_sdk_s3::Client;
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{Delete, ObjectIdentifier};
use knowledge_core::ids::OrgId;
use knowledge_core::ports::BackendError;
use knowledge_search::{Committed, SearchError};
use serde::{Deserialize, Serialize};
use tokio::io::AsyncWriteExt;

use super::{Copy, INDEX_PREFIX, MANIFEST};
use crate::status;

/// What the manifest names: the committed `meta.json` and the files it needs.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub(super) struct Manifest {
    /// `None` for an index nothing was ever written to.
    pub meta: Option<String>,
    pub files: BTreeSet<String>,
}

/// The manifest as fetched.
pub(super) enum Fetched {
    /// Still the one of the ETag given.
    Unchanged,
    /// No index yet.
    Missing,
    Found {
        etag: String,
        manifest: Manifest,
    },
}

/// What came of publishing a commit.
pub(super) enum Published {
    Yes,
    /// The commit changed nothing.
    Nothing,
    /// Another writer published first.
    Lost,
}

fn key(org: &OrgId, name: &str) -> String {
    format!("{INDEX_PREFIX}{org}/{name}")
}

/// A name tantivy gave a file of the index: no separator, no dot first (its lock and its own
/// bookkeeping start with one, and so do this module's downloads in progress).
fn plain(name: &str) -> bool {
    !name.is_empty() && !name.starts_with('.') && !name.contains(['/', '\\'])
}

/// The manifest, unless it still has ETag `known`.
pub(super) async fn fetch_manifest(
    client: &Client, bucket: &str, org: &OrgId, known: Option<&str>,
) -> Result<Fetched, BackendError> {
    let got = (client.get_object())
        .bucket(bucket)
        .key(key(org, MANIFEST))
        .set_if_none_match(known.map(str::to_owned))
        .send()
        .await;
    let object = match got {
        Ok(object) => object,
        Err(e) if status(&e) == Some(304) => return Ok(Fetched::Unchanged),
        Err(e) if e.as_service_error().is_some_and(|e| e.is_no_such_key()) => {
            return Ok(Fetched::Missing);
        }
        Err(e) => return Err(e.into()),
    };
    let etag = object.e_tag().ok_or("the manifest has no ETag")?.to_owned();
    let body = object.body.collect().await?.into_bytes();
    let manifest: Manifest = serde_json::from_slice(&body)?;
    if let Some(bad) = manifest.files.iter().find(|f| !plain(f)) {
        return Err(format!("the manifest names a file {bad:?}").into());
    }
    Ok(Fetched::Found { etag, manifest })
}

/// Downloads the files of `manifest` that the folder does not hold as the bucket does (those
/// `copy` does not vouch for, or that are gone); `false` when one is not in the bucket any
/// more (a newer manifest retired it).
pub(super) async fn download_missing(
    client: &Client, bucket: &str, org: &OrgId, folder: &Path, copy: &Copy, manifest: &Manifest,
) -> Result<bool, BackendError> {
    tokio::fs::create_dir_all(folder).await?;
    for name in &manifest.files {
        let path = folder.join(name);
        if copy.files.contains(name) && tokio::fs::try_exists(&path).await? {
            continue;
        }
        let got = (client.get_object())
            .bucket(bucket)
            .key(key(org, name))
            .send()
            .await;
        let mut object = match got {
            Ok(object) => object,
            Err(e) if e.as_service_error().is_some_and(|e| e.is_no_such_key()) => {
                return Ok(false);
            }
            Err(e) => return Err(e.into()),
        };
        let partial = folder.join(format!(".download-{name}"));
        let mut file = tokio::fs::File::create(&partial).await?;
        while let Some(chunk) = object.body.try_next().await? {
            file.write_all(&chunk).await?;
        }
        file.sync_all().await?;
        tokio::fs::rename(&partial, &path).await?;
    }
    Ok(true)
}

/// Makes `folder` the index of `meta` (none: an empty folder) with the files `keep`: its
/// `meta.json` written, and every other file of the index deleted. Tantivy's own bookkeeping
/// (its dot files) stays. Blocking.
pub(super) fn settle_folder(
    folder: &Path, meta: Option<&str>, keep: &BTreeSet<String>,
) -> Result<(), SearchError> {
    let io = |source: io::Error| SearchError::Io {
        path: folder.to_owned(),
        source,
    };
    std::fs::create_dir_all(folder).map_err(io)?;
    for entry in std::fs::read_dir(folder).map_err(io)? {
        let entry = entry.map_err(io)?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else {
            continue;
        };
        let listed = keep.contains(name) || (name == "meta.json" && meta.is_some());
        if plain(name) && !listed {
            std::fs::remove_file(entry.path()).map_err(io)?;
        }
        if name.starts_with(".download-") {
            std::fs::remove_file(entry.path()).map_err(io)?;
        }
    }
    if let Some(meta) = meta {
        let partial = folder.join(".meta.json.partial");
        std::fs::write(&partial, meta).map_err(io)?;
        std::fs::rename(&partial, folder.join("meta.json")).map_err(io)?;
    }
    Ok(())
}

/// Uploads the files of `committed` the bucket does not hold yet, each only if no file of
/// that name is there (a rival commit's), then the manifest only if it is still the one of
/// `copy`. Answers the new manifest's ETag, or `None` when another writer came first (the
/// files uploaded here are then deleted again).
pub(super) async fn publish(
    client: &Client, bucket: &str, org: &OrgId, folder: &Path, copy: &Copy, committed: &Committed,
) -> Result<Option<String>, BackendError> {
    let mut uploaded = Vec::new();
    let published = async {
        for name in committed.files.difference(&copy.files) {
            // Read whole: the SDK's HTTP client sends bodies it holds (knowledge-aws-sdk).
            let body = ByteStream::from(tokio::fs::read(folder.join(name)).await?);
            let put = (client.put_object())
                .bucket(bucket)
                .key(key(org, name))
                .if_none_match("*")
                .body(body)
                .send()
                .await;
            match put {
                Ok(_) => uploaded.push(name.clone()),
                Err(e) if lost(status(&e)) => return Ok(None),
                Err(e) => return Err(BackendError::from(e)),
            }
        }
        let manifest = Manifest {
            meta: Some(committed.meta.clone()),
            files: committed.files.clone(),
        };
        let put = (client.put_object())
            .bucket(bucket)
            .key(key(org, MANIFEST))
            .content_type("application/json")
            .body(ByteStream::from(serde_json::to_vec(&manifest)?));
        let put = match &copy.etag {
            Some(etag) => put.if_match(etag),
            None => put.if_none_match("*"),
        };
        match put.send().await {
            Ok(out) => Ok(Some(
                out.e_tag()
                    .ok_or("the manifest was written without an ETag")?
                    .to_owned(),
            )),
            Err(e) if lost(status(&e)) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }
    .await;
    if !matches!(published, Ok(Some(_))) {
        delete(client, bucket, org, &uploaded).await;
    }
    published
}

/// Whether a conditional write's answer says another writer came first: 412 (the condition
/// failed), 409 (a conditional write of the same key in flight), 404 (`If-Match` on a key
/// deleted meanwhile).
fn lost(status: Option<u16>) -> bool {
    matches!(status, Some(412 | 409 | 404))
}

/// Deletes `names` from `org`'s index in the bucket; a failure is logged (the files are only
/// storage no manifest names).
pub(super) async fn delete(client: &Client, bucket: &str, org: &OrgId, names: &[String]) {
    for batch in names.chunks(1_000) {
        let objects: Result<Vec<_>, _> = batch
            .iter()
            .map(|name| ObjectIdentifier::builder().key(key(org, name)).build())
            .collect();
        let delete =
            objects.and_then(|o| Delete::builder().set_objects(Some(o)).quiet(true).build());
        let deleted = match delete {
            Ok(delete) => (client.delete_objects())
                .bucket(bucket)
                .delete(delete)
                .send()
                .await
                .map(drop)
                .map_err(BackendError::from),
            Err(e) => Err(e.into()),
        };
        if let Err(e) = deleted {
            tracing::warn!(error = ?e, org = %org, "index files no manifest names stay in the bucket");
        }
    }
}
