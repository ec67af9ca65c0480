//! `S3Index` on moto (which applies S3's conditional writes, `If-Match` and `If-None-Match` on
//! `PUT`, atomically under `scripts/moto_server.py`): what one writer publishes a reader with
//! its own copy finds at its next search, and two writers of one organisation never lose each
//! other's changes, whether one of them finds the manifest moved at its conditional write or
//! both write at once.

mod common;

use std::sync::Arc;

use knowledge_core::domain::Passage;
use knowledge_core::ids::{CollectionId, DocumentId, OrgId};
use knowledge_core::ports::PassageIndex;
use knowledge_s3::{MANIFEST, S3Index};

use common::{Bucket, Pause};

struct Rig {
    bucket: Bucket,
    org: OrgId,
    collection: CollectionId,
    _roots: Vec<tempfile::TempDir>,
}

impl Rig {
    async fn new() -> Self {
        Self {
            bucket: Bucket::new().await,
            org: OrgId::parse("org_acme").unwrap(),
            collection: CollectionId::generate(),
            _roots: Vec::new(),
        }
    }

    /// A function instance: its own copy, in its own folder.
    fn instance(&mut self) -> Arc<S3Index> {
        let client = self.bucket.client.clone();
        self.instance_on(client)
    }

    fn instance_on(&mut self, client: aws_sdk_s3::Client) -> Arc<S3Index> {
        let root = tempfile::tempdir().unwrap();
        let index = S3Index::new(client, &self.bucket.name, root.path());
        self._roots.push(root);
        Arc::new(index)
    }

    async fn replace(&self, index: &S3Index, document: &DocumentId, text: &str) {
        let passages = vec![Passage {
            headings: vec!["Policy".into()],
            page: None,
            text: text.into(),
        }];
        (index.replace(&self.org, &self.collection, document, 1, passages))
            .await
            .unwrap();
    }

    /// The documents `index` finds for `query`, sorted.
    async fn found(&self, index: &S3Index, query: &str) -> Vec<DocumentId> {
        let collections = std::slice::from_ref(&self.collection);
        let hits = index
            .search(&self.org, query, collections, 20)
            .await
            .unwrap();
        let mut found: Vec<DocumentId> = hits.into_iter().map(|h| h.document).collect();
        found.sort();
        found
    }

    async fn manifest_etag(&self) -> String {
        let head = (self.bucket.client.head_object())
            .bucket(&self.bucket.name)
            .key(format!("index/{}/{MANIFEST}", self.org))
            .send()
            .await
            .unwrap();
        head.e_tag().unwrap().to_owned()
    }
}

fn sorted(mut ids: Vec<DocumentId>) -> Vec<DocumentId> {
    ids.sort();
    ids
}

#[tokio::test]
async fn a_readers_copy_follows_what_the_writer_publishes_at_its_next_search() {
    knowledge_test_support::skip_without_dynamodb!();
    let mut r = Rig::new().await;
    let (writer, reader) = (r.instance(), r.instance());
    assert!(r.found(&reader, "travel").await.is_empty(), "no index yet");
    let (a, b) = (DocumentId::generate(), DocumentId::generate());
    r.replace(&writer, &a, "Travel is booked through the portal.")
        .await;
    r.replace(&writer, &b, "Travel expenses are filed monthly.")
        .await;
    assert_eq!(
        r.found(&reader, "travel").await,
        sorted(vec![a.clone(), b.clone()])
    );
    let published = r.manifest_etag().await;
    writer.remove(&r.org, &a).await.unwrap();
    assert_ne!(r.manifest_etag().await, published);
    assert_eq!(r.found(&reader, "travel").await, [b]);
    // A change that changes nothing publishes nothing.
    let published = r.manifest_etag().await;
    writer.remove(&r.org, &a).await.unwrap();
    assert_eq!(r.manifest_etag().await, published);
    writer
        .remove_collection(&r.org, &r.collection)
        .await
        .unwrap();
    assert!(r.found(&reader, "travel").await.is_empty());
    // Files the manifest stopped naming are deleted; what is left is the manifest and its files.
    let keys = r.bucket.keys("index/").await;
    assert!(keys.iter().any(|k| k.ends_with(MANIFEST)));
    assert!(keys.len() < 12, "{keys:?}");
    // Another organisation's index is apart.
    let other = OrgId::parse("org_other").unwrap();
    let hits = reader
        .search(&other, "travel", &[r.collection.clone()], 5)
        .await;
    assert!(hits.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_writer_that_finds_the_manifest_moved_writes_again_on_top() {
    knowledge_test_support::skip_without_dynamodb!();
    let mut r = Rig::new().await;
    let (pause, reached, go) = Pause::new();
    let paused = r.bucket.paused_client(pause);
    let (first, second, reader) = (r.instance(), r.instance_on(paused), r.instance());
    let (a, b, c) = (
        DocumentId::generate(),
        DocumentId::generate(),
        DocumentId::generate(),
    );
    r.replace(&first, &a, "Travel by train.").await;
    // The second writer copies the index, commits and uploads its files, and stops before its
    // manifest; meanwhile the first publishes again. The second's conditional write is refused
    // (412), so it makes its change again on top of the first's.
    let r = Arc::new(r);
    let writing = tokio::spawn({
        let (r, c) = (r.clone(), c.clone());
        async move { r.replace(&second, &c, "Travel by bike.").await }
    });
    tokio::task::spawn_blocking(move || reached.recv().unwrap())
        .await
        .unwrap();
    r.replace(&first, &b, "Travel by bus.").await;
    assert_eq!(r.bucket.refusals.count(), 0);
    go.send(()).unwrap();
    writing.await.unwrap();
    assert_eq!(
        r.bucket.refusals.count(),
        1,
        "the second writer's manifest was refused once"
    );
    let all = sorted(vec![a.clone(), b.clone(), c.clone()]);
    assert_eq!(r.found(&reader, "travel").await, all);
    // Its refused commit's files were deleted again: every file in the bucket is the manifest's.
    let manifest = (r.bucket.client.get_object())
        .bucket(&r.bucket.name)
        .key(format!("index/{}/{MANIFEST}", r.org))
        .send()
        .await
        .unwrap();
    let manifest = manifest.body.collect().await.unwrap().into_bytes();
    let manifest: serde_json::Value = serde_json::from_slice(&manifest).unwrap();
    let named: Vec<String> = (manifest["files"].as_array().unwrap().iter())
        .map(|f| format!("index/{}/{}", r.org, f.as_str().unwrap()))
        .chain([format!("index/{}/{MANIFEST}", r.org)])
        .collect();
    assert_eq!(r.bucket.keys("index/").await, sorted_strings(named));
    // The first writer's copy is behind now: it too writes on top.
    first.remove(&r.org, &b).await.unwrap();
    assert_eq!(r.found(&reader, "travel").await, sorted(vec![a, c]));
}

fn sorted_strings(mut names: Vec<String>) -> Vec<String> {
    names.sort();
    names
}

#[tokio::test]
async fn writers_of_one_organisation_at_once_lose_none_of_each_others_changes() {
    knowledge_test_support::skip_without_dynamodb!();
    let mut r = Rig::new().await;
    let writers = [r.instance(), r.instance()];
    let reader = r.instance();
    let r = Arc::new(r);
    let mut written = Vec::new();
    for round in 0..4 {
        let tasks: Vec<_> = writers
            .iter()
            .enumerate()
            .map(|(i, writer)| {
                let (r, writer) = (r.clone(), writer.clone());
                let document = DocumentId::generate();
                written.push(document.clone());
                tokio::spawn(async move {
                    let text = format!("Travel rule {round} of writer {i}.");
                    r.replace(&writer, &document, &text).await;
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
    }
    assert_eq!(r.found(&reader, "travel").await, sorted(written));
    eprintln!("conditional writes refused: {}", r.bucket.refusals.count());
}
