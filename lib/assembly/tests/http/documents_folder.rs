//! What no route does: a collection kept in step with a folder (`serve --docs DIR`), whose
//! files added, changed and removed are reflected at the next sync, each found (or not) whole,
//! the collection read-only in the admin API; and the passages rebuilt from the originals
//! (`knowledge documents reindex`).

use reqwest::Method;
use serde_json::json;

use crate::support::{Api, admin};
use knowledge_local::documents::Folder;

/// A folder named `name` of the default organisation, made empty in a temporary directory
/// (kept as long as the guard).
fn folder_of(api: &Api, name: &str) -> (tempfile::TempDir, Folder) {
    let dir = tempfile::tempdir().unwrap();
    let folder = Folder {
        dir: dir.path().join(name),
        org: api.user.org.clone(),
    };
    std::fs::create_dir_all(&folder.dir).unwrap();
    (dir, folder)
}

/// The document names `q` finds for the default admin.
async fn found(api: &Api, q: &str) -> Vec<String> {
    let reply = api.get(&format!("/api/search?q={q}")).await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    let results = reply.body["results"].as_array().unwrap();
    let mut names: Vec<String> = (results.iter())
        .map(|r| r["documentName"].as_str().unwrap().to_owned())
        .collect();
    names.dedup();
    names
}

#[tokio::test]
async fn a_folders_files_added_changed_and_removed_are_reflected_at_the_next_sync() {
    let api = Api::start().await;
    let (_dir, folder) = folder_of(&api, "handbook");
    std::fs::create_dir_all(folder.dir.join("travel")).unwrap();
    std::fs::write(
        folder.dir.join("leave.md"),
        "# Leave\n\nTwenty five days of leave.\n",
    )
    .unwrap();
    std::fs::write(
        folder.dir.join("travel/lisbon.md"),
        "# Lisbon\n\nThe per diem is forty euros.\n",
    )
    .unwrap();
    std::fs::write(folder.dir.join("notes.bin"), [0u8, 1, 2]).unwrap();
    std::fs::write(folder.dir.join(".hidden.md"), "# Secret\n\nnever synced\n").unwrap();

    let synced = folder.sync(&api.svc.documents).await.unwrap();
    assert_eq!(
        (synced.added, synced.replaced, synced.removed),
        (2, 0, 0),
        "{synced:?}"
    );
    api.svc.index_all().await;
    assert_eq!(found(&api, "euros").await, ["travel/lisbon.md"]);
    assert!(found(&api, "secret").await.is_empty());

    std::fs::write(
        folder.dir.join("travel/lisbon.md"),
        "# Lisbon\n\nThe per diem is fifty pounds.\n",
    )
    .unwrap();
    std::fs::remove_file(folder.dir.join("leave.md")).unwrap();
    std::fs::write(
        folder.dir.join("porto.md"),
        "# Porto\n\nThe per diem is thirty euros.\n",
    )
    .unwrap();
    let synced = folder.sync(&api.svc.documents).await.unwrap();
    assert_eq!(
        (synced.added, synced.replaced, synced.removed),
        (1, 1, 1),
        "{synced:?}"
    );
    api.svc.index_all().await;
    assert_eq!(found(&api, "euros").await, ["porto.md"]);
    assert_eq!(found(&api, "pounds").await, ["travel/lisbon.md"]);
    assert!(found(&api, "leave").await.is_empty());

    let again = folder.sync(&api.svc.documents).await.unwrap();
    assert_eq!(
        (again.added, again.replaced, again.removed, again.unchanged),
        (0, 0, 0, 2)
    );
}

#[tokio::test]
async fn a_folders_collection_is_read_only_in_the_admin_api() {
    let api = Api::start().await;
    let (_dir, folder) = folder_of(&api, "guide");
    std::fs::write(folder.dir.join("a.md"), "# A\n\nalpha\n").unwrap();
    folder.sync(&api.svc.documents).await.unwrap();
    let list = admin(&api, Method::GET, "/collections", None).await;
    let guide = &list.body["collections"][0];
    assert_eq!(
        (guide["name"].as_str(), guide["source"].as_str()),
        (Some("guide"), Some("folder"))
    );
    let id = guide["id"].as_str().unwrap();
    let body = json!({ "name": "b.md", "bytes": 3 });
    let refused = admin(
        &api,
        Method::POST,
        &format!("/collections/{id}/documents"),
        Some(body),
    )
    .await;
    assert_eq!(
        (refused.status, refused.code()),
        (409, "collection_synced_from_folder")
    );
}

#[tokio::test]
async fn a_reindex_rebuilds_every_documents_passages_from_its_original_once() {
    let api = Api::start().await;
    let (_dir, folder) = folder_of(&api, "guide");
    std::fs::write(folder.dir.join("a.md"), "# A\n\nalpha beta\n").unwrap();
    std::fs::write(folder.dir.join("b.md"), "# B\n\nbeta gamma\n").unwrap();
    folder.sync(&api.svc.documents).await.unwrap();
    api.svc.index_all().await;
    let operator = knowledge_core::admin::Admin::operator(api.user.org.clone());
    assert_eq!(api.svc.documents.reindex(&operator).await.unwrap(), 2);
    assert!(
        found(&api, "beta").await.is_empty(),
        "found while queued again"
    );
    assert_eq!(api.svc.documents.reindex(&operator).await.unwrap(), 0);
    api.svc.index_all().await;
    let reply = api.get("/api/search?q=beta").await;
    let results = reply.body["results"].as_array().unwrap();
    let mut names: Vec<&str> = (results.iter())
        .map(|r| r["documentName"].as_str().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["a.md", "b.md"], "each passage once");
}
