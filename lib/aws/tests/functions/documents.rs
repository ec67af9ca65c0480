//! The organisations' documents on AWS, on moto: the admin function announces an upload and
//! answers a pre-signed PUT, the file goes straight to the bucket (a wrong length refused by
//! the signature), the indexer is fed the bucket's event as the queue delivers it
//! (`events/indexer.json`) and indexes the document, and the search and documents functions
//! find it through their copy of the index, for the members of the collection's group only. A
//! deletion reaches the index and the bucket through the indexer's queue; a message the indexer cannot read
//! ends in the dead-letter queue. Every request is checked against the function's row.

use std::collections::BTreeMap;

use aws_sdk_sqs::types::MessageSystemAttributeName;
use axum::body::Bytes;
use knowledge_aws::documents::Removal;
use knowledge_aws::functions;
use knowledge_aws::indexer::IndexerFunction;
use knowledge_core::clock::{Clock, SystemClock};
use knowledge_core::domain::{
    Actor, AuditAction, AuditEntry, DocumentStatus, Group, GroupSource, Member, Role,
};
use knowledge_core::ids::{CollectionId, DocumentId, GroupId, OrgId, UserId};
use knowledge_core::ports::{DirectoryStore, DocumentStore, GroupStore};
use knowledge_http::cookie::{CookieSigner, SECURE_COOKIE_NAME as COOKIE_NAME};
use lambda_runtime::{Context, LambdaEvent};
use serde_json::{Value, json};
use tower::ServiceExt;

use crate::admin::promote_the_sample_user;
use crate::support::{Deployment, KEY_HEX, ORG, USER, repo_file, template_receives};

const FILE: &[u8] = b"# Travel\n\nTrains are booked through the travel portal, a week ahead.\n";

/// A member of the sample organisation, and the groups they are in.
async fn member(d: &Deployment, role: Role, groups: &[&GroupId]) -> UserId {
    let org = OrgId::parse(ORG).unwrap();
    let user = UserId::generate();
    let now = SystemClock.now();
    let audit = AuditEntry::new(&org, now, Actor::Admin, AuditAction::MemberAdded, USER);
    let mut member = Member::new(org.clone(), user.clone(), role, now);
    d.store.create_member(&member, &audit).await.unwrap();
    for group in groups {
        let audit = AuditEntry::new(&org, now, Actor::Admin, AuditAction::MemberAdded, USER);
        d.store
            .add_group_member(group, &member, &audit)
            .await
            .unwrap();
        member = d.store.get_member(&org, &user).await.unwrap().unwrap();
    }
    // What the set-up wrote is no function's.
    d.counter.take();
    user
}

/// `GET path` on a new cold start of `function` as `user`; status, body, and the requests it
/// made (checked).
async fn get_as(
    d: &Deployment, function: functions::Function, user: &UserId, path: &str,
) -> (u16, Value, BTreeMap<String, u64>) {
    get_on(d, &d.router(function).await, function, user, path).await
}

/// The same on `router`, `function`'s, which keeps its copy of the index between requests as a
/// warm function does.
async fn get_on(
    d: &Deployment, router: &axum::Router, function: functions::Function, user: &UserId, path: &str,
) -> (u16, Value, BTreeMap<String, u64>) {
    let (status, _, bytes, made) = fetch_on(d, router, function, user, path).await;
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    (status, body, made)
}

/// The same, answering the headers and the body as sent.
async fn fetch_on(
    d: &Deployment, router: &axum::Router, function: functions::Function, user: &UserId, path: &str,
) -> (u16, axum::http::HeaderMap, Bytes, BTreeMap<String, u64>) {
    let mut request = d.event(function);
    let cookie = CookieSigner::from_hex(KEY_HEX)
        .unwrap()
        .mint(user, &d.key.org, 600)
        .unwrap();
    let header = format!("{COOKIE_NAME}={cookie}").parse().unwrap();
    request.headers_mut().insert("cookie", header);
    *request.method_mut() = axum::http::Method::GET;
    *request.uri_mut() = path.parse().unwrap();
    *request.body_mut() = lambda_http::Body::Empty;
    d.counter.take();
    let response = router.clone().oneshot(request).await.unwrap();
    let (head, body) = response.into_parts();
    let bytes = axum::body::to_bytes(body, 1 << 20).await.unwrap();
    (
        head.status.as_u16(),
        head.headers,
        bytes,
        d.take_checked(function.name),
    )
}

/// The indexer function as its cold start builds it.
async fn indexer(d: &Deployment) -> IndexerFunction {
    d.cold_start(functions::INDEXER).await.indexer().unwrap()
}

/// The SQS event of one message of `body`, as the event source mapping delivers it: the sample
/// event's record with that body.
fn delivery(body: &str) -> Value {
    let mut event: Value = serde_json::from_str(&repo_file("events/indexer.json")).unwrap();
    event["Records"][0]["body"] = json!(body);
    event
}

/// Feeds `event` to the indexer; its answer and the requests it made (checked).
async fn feed(d: &Deployment, event: Value) -> (Value, BTreeMap<String, u64>) {
    let indexer = indexer(d).await;
    d.counter.take();
    let answer = indexer
        .handle(LambdaEvent::new(event, Context::default()))
        .await
        .unwrap();
    (answer, d.take_checked(functions::INDEXER.name))
}

/// The sample event, its S3 record naming `key` of `size` bytes in the deployment's bucket.
fn created(d: &Deployment, key: &str, size: usize) -> Value {
    let mut event: Value = serde_json::from_str(&repo_file("events/indexer.json")).unwrap();
    let mut body: Value =
        serde_json::from_str(event["Records"][0]["body"].as_str().unwrap()).unwrap();
    let bucket = d.env.documents_bucket.clone().unwrap();
    let s3 = &mut body["Records"][0]["s3"];
    assert_eq!(
        s3["object"]["key"], "org/org_sample/doc/doc_00000000000000000000000000000001/1",
        "the sample event names the sample organisation's document"
    );
    s3["bucket"]["name"] = json!(bucket);
    s3["bucket"]["arn"] = json!(format!("arn:aws:s3:::{bucket}"));
    s3["object"]["key"] = json!(key);
    s3["object"]["size"] = json!(size);
    event["Records"][0]["body"] = json!(body.to_string());
    event
}

/// A collection open to a new group, made through the admin function; its id and the group.
async fn collection(d: &Deployment) -> (CollectionId, GroupId) {
    let org = OrgId::parse(ORG).unwrap();
    let now = SystemClock.now();
    let group = Group::new(org.clone(), "Travel desk".into(), GroupSource::Admin, now);
    let audit = AuditEntry::new(&org, now, Actor::Admin, AuditAction::GroupCreated, USER);
    d.store.create_group(&group, &audit).await.unwrap();
    d.counter.take();
    let body = json!({
        "name": "Handbook", "description": "",
        "access": {"kind": "groups", "groups": [group.id.as_str()]},
    });
    let (status, created, _) = d
        .send(functions::ADMIN, "POST", "/api/admin/collections", body)
        .await;
    assert_eq!(status, 201, "{created}");
    let id = CollectionId::parse(created["id"].as_str().unwrap()).unwrap();
    (id, group.id)
}

/// The sample file announced in `collection` through the admin function, sent to the bucket
/// as the browser sends it, and indexed by the indexer fed its event. Returns the document.
async fn uploaded(d: &Deployment, collection: &CollectionId) -> DocumentId {
    let path = format!("/api/admin/collections/{collection}/documents");
    let body = json!({"name": "travel.md", "bytes": FILE.len()});
    let (status, started, made) = d.send(functions::ADMIN, "POST", &path, body).await;
    assert_eq!(status, 201, "{started}");
    // Announcing signs a URL (with the function's credentials: it needs s3:PutObject, which
    // the admin's row grants): no request to the bucket.
    assert!(!made.keys().any(|op| op.ends_with("Object")), "{made:?}");
    let upload = &started["upload"];
    assert_eq!(upload["method"], "PUT");
    assert_eq!(upload["fields"], json!([]));
    assert_eq!(
        upload["headers"],
        json!([["content-type", "text/markdown"]])
    );
    let url = upload["url"].as_str().unwrap();
    assert!(
        url.starts_with("http://127.0.0.1"),
        "an absolute URL: {url}"
    );
    let id = DocumentId::parse(started["document"]["id"].as_str().unwrap()).unwrap();
    assert_eq!(started["document"]["status"], "uploading");
    let http = reqwest::Client::new();
    let put = |body: Vec<u8>| {
        http.put(url)
            .header("content-type", "text/markdown")
            .body(body)
            .send()
    };
    // The signature holds the browser to the size announced.
    let padded = [FILE, b"and more"].concat();
    assert_eq!(put(padded).await.unwrap().status(), 403);
    let sent = put(FILE.to_vec()).await.unwrap();
    assert_eq!(sent.status(), 200, "{}", sent.text().await.unwrap());

    // The bucket's event, through the queue: the document queued, leased, parsed and indexed.
    let key = format!("org/{ORG}/doc/{id}/1");
    let (answer, made) = feed(d, created(d, &key, FILE.len())).await;
    assert_eq!(answer, json!({"batchItemFailures": []}));
    // The collections (a query) and the document's key in each (a batch); the document again
    // and its writes (queued, leased, indexed: transactions with the storage counter); the
    // original read twice (checked, then parsed); the index: its manifest, then the new files
    // and the manifest written.
    assert_eq!(made.get("Query"), Some(&1), "{made:?}");
    assert_eq!(made.get("BatchGetItem"), Some(&1), "{made:?}");
    assert!(made["PutObject"] >= 2, "{made:?}");
    let org = OrgId::parse(ORG).unwrap();
    let stored = (d.store.get_document(&org, collection, &id).await)
        .unwrap()
        .unwrap();
    assert_eq!(
        stored.status,
        DocumentStatus::Indexed,
        "{:?}",
        stored.reason
    );
    assert_eq!((stored.passages, stored.attempts), (1, 1));
    assert_eq!(stored.sha256.len(), 64);
    id
}

#[tokio::test]
async fn an_upload_goes_straight_to_the_bucket_and_is_found_by_the_collections_group_alone() {
    knowledge_test_support::skip_without_dynamodb!();
    let d = Deployment::new().await;
    promote_the_sample_user(&d).await;
    let (collection, group) = collection(&d).await;
    let id = uploaded(&d, &collection).await;

    // A member of the group finds it through the search function's copy of the index: their
    // membership, groups and the collections (the store), then the index's manifest and
    // files (the bucket), then the candidates' documents (one batch).
    let reader = member(&d, Role::Viewer, &[&group]).await;
    let search = d.router(functions::SEARCH).await;
    let (status, found, made) = get_on(
        &d,
        &search,
        functions::SEARCH,
        &reader,
        "/api/search?q=train&limit=5",
    )
    .await;
    assert_eq!(status, 200, "{found}");
    let results = found["results"].as_array().unwrap();
    assert_eq!(results.len(), 1, "{found}");
    assert_eq!(results[0]["documentId"], id.as_str());
    assert_eq!(results[0]["headings"], json!(["Travel"]));
    assert_eq!(made.get("BatchGetItem"), Some(&1), "{made:?}");
    assert!(
        made["GetObject"] >= 2,
        "the manifest and the index's files: {made:?}"
    );
    // Searched again, the copy is current: one conditional GET of the manifest (a 304).
    let (status, _, made) = get_on(
        &d,
        &search,
        functions::SEARCH,
        &reader,
        "/api/search?q=portal&limit=5",
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(made.get("GetObject"), Some(&1), "{made:?}");

    // A member outside the group finds nothing, and may not open the document.
    let outsider = member(&d, Role::Viewer, &[]).await;
    let (status, found, _) = get_as(
        &d,
        functions::SEARCH,
        &outsider,
        "/api/search?q=train&limit=5",
    )
    .await;
    assert_eq!((status, found["results"].clone()), (200, json!([])));
    let page = format!("/api/documents/{collection}/{id}");
    let (status, _, _) = get_as(&d, functions::DOCUMENTS, &outsider, &page).await;
    assert_eq!(status, 404);

    // The documents function: the document, its passages from its own copy, its original.
    let (status, document, _) = get_as(&d, functions::DOCUMENTS, &reader, &page).await;
    assert_eq!(
        (status, document["status"].clone()),
        (200, json!("indexed"))
    );
    let window = format!("{page}/passages?from=0&limit=10");
    let (status, passages, made) = get_as(&d, functions::DOCUMENTS, &reader, &window).await;
    assert_eq!(status, 200, "{passages}");
    assert!(passages.to_string().contains("travel portal"), "{passages}");
    assert!(made.contains_key("GetObject"), "{made:?}");

    // Its original: a redirect to a link the bucket serves, so that no file passes through
    // the function (whose answer may not pass 6 MB). Signing the link requests nothing.
    let documents = d.router(functions::DOCUMENTS).await;
    let original = format!("{page}/original");
    let (status, headers, _, made) =
        fetch_on(&d, &documents, functions::DOCUMENTS, &reader, &original).await;
    assert_eq!(status, 303);
    assert_eq!(headers["cache-control"], "no-store");
    assert!(!made.keys().any(|op| op.ends_with("Object")), "{made:?}");
    let link = headers["location"].to_str().unwrap();
    let got = reqwest::get(link).await.unwrap();
    assert_eq!(got.status(), 200);
    assert_eq!(got.headers()["content-type"], "text/markdown");
    assert_eq!(
        got.headers()["content-disposition"],
        "attachment; filename=\"travel.md\"; filename*=UTF-8''travel.md"
    );
    assert_eq!(got.bytes().await.unwrap(), FILE);
    // The signature covers how the bucket answers: a link made to render it is refused.
    let inline = link.replacen(
        "response-content-disposition=attachment",
        "response-content-disposition=inline",
        1,
    );
    assert_ne!(inline, link);
    assert_eq!(reqwest::get(&inline).await.unwrap().status(), 403);
    // While a replacement is announced and not sent, there is no original to link to.
    let path = format!("/api/admin/collections/{collection}/documents/{id}");
    let body = json!({"name": "travel.md", "bytes": FILE.len()});
    let (status, replaced, _) = d.send(functions::ADMIN, "PUT", &path, body).await;
    assert_eq!(status, 200, "{replaced}");
    let (status, headers, _, _) =
        fetch_on(&d, &documents, functions::DOCUMENTS, &reader, &original).await;
    assert_eq!(status, 404);
    assert!(headers.get("location").is_none());
    // The outsider gets no link.
    let (status, headers, _, _) =
        fetch_on(&d, &documents, functions::DOCUMENTS, &outsider, &original).await;
    assert_eq!(status, 404);
    assert!(headers.get("location").is_none());
}

#[tokio::test]
async fn a_deleted_document_leaves_the_index_through_the_indexers_queue() {
    knowledge_test_support::skip_without_dynamodb!();
    let d = Deployment::new().await;
    promote_the_sample_user(&d).await;
    let (collection, group) = collection(&d).await;
    let id = uploaded(&d, &collection).await;
    let reader = member(&d, Role::Viewer, &[&group]).await;

    // The admin function deletes the row, and sends the indexer the removals of the
    // passages and of the originals: it writes nothing to the bucket itself.
    let path = format!("/api/admin/collections/{collection}/documents/{id}");
    let (status, body, made) = d.send(functions::ADMIN, "DELETE", &path, Value::Null).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(made.get("SendMessage"), Some(&2), "{made:?}");
    assert!(!made.keys().any(|op| op.contains("Object")), "{made:?}");
    // The search hides it at once (the store is the truth)...
    let (_, found, _) = get_as(
        &d,
        functions::SEARCH,
        &reader,
        "/api/search?q=train&limit=5",
    )
    .await;
    assert_eq!(found["results"], json!([]));

    // ...and the indexer removes its passages and its originals as the queue delivers them.
    let org = OrgId::parse(ORG).unwrap();
    let received = (d.sqs.receive_message())
        .queue_url(d.env.indexer_queue_url.as_ref().unwrap())
        .max_number_of_messages(10)
        .send()
        .await
        .unwrap();
    let mut bodies: Vec<&str> = received
        .messages()
        .iter()
        .filter_map(|m| m.body())
        .collect();
    bodies.sort();
    assert_eq!(
        bodies,
        [
            format!(r#"{{"remove":"document","org":"{org}","document":"{id}"}}"#),
            format!(r#"{{"remove":"originals","org":"{org}","document":"{id}"}}"#),
        ]
    );
    let removal: Removal = serde_json::from_str(bodies[0]).unwrap();
    assert_eq!(
        removal,
        Removal::Document {
            org: org.clone(),
            document: id.clone()
        }
    );
    let (answer, made) = feed(&d, delivery(bodies[0])).await;
    assert_eq!(answer, json!({"batchItemFailures": []}));
    assert!(
        made.contains_key("PutObject"),
        "the manifest rewritten: {made:?}"
    );
    assert!(!made.contains_key("GetItem"), "the index alone: {made:?}");
    let (answer, made) = feed(&d, delivery(bodies[1])).await;
    assert_eq!(answer, json!({"batchItemFailures": []}));
    assert!(made.contains_key("DeleteObjects"), "{made:?}");
    let listed = (d.s3.list_objects_v2())
        .bucket(d.env.documents_bucket.as_ref().unwrap())
        .prefix(format!("org/{org}/"))
        .send()
        .await
        .unwrap();
    assert!(listed.contents().is_empty(), "the originals are gone");
    // A fresh copy of the index holds none of its passages.
    let index = knowledge_s3::S3Index::new(
        d.s3.clone(),
        d.env.documents_bucket.as_ref().unwrap(),
        tempfile::tempdir().unwrap().keep(),
    );
    let collections = [collection];
    let hits = knowledge_core::ports::PassageIndex::search(&index, &org, "train", &collections, 5);
    assert!(hits.await.unwrap().is_empty());
    // S3's test event, sent when the notification is set, is nothing to do.
    let test = r#"{"Service":"Amazon S3","Event":"s3:TestEvent","Time":"2026-11-21T10:00:00.000Z","Bucket":"b","RequestId":"r","HostId":"h"}"#;
    let (answer, _) = feed(&d, delivery(test)).await;
    assert_eq!(answer, json!({"batchItemFailures": []}));
}

#[tokio::test]
async fn a_message_the_indexer_cannot_read_ends_in_the_dead_letter_queue() {
    knowledge_test_support::skip_without_dynamodb!();
    let d = Deployment::new().await;
    let queue = d.env.indexer_queue_url.clone().unwrap();
    (d.sqs.send_message())
        .queue_url(&queue)
        .message_body(r#"{"Records":[{"eventName":"ObjectCreated:Put","s3":{"bucket":{"name":"elsewhere"},"object":{"key":"org/x"}}}]}"#)
        .send()
        .await
        .unwrap();
    // As the event source mapping does: receive, invoke, delete what did not fail; a failed
    // message is received again once visible (here at once), until its receives are spent.
    let receives = template_receives();
    assert_eq!(receives, 3);
    for n in 1..=receives {
        let received = (d.sqs.receive_message())
            .queue_url(&queue)
            .visibility_timeout(0)
            .message_system_attribute_names(MessageSystemAttributeName::ApproximateReceiveCount)
            .send()
            .await
            .unwrap();
        let message = &received.messages()[0];
        let count =
            &message.attributes().unwrap()[&MessageSystemAttributeName::ApproximateReceiveCount];
        assert_eq!(count, &n.to_string());
        let mut event = delivery(message.body().unwrap());
        event["Records"][0]["messageId"] = json!(message.message_id().unwrap());
        let (answer, made) = feed(&d, event).await;
        let failed =
            json!({"batchItemFailures": [{"itemIdentifier": message.message_id().unwrap()}]});
        assert_eq!(answer, failed);
        assert!(made.is_empty(), "nothing read or written: {made:?}");
    }
    let again = (d.sqs.receive_message())
        .queue_url(&queue)
        .send()
        .await
        .unwrap();
    assert!(
        again.messages().is_empty(),
        "moved after {receives} receives"
    );
    let dead = (d.sqs.receive_message())
        .queue_url(&d.dead_letters)
        .send()
        .await
        .unwrap();
    assert_eq!(dead.messages().len(), 1);
}
