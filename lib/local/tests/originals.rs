//! The originals in the data directory (`FolderOriginals`): a file per generation, stored,
//! read back, replaced whole, deleted, and its older generations cleared; two generations put
//! at once both land whole.

use bytes::Bytes;
use knowledge_core::ids::{DocumentId, OrgId};
use knowledge_core::ports::Originals;
use knowledge_local::FolderOriginals;

fn ids() -> (OrgId, DocumentId) {
    (OrgId::parse("org_a").unwrap(), DocumentId::generate())
}

/// The names of the files in the document's folder, sorted.
fn files(dir: &std::path::Path, org: &OrgId, document: &DocumentId) -> Vec<String> {
    let folder = dir
        .join("documents")
        .join(org.as_str())
        .join(document.as_str());
    let Ok(entries) = std::fs::read_dir(folder) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn an_original_is_stored_by_generation_read_back_and_replaced_whole() {
    let dir = tempfile::tempdir().unwrap();
    let originals = FolderOriginals::in_data_dir(dir.path());
    let (org, doc) = ids();
    assert_eq!(originals.get(&org, &doc, 1).await.unwrap(), None);
    originals
        .put(&org, &doc, 1, Bytes::from_static(b"first upload"))
        .await
        .unwrap();
    assert_eq!(
        originals.get(&org, &doc, 1).await.unwrap().as_deref(),
        Some(&b"first upload"[..])
    );
    assert_eq!(originals.get(&org, &doc, 2).await.unwrap(), None);
    let other = OrgId::parse("org_b").unwrap();
    assert_eq!(originals.get(&other, &doc, 1).await.unwrap(), None);
    originals
        .put(&org, &doc, 1, Bytes::from_static(b"again"))
        .await
        .unwrap();
    assert_eq!(
        originals.get(&org, &doc, 1).await.unwrap().as_deref(),
        Some(&b"again"[..])
    );
    assert_eq!(files(dir.path(), &org, &doc), ["1"]);
}

#[tokio::test]
async fn deleting_a_document_removes_every_generation_and_again_is_fine() {
    let dir = tempfile::tempdir().unwrap();
    let originals = FolderOriginals::in_data_dir(dir.path());
    let (org, doc) = ids();
    let kept = DocumentId::generate();
    for generation in [1, 2] {
        originals
            .put(&org, &doc, generation, Bytes::from_static(b"x"))
            .await
            .unwrap();
    }
    originals
        .put(&org, &kept, 1, Bytes::from_static(b"kept"))
        .await
        .unwrap();
    originals.delete(&org, &doc).await.unwrap();
    originals.delete(&org, &doc).await.unwrap();
    originals
        .delete(&org, &DocumentId::generate())
        .await
        .unwrap();
    assert_eq!(originals.get(&org, &doc, 1).await.unwrap(), None);
    assert_eq!(originals.get(&org, &doc, 2).await.unwrap(), None);
    assert!(files(dir.path(), &org, &doc).is_empty());
    assert_eq!(
        originals.get(&org, &kept, 1).await.unwrap().as_deref(),
        Some(&b"kept"[..])
    );
}

#[tokio::test]
async fn deleting_older_generations_keeps_that_one_and_newer_and_a_crashs_partial_file_goes() {
    let dir = tempfile::tempdir().unwrap();
    let originals = FolderOriginals::in_data_dir(dir.path());
    let (org, doc) = ids();
    for generation in [1, 2, 3, 10] {
        let bytes = Bytes::from(format!("generation {generation}"));
        originals.put(&org, &doc, generation, bytes).await.unwrap();
    }
    // What a crash in the middle of a put leaves, and a file no put made.
    let folder = dir.path().join("documents/org_a").join(doc.as_str());
    std::fs::write(folder.join("2.partial-1-0"), b"torn").unwrap();
    std::fs::write(folder.join("notes"), b"someone's").unwrap();
    originals.delete_older(&org, &doc, 3).await.unwrap();
    originals.delete_older(&org, &doc, 3).await.unwrap();
    assert_eq!(files(dir.path(), &org, &doc), ["10", "3", "notes"]);
    assert_eq!(
        originals.get(&org, &doc, 3).await.unwrap().as_deref(),
        Some(&b"generation 3"[..])
    );
    originals
        .delete_older(&org, &DocumentId::generate(), 3)
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_generations_put_at_once_both_land_whole() {
    let dir = tempfile::tempdir().unwrap();
    let originals = FolderOriginals::in_data_dir(dir.path());
    let (org, doc) = ids();
    let body = |generation: u64| Bytes::from(vec![b'0' + generation as u8; 4 << 20]);
    let mut puts = Vec::new();
    for generation in [1, 2, 1, 2] {
        let (originals, org, doc) = (originals.clone(), org.clone(), doc.clone());
        puts.push(tokio::spawn(async move {
            originals
                .put(&org, &doc, generation, body(generation))
                .await
        }));
    }
    for put in puts {
        put.await.unwrap().unwrap();
    }
    for generation in [1, 2] {
        let read = originals.get(&org, &doc, generation).await.unwrap();
        assert!(read == Some(body(generation)), "generation {generation}");
    }
    assert_eq!(files(dir.path(), &org, &doc), ["1", "2"]);
}
