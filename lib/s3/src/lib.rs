//! The organisation's documents in one private S3 bucket, for the service on AWS
//! (`docs/design/documents.md`, "Where the index lives on AWS" and "Uploads on AWS"):
//!
//! - [`S3Originals`], the core's `Originals` port: each generation of a document's original
//!   under `org/<org>/doc/<document>/<generation>`; and [`PresignedUploads`], a pre-signed
//!   `PUT` of that key for the admin's browser, so that no file passes through API Gateway or a
//!   function (signed without an S3 client);
//! - [`S3Index`], the core's `PassageIndex` port: each organisation's tantivy index
//!   (`knowledge-search`) kept under `index/<org>/`, its files written once each and named by
//!   a manifest that a writer replaces only if no other writer replaced it first (a conditional
//!   `PUT`), and copied to the function's local disk, where it is searched.
//!
//! The originals and the index live under different prefixes because the bucket tells the
//! indexer's queue of every object created under `org/`: an index file written there would
//! wake the indexer for nothing.

mod index;
mod originals;
mod presign;

use aws_sdk_s3::error::SdkError;

pub use index::{INDEX_PREFIX, MANIFEST, S3Index};
pub use originals::{
    DOWNLOAD_VALID, ORIGINALS_PREFIX, S3Originals, original_key, parse_original_key,
};
pub use presign::{PresignedUploads, UPLOAD_VALID, bucket_url, uploads_origin};

/// The S3 client configuration of `shared` (the one AWS configuration of a cold start, loaded
/// through `knowledge_aws_sdk`): virtual-hosted addressing on AWS, path-style where an endpoint
/// is set (moto on loopback has no bucket subdomains).
pub fn config(shared: &aws_config::SdkConfig) -> aws_sdk_s3::config::Builder {
    aws_sdk_s3::config::Builder::from(shared).force_path_style(shared.endpoint_url().is_some())
}

/// The HTTP status of a failed request's answer, if one came.
fn status<E>(error: &SdkError<E, aws_sdk_s3::config::http::HttpResponse>) -> Option<u16> {
    error.raw_response().map(|r| r.status().as_u16())
}
