//! `PresignedUploads`: `PUT`s of the originals' keys pre-signed with the function's own
//! credentials (SigV4 in the query string, `aws-sigv4`), for the function that announces
//! uploads. Signing needs no S3 client: the admin function links none (the S3 client, with the
//! checksums it computes, is most of two megabytes of a function's binary).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider};
use aws_sigv4::http_request::{
    PercentEncodingMode, SignableBody, SignableRequest, SignatureLocation, SigningSettings,
    UriPathNormalizationMode, sign,
};
use aws_sigv4::sign::v4;
use aws_smithy_runtime_api::client::identity::Identity;
use knowledge_core::clock::Timestamp;
use knowledge_core::domain::Document;
use knowledge_core::ports::{BackendError, UploadTarget};

use crate::original_key;

/// How long a pre-signed upload may be used: long enough to send 25 MiB over a slow line, short
/// enough that a leaked URL is soon worthless (and it can only write the one generation it
/// names, of the size announced).
pub const UPLOAD_VALID: Duration = Duration::from_secs(15 * 60);

/// Pre-signs the uploads of one bucket's originals. Cloning shares the credentials.
#[derive(Clone, Debug)]
pub struct PresignedUploads {
    credentials: SharedCredentialsProvider,
    region: String,
    /// The bucket's URL, to which a key is appended: virtual-hosted on AWS
    /// (`https://<bucket>.s3.<region>.amazonaws.com`), path-style under an endpoint set in the
    /// configuration (`<endpoint>/<bucket>`, moto on loopback).
    base: String,
}

/// The URL of `bucket`'s objects (a key is appended): virtual-hosted on AWS
/// (`https://<bucket>.s3.<region>.amazonaws.com`), path-style under `endpoint`
/// (`<endpoint>/<bucket>`, moto on loopback).
pub fn bucket_url(bucket: &str, region: &str, endpoint: Option<&str>) -> String {
    match endpoint {
        Some(endpoint) => format!("{}/{bucket}", endpoint.trim_end_matches('/')),
        None => format!("https://{bucket}.s3.{region}.amazonaws.com"),
    }
}

/// The origin (scheme, host and port) that browsers send [`PresignedUploads`]' `PUT`s to: what
/// the app's Content-Security-Policy must let it connect to. `None` when the URL has no origin
/// a policy could name (an endpoint that is not an `http(s)` URL).
pub fn uploads_origin(bucket: &str, region: &str, endpoint: Option<&str>) -> Option<String> {
    let url = bucket_url(bucket, region, endpoint);
    let (scheme, rest) = url.split_once("://")?;
    let authority = rest.split('/').next()?;
    let plain = |c: char| c.is_ascii_alphanumeric() || ".-:[]".contains(c);
    let fine = matches!(scheme, "http" | "https") && !authority.is_empty();
    (fine && authority.chars().all(plain)).then(|| format!("{scheme}://{authority}"))
}

impl PresignedUploads {
    /// The uploads of `bucket`, signed with the credentials and in the region of `shared` (the
    /// cold start's AWS configuration). Errors: `shared` has neither.
    pub fn new(shared: &aws_config::SdkConfig, bucket: &str) -> Result<Self, BackendError> {
        let credentials =
            (shared.credentials_provider()).ok_or("no AWS credentials to sign with")?;
        let region = shared
            .region()
            .ok_or("no AWS region to sign for")?
            .to_string();
        let base = bucket_url(bucket, &region, shared.endpoint_url());
        Ok(Self {
            credentials,
            region,
            base,
        })
    }

    /// A `PUT` of the original of `document`'s generation, valid for [`UPLOAD_VALID`], whose
    /// signature covers `Content-Length` (the size announced: S3 refuses any other),
    /// `Content-Type` (the format's media type) and the key. The browser sets `Content-Length`
    /// itself from the file, so the headers answered are the others.
    pub async fn target(&self, document: &Document) -> Result<UploadTarget, BackendError> {
        let key = original_key(&document.org, &document.id, document.generation);
        let url = format!("{}/{key}", self.base);
        let length = document.bytes.to_string();
        let media_type = document.format.media_type();
        let headers = [
            ("content-length", length.as_str()),
            ("content-type", media_type),
        ];
        let credentials = self.credentials.provide_credentials().await?;
        let identity = Identity::from(credentials);
        let mut settings = SigningSettings::default();
        settings.signature_location = SignatureLocation::QueryParams;
        settings.expires_in = Some(UPLOAD_VALID);
        settings.percent_encoding_mode = PercentEncodingMode::Single;
        settings.uri_path_normalization_mode = UriPathNormalizationMode::Disabled;
        let now = SystemTime::now();
        let params = v4::SigningParams::builder()
            .identity(&identity)
            .region(&self.region)
            .name("s3")
            .time(now)
            .settings(settings)
            .build()?
            .into();
        let signable = SignableRequest::new(
            "PUT",
            url.as_str(),
            headers.iter().copied(),
            SignableBody::UnsignedPayload,
        )?;
        let (instructions, _) = sign(signable, &params)?.into_parts();
        let mut request = http::Request::put(url.as_str()).body(())?;
        instructions.apply_to_request_http1x(&mut request);
        let expires = now.duration_since(UNIX_EPOCH)?.saturating_add(UPLOAD_VALID);
        Ok(UploadTarget {
            method: "PUT".into(),
            url: request.uri().to_string(),
            headers: vec![("content-type".into(), media_type.into())],
            expires_at: Timestamp(i64::try_from(expires.as_millis())?),
        })
    }
}
