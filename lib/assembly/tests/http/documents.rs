//! The organisation's documents over the real router: an admin's collections and uploads,
//! indexing by the workers (driven here one document at a time, so no test waits on a timer),
//! and what members find, open and download: the access matrix, each cell a test.

use reqwest::Method;
use serde_json::{Value, json};

use crate::support::{Api, User, admin, admin_as};

const HANDBOOK: &str = "# Travel\n\nBook trains through the portal. Expenses need receipts.\n\n\
## Per diem\n\nThe per diem for Lisbon is forty euros a day.\n";

/// A collection made by the default admin, open as `access` says; its id.
pub async fn collection(api: &Api, name: &str, access: Value) -> String {
    let body = json!({ "name": name, "description": "", "access": access });
    let made = admin(api, Method::POST, "/collections", Some(body)).await;
    assert_eq!(made.status, 201, "{:?}", made.body);
    made.body["id"].as_str().unwrap().to_owned()
}

/// Sends `bytes` where an announced upload says, as the app does: `PUT`, the admin's cookie and
/// the application's origin.
async fn send(api: &Api, user: &User, target: &Value, bytes: &[u8]) -> crate::support::Reply {
    assert_eq!(target["method"], "PUT");
    let url = format!("{}{}", api.base, target["url"].as_str().unwrap());
    let req = (api.http.put(url))
        .header("cookie", &user.cookie)
        .header("origin", &api.origin)
        .header("content-type", "application/octet-stream")
        .body(bytes.to_vec());
    api.send(req).await
}

/// Uploads `bytes` as `name` into `collection` as the default admin; the document's id.
pub async fn upload(api: &Api, collection: &str, name: &str, bytes: &[u8]) -> String {
    let path = format!("/collections/{collection}/documents");
    let body = json!({ "name": name, "bytes": bytes.len() });
    let started = admin(api, Method::POST, &path, Some(body)).await;
    assert_eq!(started.status, 201, "{:?}", started.body);
    assert_eq!(started.body["document"]["status"], "uploading");
    let sent = send(api, &api.user, &started.body["upload"], bytes).await;
    assert_eq!(sent.status, 200, "{:?}", sent.body);
    assert_eq!(sent.body["status"], "queued");
    sent.body["id"].as_str().unwrap().to_owned()
}

/// The document as the admin's list shows it.
async fn listed(api: &Api, collection: &str, id: &str) -> Value {
    let path = format!("/collections/{collection}/documents");
    let list = admin(api, Method::GET, &path, None).await;
    assert_eq!(list.status, 200, "{:?}", list.body);
    let documents = list.body["documents"].as_array().unwrap().clone();
    (documents.into_iter().find(|d| d["id"] == id)).unwrap_or(Value::Null)
}

/// The passages `user` finds for `q`, as `(document id, text)`.
async fn found(api: &Api, user: &User, q: &str) -> Vec<(String, String)> {
    let reply = api.get_as(user, &format!("/api/search?q={q}")).await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    let results = reply.body["results"].as_array().unwrap();
    results
        .iter()
        .map(|r| {
            (
                r["documentId"].as_str().unwrap().to_owned(),
                r["text"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// A new group of the default organisation with `members`; its id.
async fn group(api: &Api, name: &str, members: &[&User]) -> String {
    let made = admin(
        api,
        Method::POST,
        "/groups",
        Some(json!({ "displayName": name })),
    )
    .await;
    assert_eq!(made.status, 201, "{:?}", made.body);
    let id = made.body["id"].as_str().unwrap().to_owned();
    for m in members {
        let added = admin(
            api,
            Method::PUT,
            &format!("/groups/{id}/members/{}", m.id),
            None,
        )
        .await;
        assert_eq!(added.status, 200, "{:?}", added.body);
    }
    id
}

/// A handbook open to one group, with `inside` in it and `outside` not; the collection's and
/// the document's ids.
async fn closed_handbook(api: &Api, inside: &User) -> (String, String, String) {
    let finance = group(api, "Finance", &[inside]).await;
    let c = collection(
        api,
        "Handbook",
        json!({ "kind": "groups", "groups": [finance] }),
    )
    .await;
    let d = upload(api, &c, "travel.md", HANDBOOK.as_bytes()).await;
    api.svc.index_all().await;
    (finance, c, d)
}

#[tokio::test]
async fn an_uploaded_document_is_indexed_and_found_with_its_headings_and_names() {
    let api = Api::start().await;
    let c = collection(&api, "Handbook", json!({ "kind": "everyone" })).await;
    let d = upload(&api, &c, "travel.md", HANDBOOK.as_bytes()).await;
    assert!(
        found(&api, &api.user, "lisbon").await.is_empty(),
        "found before indexed"
    );
    api.svc.index_all().await;
    let doc = listed(&api, &c, &d).await;
    assert_eq!(doc["status"], "indexed", "{doc}");
    assert!(doc["passages"].as_u64().unwrap() >= 1, "{doc}");

    let reply = api.get("/api/search?q=per+diem+lisbon").await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    let first = &reply.body["results"][0];
    assert_eq!(first["documentId"], d.as_str());
    assert_eq!(first["documentName"], "travel.md");
    assert_eq!(first["collectionId"], c.as_str());
    assert_eq!(first["collectionName"], "Handbook");
    assert_eq!(first["headings"], json!(["Travel", "Per diem"]));
    assert!(
        first["text"].as_str().unwrap().contains("forty euros"),
        "{first}"
    );
}

#[tokio::test]
async fn a_member_finds_opens_and_downloads_a_document_of_a_group_they_are_in() {
    let api = Api::start().await;
    let inside = api.new_user(&api.user.org).await;
    let (_, c, d) = closed_handbook(&api, &inside).await;
    assert_eq!(found(&api, &inside, "lisbon").await.len(), 1);
    let page = api
        .get_as(&inside, &format!("/api/documents/{c}/{d}"))
        .await;
    assert_eq!(page.status, 200, "{:?}", page.body);
    assert_eq!(page.body["name"], "travel.md");
    let window = api
        .get_as(
            &inside,
            &format!("/api/documents/{c}/{d}/passages?from=0&limit=50"),
        )
        .await;
    assert_eq!(window.status, 200, "{:?}", window.body);
    let passages = window.body["passages"].as_array().unwrap();
    let text: String = passages
        .iter()
        .map(|p| p["text"].as_str().unwrap())
        .collect();
    assert!(
        text.contains("receipts") && text.contains("forty euros"),
        "{text}"
    );
    let places: Vec<u64> = passages
        .iter()
        .map(|p| p["passage"].as_u64().unwrap())
        .collect();
    assert_eq!(places, (0..places.len() as u64).collect::<Vec<_>>());
    let later = api
        .get_as(
            &inside,
            &format!("/api/documents/{c}/{d}/passages?from=1&limit=1"),
        )
        .await;
    assert_eq!(later.body["passages"][0]["passage"], 1, "{:?}", later.body);
    let download = (api
        .http
        .get(format!("{}/api/documents/{c}/{d}/original", api.base)))
    .header("cookie", &inside.cookie);
    let download = api.execute(download).await;
    assert_eq!(download.status(), 200);
    let headers = download.headers().clone();
    assert_eq!(headers["content-type"], "text/markdown");
    assert_eq!(headers["x-content-type-options"], "nosniff");
    assert_eq!(
        headers["content-disposition"],
        "attachment; filename=\"travel.md\"; filename*=UTF-8''travel.md"
    );
    assert_eq!(download.bytes().await.unwrap(), HANDBOOK.as_bytes());
}

#[tokio::test]
async fn a_member_outside_the_group_finds_nothing_and_cannot_open_or_download_it() {
    let api = Api::start().await;
    let (inside, outside) = (
        api.new_user(&api.user.org).await,
        api.new_user(&api.user.org).await,
    );
    let (_, c, d) = closed_handbook(&api, &inside).await;
    assert!(found(&api, &outside, "lisbon").await.is_empty());
    for path in [
        format!("/api/documents/{c}/{d}"),
        format!("/api/documents/{c}/{d}/original"),
        format!("/api/documents/{c}/{d}/passages"),
        format!("/api/search?q=lisbon&collection={c}"),
    ] {
        let reply = api.get_as(&outside, &path).await;
        assert_eq!(reply.status, 404, "{path}: {:?}", reply.body);
    }
}

#[tokio::test]
async fn a_member_taken_out_of_the_group_stops_finding_it_at_their_next_request() {
    let api = Api::start().await;
    let inside = api.new_user(&api.user.org).await;
    let (finance, c, d) = closed_handbook(&api, &inside).await;
    assert_eq!(found(&api, &inside, "lisbon").await.len(), 1);
    let path = format!("/groups/{finance}/members/{}", inside.id);
    let removed = admin(&api, Method::DELETE, &path, None).await;
    assert_eq!(removed.status, 200, "{:?}", removed.body);
    assert!(found(&api, &inside, "lisbon").await.is_empty());
    let page = api
        .get_as(&inside, &format!("/api/documents/{c}/{d}"))
        .await;
    assert_eq!(page.status, 404, "{:?}", page.body);
}

#[tokio::test]
async fn a_deleted_group_opens_its_collections_to_no_one() {
    let api = Api::start().await;
    let inside = api.new_user(&api.user.org).await;
    let (finance, _, _) = closed_handbook(&api, &inside).await;
    let deleted = admin(&api, Method::DELETE, &format!("/groups/{finance}"), None).await;
    assert_eq!(deleted.status, 200, "{:?}", deleted.body);
    assert!(found(&api, &inside, "lisbon").await.is_empty());
}

#[tokio::test]
async fn a_collection_closed_to_a_group_is_found_by_its_members_no_more() {
    let api = Api::start().await;
    let member = api.new_user(&api.user.org).await;
    let c = collection(&api, "Handbook", json!({ "kind": "everyone" })).await;
    upload(&api, &c, "travel.md", HANDBOOK.as_bytes()).await;
    api.svc.index_all().await;
    assert_eq!(found(&api, &member, "lisbon").await.len(), 1);
    let closed = json!({ "access": { "kind": "groups", "groups": [] } });
    let changed = admin(
        &api,
        Method::PATCH,
        &format!("/collections/{c}"),
        Some(closed),
    )
    .await;
    assert_eq!(changed.status, 200, "{:?}", changed.body);
    assert!(found(&api, &member, "lisbon").await.is_empty());
    assert_eq!(
        found(&api, &api.user, "lisbon").await.len(),
        1,
        "admins open every collection"
    );
}

#[tokio::test]
async fn another_organisations_member_finds_nothing_and_gets_404_for_the_document() {
    let api = Api::start().await;
    let c = collection(&api, "Handbook", json!({ "kind": "everyone" })).await;
    let d = upload(&api, &c, "travel.md", HANDBOOK.as_bytes()).await;
    api.svc.index_all().await;
    let other = knowledge_core::ids::OrgId::generate();
    let stranger = api.new_user(&other).await;
    assert!(found(&api, &stranger, "lisbon").await.is_empty());
    for path in [
        format!("/api/documents/{c}/{d}"),
        format!("/api/documents/{c}/{d}/original"),
    ] {
        assert_eq!(api.get_as(&stranger, &path).await.status, 404, "{path}");
    }
    let theirs = admin_as(
        &api,
        &stranger,
        Method::GET,
        &format!("/collections/{c}/documents"),
        None,
    )
    .await;
    assert_eq!(
        theirs.status, 403,
        "a viewer of another organisation: {:?}",
        theirs.body
    );
}

#[tokio::test]
async fn a_deleted_document_is_found_no_more_and_its_original_is_gone() {
    let api = Api::start().await;
    let c = collection(&api, "Handbook", json!({ "kind": "everyone" })).await;
    let d = upload(&api, &c, "travel.md", HANDBOOK.as_bytes()).await;
    api.svc.index_all().await;
    assert_eq!(found(&api, &api.user, "lisbon").await.len(), 1);
    let path = format!("/collections/{c}/documents/{d}");
    assert_eq!(admin(&api, Method::DELETE, &path, None).await.status, 200);
    assert!(found(&api, &api.user, "lisbon").await.is_empty());
    let original = api.get(&format!("/api/documents/{c}/{d}/original")).await;
    assert_eq!(original.status, 404, "{:?}", original.body);
    assert_eq!(admin(&api, Method::DELETE, &path, None).await.status, 404);
}

#[tokio::test]
async fn a_replaced_document_swaps_its_passages_whole() {
    let api = Api::start().await;
    let c = collection(&api, "Handbook", json!({ "kind": "everyone" })).await;
    let d = upload(&api, &c, "travel.md", HANDBOOK.as_bytes()).await;
    api.svc.index_all().await;
    let next = "# Travel\n\nThe per diem for Porto is thirty euros a day.\n";
    let path = format!("/collections/{c}/documents/{d}");
    let body = json!({ "name": "travel.md", "bytes": next.len() });
    let started = admin(&api, Method::PUT, &path, Some(body)).await;
    assert_eq!(started.status, 200, "{:?}", started.body);
    assert_eq!(started.body["document"]["generation"], 2);
    // Until the new generation arrives there is no original to download.
    let original = api.get(&format!("/api/documents/{c}/{d}/original")).await;
    assert_eq!(original.status, 404, "{:?}", original.body);
    assert!(
        found(&api, &api.user, "lisbon").await.is_empty(),
        "the old passages linger"
    );
    let sent = send(&api, &api.user, &started.body["upload"], next.as_bytes()).await;
    assert_eq!(sent.status, 200, "{:?}", sent.body);
    api.svc.index_all().await;
    assert!(found(&api, &api.user, "lisbon").await.is_empty());
    let porto = found(&api, &api.user, "porto").await;
    assert_eq!(porto, vec![(d.clone(), porto[0].1.clone())]);
    assert!(porto[0].1.contains("thirty"), "{porto:?}");
}

#[tokio::test]
async fn a_pdfs_passages_are_found_with_their_pages() {
    let api = Api::start().await;
    let c = collection(&api, "Manuals", json!({ "kind": "everyone" })).await;
    let pdf = knowledge_ingest::samples::pdf_file(&[
        "Installation needs a torque wrench.",
        "Calibration happens every spring in Lisbon.",
    ]);
    let d = upload(&api, &c, "manual.pdf", &pdf).await;
    api.svc.index_all().await;
    assert_eq!(listed(&api, &c, &d).await["status"], "indexed");
    let reply = api.get("/api/search?q=calibration").await;
    let first = &reply.body["results"][0];
    assert_eq!(first["documentId"], d.as_str(), "{:?}", reply.body);
    assert_eq!(first["page"], 2, "{first}");
    assert!(
        first["text"].as_str().unwrap().contains("every spring"),
        "{first}"
    );
}

#[tokio::test]
async fn a_file_that_cannot_be_read_ends_failed_with_a_reason_and_is_never_found() {
    let api = Api::start().await;
    let c = collection(&api, "Scans", json!({ "kind": "everyone" })).await;
    let d = upload(&api, &c, "scan.pdf", b"%PDF-1.4\n% no objects at all\n").await;
    api.svc.index_all().await;
    let doc = listed(&api, &c, &d).await;
    assert_eq!(doc["status"], "failed", "{doc}");
    assert!(
        !doc["reason"].as_str().unwrap_or_default().is_empty(),
        "{doc}"
    );
}

#[tokio::test]
async fn an_upload_is_refused_by_format_size_and_content_without_storing_anything() {
    let api = Api::start().await;
    let c = collection(&api, "Handbook", json!({ "kind": "everyone" })).await;
    let path = format!("/collections/{c}/documents");
    let exe = admin(
        &api,
        Method::POST,
        &path,
        Some(json!({ "name": "tool.exe", "bytes": 10 })),
    )
    .await;
    assert_eq!(
        (exe.status, exe.code()),
        (415, "unsupported_format"),
        "{:?}",
        exe.body
    );
    let huge = json!({ "name": "big.pdf", "bytes": 1u64 << 40 });
    let huge = admin(&api, Method::POST, &path, Some(huge)).await;
    assert_eq!(
        (huge.status, huge.code()),
        (413, "file_too_large"),
        "{:?}",
        huge.body
    );
    let empty = admin(
        &api,
        Method::POST,
        &path,
        Some(json!({ "name": "a.md", "bytes": 0 })),
    )
    .await;
    assert_eq!(empty.status, 400, "{:?}", empty.body);

    let started = admin(
        &api,
        Method::POST,
        &path,
        Some(json!({ "name": "a.pdf", "bytes": 5 })),
    )
    .await;
    assert_eq!(started.status, 201, "{:?}", started.body);
    let target = &started.body["upload"];
    let short = send(&api, &api.user, target, b"%PDF").await;
    assert_eq!(
        (short.status, short.code()),
        (400, "size_mismatch"),
        "{:?}",
        short.body
    );
    let not_pdf = send(&api, &api.user, target, b"hello").await;
    assert_eq!(
        (not_pdf.status, not_pdf.code()),
        (400, "content_mismatch"),
        "{:?}",
        not_pdf.body
    );
    let id = started.body["document"]["id"].as_str().unwrap();
    assert_eq!(listed(&api, &c, id).await["status"], "uploading");
    let pdf = send(&api, &api.user, target, b"%PDF-").await;
    assert_eq!(pdf.status, 200, "{:?}", pdf.body);
    let again = send(&api, &api.user, target, b"%PDF-").await;
    assert_eq!(
        (again.status, again.code()),
        (409, "not_uploading"),
        "{:?}",
        again.body
    );
}

#[tokio::test]
async fn the_storage_allowance_refuses_an_upload_past_it_with_413() {
    let api = Api::start().await;
    let c = collection(&api, "Handbook", json!({ "kind": "everyone" })).await;
    let list = admin(&api, Method::GET, "/collections", None).await;
    let allowance = list.body["storage"]["allowanceBytes"].as_u64().unwrap();
    let max_file = list.body["storage"]["maxFileBytes"].as_u64().unwrap();
    let path = format!("/collections/{c}/documents");
    let mut used = 0;
    while used + max_file <= allowance {
        let body = json!({ "name": "part.pdf", "bytes": max_file });
        let started = admin(&api, Method::POST, &path, Some(body)).await;
        assert_eq!(started.status, 201, "{:?}", started.body);
        used += max_file;
    }
    let body = json!({ "name": "last.pdf", "bytes": allowance - used + 1 });
    let refused = admin(&api, Method::POST, &path, Some(body)).await;
    assert_eq!(
        (refused.status, refused.code()),
        (413, "storage_full"),
        "{:?}",
        refused.body
    );
    let list = admin(&api, Method::GET, "/collections", None).await;
    assert_eq!(list.body["storage"]["usedBytes"], used);
}

#[tokio::test]
async fn a_viewer_may_search_but_not_manage_collections() {
    let api = Api::start().await;
    let viewer = api.new_user(&api.user.org).await;
    let body = json!({ "name": "Mine", "access": { "kind": "everyone" } });
    let refused = admin_as(&api, &viewer, Method::POST, "/collections", Some(body)).await;
    assert_eq!(refused.status, 403, "{:?}", refused.body);
    assert_eq!(
        api.get_as(&viewer, "/api/search?q=anything").await.status,
        200
    );
    assert_eq!(api.get_as(&viewer, "/api/search").await.status, 400);
}

#[tokio::test]
async fn collection_and_document_changes_are_audited_with_who_made_them() {
    let api = Api::start().await;
    let c = collection(&api, "Handbook", json!({ "kind": "everyone" })).await;
    let d = upload(&api, &c, "travel.md", HANDBOOK.as_bytes()).await;
    let closed = json!({ "access": { "kind": "groups", "groups": [] } });
    admin(
        &api,
        Method::PATCH,
        &format!("/collections/{c}"),
        Some(closed),
    )
    .await;
    admin(
        &api,
        Method::DELETE,
        &format!("/collections/{c}/documents/{d}"),
        None,
    )
    .await;
    admin(&api, Method::DELETE, &format!("/collections/{c}"), None).await;
    let log = (api.svc.store)
        .list_audit(&api.user.org, None, 100)
        .await
        .unwrap();
    let mine: Vec<_> = log
        .iter()
        .rev()
        .filter(|e| e.target == c || e.target == d)
        .map(|e| (e.action.as_str(), e.by.clone()))
        .collect();
    let by = Some(api.user.id.clone());
    assert_eq!(
        mine,
        vec![
            ("collection.created", by.clone()),
            ("document.added", by.clone()),
            ("collection.changed", by.clone()),
            ("document.deleted", by.clone()),
            ("collection.deleted", by),
        ]
    );
}
