//! `S3Originals`: the core's `Originals` port on the originals' bucket. (The pre-signed upload
//! of an announced original is `PresignedUploads`', which needs no S3 client.)

use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_s3::Client;
use aws_sdk_s3::presigning::PresigningConfig;
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{Delete, ObjectIdentifier};
use bytes::Bytes;
use knowledge_core::domain::{Document, content_disposition};
use knowledge_core::ids::{DocumentId, OrgId};
use knowledge_core::ports::{BackendError, Originals, OriginalsError};

/// The prefix of every original's key; the bucket notifies the indexer's queue of objects
/// created under it.
pub const ORIGINALS_PREFIX: &str = "org/";

/// How long a download's link may be used: the browser follows it at once (it is the
/// `Location` of the service's answer), so a leaked link is soon worthless.
pub const DOWNLOAD_VALID: Duration = Duration::from_secs(5 * 60);

/// Keys `DeleteObjects` takes at once.
const DELETE_BATCH: usize = 1_000;

/// The key of the original of `document`'s `generation`: `org/<org>/doc/<document>/<generation>`.
/// Ids are letters, digits, `_` and `-`, so a key never needs escaping.
pub fn original_key(org: &OrgId, document: &DocumentId, generation: u64) -> String {
    format!("{}{generation}", document_prefix(org, document))
}

fn document_prefix(org: &OrgId, document: &DocumentId) -> String {
    format!("{ORIGINALS_PREFIX}{org}/doc/{document}/")
}

/// The organisation, document and generation a key of [`original_key`]'s form names, as an S3
/// event gives it (URL-encoded, which such a key never needs); `None` for any other key.
pub fn parse_original_key(key: &str) -> Option<(OrgId, DocumentId, u64)> {
    let rest = key.strip_prefix(ORIGINALS_PREFIX)?;
    let mut parts = rest.split('/');
    let (org, doc, document, generation) =
        (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    if doc != "doc" || parts.next().is_some() {
        return None;
    }
    let generation = (!generation.is_empty() && generation.bytes().all(|b| b.is_ascii_digit()))
        .then(|| generation.parse().ok())
        .flatten()?;
    Some((
        OrgId::parse(org).ok()?,
        DocumentId::parse(document).ok()?,
        generation,
    ))
}

/// [`Originals`] on one bucket. Cloning shares the client.
#[derive(Clone, Debug)]
pub struct S3Originals {
    client: Client,
    bucket: String,
}

impl S3Originals {
    pub fn new(client: Client, bucket: impl Into<String>) -> Self {
        Self {
            client,
            bucket: bucket.into(),
        }
    }

    /// The keys stored under `prefix`, a page of `ListObjectsV2` at a time.
    async fn keys(&self, prefix: &str) -> Result<Vec<String>, OriginalsError> {
        let mut keys = Vec::new();
        let mut pages = (self.client.list_objects_v2())
            .bucket(&self.bucket)
            .prefix(prefix)
            .into_paginator()
            .send();
        while let Some(page) = pages.next().await {
            let page = page.map_err(failed)?;
            keys.extend(
                page.contents()
                    .iter()
                    .filter_map(|o| o.key().map(str::to_owned)),
            );
        }
        Ok(keys)
    }

    /// Deletes `keys`, a thousand at a time.
    async fn delete_keys(&self, keys: &[String]) -> Result<(), OriginalsError> {
        for batch in keys.chunks(DELETE_BATCH) {
            let objects = batch
                .iter()
                .map(|key| ObjectIdentifier::builder().key(key).build())
                .collect::<Result<Vec<_>, _>>()
                .map_err(failed)?;
            let delete = Delete::builder()
                .set_objects(Some(objects))
                .quiet(true)
                .build()
                .map_err(failed)?;
            let out = (self.client.delete_objects())
                .bucket(&self.bucket)
                .delete(delete)
                .send()
                .await
                .map_err(failed)?;
            if let Some(error) = out.errors().first() {
                let message = format!(
                    "{} could not be deleted: {}",
                    error.key().unwrap_or_default(),
                    error.code().unwrap_or_default()
                );
                return Err(OriginalsError(message.into()));
            }
        }
        Ok(())
    }
}

fn failed(error: impl Into<BackendError>) -> OriginalsError {
    OriginalsError(error.into())
}

#[async_trait]
impl Originals for S3Originals {
    async fn put(
        &self, org: &OrgId, document: &DocumentId, generation: u64, bytes: Bytes,
    ) -> Result<(), OriginalsError> {
        (self.client.put_object())
            .bucket(&self.bucket)
            .key(original_key(org, document, generation))
            .body(ByteStream::from(bytes))
            .send()
            .await
            .map_err(failed)?;
        Ok(())
    }

    async fn get(
        &self, org: &OrgId, document: &DocumentId, generation: u64,
    ) -> Result<Option<Bytes>, OriginalsError> {
        let got = (self.client.get_object())
            .bucket(&self.bucket)
            .key(original_key(org, document, generation))
            .send()
            .await;
        let object = match got {
            Ok(object) => object,
            Err(e) if e.as_service_error().is_some_and(|e| e.is_no_such_key()) => return Ok(None),
            Err(e) => return Err(failed(e)),
        };
        let body = object.body.collect().await.map_err(failed)?;
        Ok(Some(body.into_bytes()))
    }

    /// A `GET` of the generation's key pre-signed with the function's credentials (no request
    /// is made), valid for [`DOWNLOAD_VALID`], that S3 answers as an attachment named as
    /// uploaded, of the format's media type: any size (a function's answer is limited to
    /// 6 MB), straight from the bucket, on the bucket's origin (never the app's).
    async fn download_link(&self, document: &Document) -> Result<Option<String>, OriginalsError> {
        let valid = PresigningConfig::expires_in(DOWNLOAD_VALID).map_err(failed)?;
        let request = (self.client.get_object())
            .bucket(&self.bucket)
            .key(original_key(
                &document.org,
                &document.id,
                document.generation,
            ))
            .response_content_disposition(content_disposition(&document.name))
            .response_content_type(document.format.media_type())
            .presigned(valid)
            .await
            .map_err(failed)?;
        Ok(Some(request.uri().to_owned()))
    }

    /// Lists the document's keys (`s3:ListBucket` under `org/`) and deletes them.
    async fn delete(&self, org: &OrgId, document: &DocumentId) -> Result<(), OriginalsError> {
        let keys = self.keys(&document_prefix(org, document)).await?;
        self.delete_keys(&keys).await
    }

    async fn delete_older(
        &self, org: &OrgId, document: &DocumentId, generation: u64,
    ) -> Result<(), OriginalsError> {
        let prefix = document_prefix(org, document);
        let older: Vec<String> = (self.keys(&prefix).await?)
            .into_iter()
            .filter(|key| {
                let older = key
                    .strip_prefix(&prefix)
                    .and_then(|g| g.parse::<u64>().ok());
                older.is_some_and(|g| g < generation)
            })
            .collect();
        self.delete_keys(&older).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_original_key_reads_back_and_no_other_key_does() {
        let org = OrgId::parse("org_acme").unwrap();
        let document = DocumentId::generate();
        let key = original_key(&org, &document, 7);
        assert_eq!(key, format!("org/org_acme/doc/{document}/7"));
        assert_eq!(parse_original_key(&key), Some((org, document.clone(), 7)));
        for other in [
            "index/org_acme/manifest.json".to_owned(),
            format!("org/org_acme/doc/{document}/"),
            format!("org/org_acme/doc/{document}/7/x"),
            format!("org/org_acme/col/{document}/7"),
            format!("org/org%2Facme/doc/{document}/7"),
            format!("org/org_acme/doc/{document}/+7"),
        ] {
            assert_eq!(parse_original_key(&other), None, "{other}");
        }
    }
}
