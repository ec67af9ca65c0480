//! `S3Originals` on moto: originals stored by generation and removed; and `PresignedUploads`,
//! the pre-signed upload of an announced original, whose signature S3 (and the signature check
//! moto is run with, `scripts/moto_server.py`) holds the sender to: the key, the size, the
//! type, the time.

mod common;

use aws_credential_types::provider::SharedCredentialsProvider;
use bytes::Bytes;
use knowledge_core::clock::{Clock, SystemClock};
use knowledge_core::domain::{Document, DocumentStatus, Format};
use knowledge_core::ids::{CollectionId, DocumentId, OrgId};
use knowledge_core::ports::Originals;
use knowledge_s3::{PresignedUploads, S3Originals, original_key};

use common::Bucket;

fn announced(org: &OrgId, bytes: u64) -> Document {
    let now = SystemClock.now();
    Document {
        org: org.clone(),
        collection: CollectionId::generate(),
        id: DocumentId::generate(),
        name: "notes.md".into(),
        format: Format::Markdown,
        bytes,
        sha256: String::new(),
        status: DocumentStatus::Uploading,
        reason: None,
        generation: 2,
        passages: 0,
        attempts: 0,
        lease_until: None,
        version: 1,
        by: None,
        created_at: now,
        updated_at: now,
    }
}

#[tokio::test]
async fn originals_are_kept_by_generation_and_removed_older_first_then_all() {
    knowledge_test_support::skip_without_dynamodb!();
    let bucket = Bucket::new().await;
    let originals = S3Originals::new(bucket.client.clone(), &bucket.name);
    let org = OrgId::parse("org_acme").unwrap();
    let (doc, other) = (DocumentId::generate(), DocumentId::generate());
    assert_eq!(originals.get(&org, &doc, 1).await.unwrap(), None);
    for generation in 1..=3 {
        let bytes = Bytes::from(format!("version {generation}"));
        originals.put(&org, &doc, generation, bytes).await.unwrap();
    }
    originals
        .put(&org, &other, 1, Bytes::from_static(b"kept"))
        .await
        .unwrap();
    assert_eq!(
        originals.get(&org, &doc, 2).await.unwrap().as_deref(),
        Some(&b"version 2"[..])
    );
    originals.delete_older(&org, &doc, 3).await.unwrap();
    assert_eq!(bucket.keys("org/").await.len(), 2);
    assert_eq!(originals.get(&org, &doc, 2).await.unwrap(), None);
    originals.delete(&org, &doc).await.unwrap();
    originals.delete(&org, &doc).await.unwrap();
    assert_eq!(bucket.keys("org/").await, [original_key(&org, &other, 1)]);
}

#[tokio::test]
async fn a_pre_signed_upload_takes_the_announced_file_and_refuses_any_other_size() {
    knowledge_test_support::skip_without_dynamodb!();
    let bucket = Bucket::new().await;
    let originals = S3Originals::new(bucket.client.clone(), &bucket.name);
    // The originals' store takes no upload itself: the admin function's pre-signer answers.
    let org = OrgId::parse("org_acme").unwrap();
    let file = b"# Travel\n\nBook through the portal.\n";
    let document = announced(&org, file.len() as u64);
    assert_eq!(originals.upload_target(&document).await.unwrap(), None);
    let uploads = PresignedUploads::new(&bucket.shared, &bucket.name).unwrap();
    let target = uploads.target(&document).await.unwrap();
    assert_eq!(target.method, "PUT");
    assert!(target.url.starts_with(&bucket.endpoint), "{}", target.url);
    assert!(target.url.contains("X-Amz-Expires=900"), "{}", target.url);
    assert!(
        target.url.contains("content-length%3Bcontent-type%3Bhost"),
        "{}",
        target.url
    );
    assert_eq!(
        target.headers,
        [("content-type".to_owned(), "text/markdown".to_owned())]
    );
    let minutes = (target.expires_at.millis() - SystemClock.now().millis()) / 60_000;
    assert!((14..=15).contains(&minutes), "{minutes}");
    let http = reqwest::Client::new();
    let send = |body: Vec<u8>, content_type: &'static str| {
        http.put(&target.url)
            .header("content-type", content_type)
            .body(body)
            .send()
    };
    // A file of another size, or of another type, is refused by the signature.
    let longer = [&file[..], b"more"].concat();
    assert_eq!(send(longer, "text/markdown").await.unwrap().status(), 403);
    assert_eq!(
        send(file[..4].to_vec(), "text/markdown")
            .await
            .unwrap()
            .status(),
        403
    );
    assert_eq!(
        send(file.to_vec(), "text/html").await.unwrap().status(),
        403
    );
    assert_eq!(originals.get(&org, &document.id, 2).await.unwrap(), None);
    // The announced file is taken, under the generation's key.
    let sent = send(file.to_vec(), "text/markdown").await.unwrap();
    assert_eq!(sent.status(), 200, "{}", sent.text().await.unwrap());
    let stored = originals.get(&org, &document.id, 2).await.unwrap();
    assert_eq!(stored.as_deref(), Some(&file[..]));
    // The URL writes that key only.
    let elsewhere = target.url.replace(
        &format!("/{}/2?", document.id),
        &format!("/{}/3?", document.id),
    );
    let refused = http
        .put(elsewhere)
        .header("content-type", "text/markdown")
        .body(file.to_vec());
    assert_eq!(refused.send().await.unwrap().status(), 403);
}

#[tokio::test]
async fn on_aws_an_upload_is_signed_for_the_virtual_hosted_bucket_the_page_may_reach() {
    let credentials = aws_credential_types::Credentials::new("test", "test", None, None, "test");
    let shared = aws_config::SdkConfig::builder()
        .region(aws_config::Region::new("eu-west-1"))
        .credentials_provider(SharedCredentialsProvider::new(credentials))
        .build();
    let uploads = PresignedUploads::new(&shared, "knowledge-docs-acme").unwrap();
    let org = OrgId::parse("org_acme").unwrap();
    let target = uploads.target(&announced(&org, 12)).await.unwrap();
    let origin = "https://knowledge-docs-acme.s3.eu-west-1.amazonaws.com";
    assert!(
        target.url.starts_with(&format!("{origin}/org/")),
        "{}",
        target.url
    );
    let page_may_reach = knowledge_s3::uploads_origin("knowledge-docs-acme", "eu-west-1", None);
    assert_eq!(page_may_reach.as_deref(), Some(origin));
}

#[test]
fn under_an_endpoint_the_page_may_reach_its_origin_and_never_a_policy_breaking_one() {
    let origin = |endpoint| knowledge_s3::uploads_origin("docs", "us-east-1", Some(endpoint));
    assert_eq!(
        origin("http://127.0.0.1:5599/").as_deref(),
        Some("http://127.0.0.1:5599")
    );
    assert_eq!(origin("http://127.0.0.1:5599; script-src *"), None);
    assert_eq!(origin("javascript:alert(1)"), None);
}
