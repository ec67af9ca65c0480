//! The core's `PassageIndex` port on the tantivy index: a slower worker's older generation never
//! replaces a newer one, the same or a newer one does, hits come back as the core's passages,
//! and removals reach them.

use std::sync::Arc;

use knowledge_core::domain::Passage;
use knowledge_core::ids::{CollectionId, DocumentId, OrgId};
use knowledge_core::ports::PassageIndex as _;
use knowledge_search::{DocumentKey, NewPassage, PassageIndex, TantivyIndex};

fn port() -> TantivyIndex {
    TantivyIndex::new(Arc::new(PassageIndex::in_memory()))
}

fn passages(texts: &[&str]) -> Vec<Passage> {
    texts
        .iter()
        .map(|text| Passage {
            headings: vec!["Policy".to_owned()],
            page: None,
            text: (*text).to_owned(),
        })
        .collect()
}

/// The generations of the passages `query` finds in `collection`.
async fn generations(
    index: &TantivyIndex, org: &OrgId, query: &str, collection: &CollectionId,
) -> Vec<u64> {
    let found = index
        .search(org, query, std::slice::from_ref(collection), 10)
        .await
        .unwrap();
    found.into_iter().map(|p| p.generation).collect()
}

#[tokio::test]
async fn an_older_generation_never_replaces_a_newer_one_and_the_same_or_a_newer_one_does() {
    let index = port();
    let (org, col, doc) = (
        OrgId::parse("org_a").unwrap(),
        CollectionId::generate(),
        DocumentId::generate(),
    );
    index
        .replace(&org, &col, &doc, 2, passages(&["second upload"]))
        .await
        .unwrap();
    // The first upload's worker, slower, finishes after the second's.
    index
        .replace(&org, &col, &doc, 1, passages(&["first upload"]))
        .await
        .unwrap();
    assert!(generations(&index, &org, "first", &col).await.is_empty());
    assert_eq!(generations(&index, &org, "second", &col).await, [2]);
    // The same generation again (a job retried) replaces.
    index
        .replace(&org, &col, &doc, 2, passages(&["second retried"]))
        .await
        .unwrap();
    assert_eq!(generations(&index, &org, "retried", &col).await, [2]);
    assert!(generations(&index, &org, "upload", &col).await.is_empty());
    index
        .replace(&org, &col, &doc, 3, passages(&["third upload"]))
        .await
        .unwrap();
    assert_eq!(generations(&index, &org, "upload", &col).await, [3]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_racing_over_one_document_leave_its_newest_generation() {
    let index = port();
    let (org, col, doc) = (
        OrgId::parse("org_a").unwrap(),
        CollectionId::generate(),
        DocumentId::generate(),
    );
    // Started in no order and run at once: whichever commits last, the newest stays.
    let order = [12u64, 3, 7, 1, 11, 5, 9, 2, 10, 4, 8, 6];
    let mut workers = Vec::new();
    for generation in order {
        let (index, org, col, doc) = (index.clone(), org.clone(), col.clone(), doc.clone());
        workers.push(tokio::spawn(async move {
            let text = format!("words of generation{generation}");
            index
                .replace(&org, &col, &doc, generation, passages(&[&text]))
                .await
                .unwrap();
        }));
    }
    for worker in workers {
        worker.await.unwrap();
    }
    assert_eq!(generations(&index, &org, "words", &col).await, [12]);
}

#[tokio::test]
async fn hits_come_back_as_the_cores_passages_and_one_with_foreign_ids_is_left_out() {
    let index = port();
    let (org, col, doc) = (
        OrgId::parse("org_a").unwrap(),
        CollectionId::generate(),
        DocumentId::generate(),
    );
    let passage = Passage {
        headings: vec!["Travel".to_owned(), "Trains".to_owned()],
        page: Some(4),
        text: "Book trains in second class.".to_owned(),
    };
    index
        .replace(&org, &col, &doc, 7, vec![passage.clone()])
        .await
        .unwrap();
    // Written past the port, with an id the core does not make.
    let foreign = DocumentKey {
        collection: col.as_str(),
        document: "handbook",
        generation: 1,
    };
    let text = [NewPassage {
        headings: &[],
        page: None,
        text: "Trains are cheaper.",
    }];
    assert!(index.index().replace("org_a", foreign, &text).unwrap());

    let found = index
        .search(&org, "trains", std::slice::from_ref(&col), 10)
        .await
        .unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
    let hit = &found[0];
    assert_eq!((&hit.collection, &hit.document), (&col, &doc));
    assert_eq!((hit.generation, hit.ordinal), (7, 0));
    assert_eq!(hit.headings, passage.headings);
    assert_eq!(hit.page, passage.page);
    assert_eq!(hit.text, passage.text);
    assert!(hit.score > 0.0);
}

#[tokio::test]
async fn removing_a_document_or_a_collection_reaches_the_index() {
    let index = port();
    let org = OrgId::parse("org_a").unwrap();
    let (col_1, col_2) = (CollectionId::generate(), CollectionId::generate());
    let (doc_1, doc_2, doc_3) = (
        DocumentId::generate(),
        DocumentId::generate(),
        DocumentId::generate(),
    );
    for (col, doc) in [(&col_1, &doc_1), (&col_1, &doc_2), (&col_2, &doc_3)] {
        index
            .replace(&org, col, doc, 1, passages(&["alpha"]))
            .await
            .unwrap();
    }
    index.remove(&org, &doc_1).await.unwrap();
    index.remove(&org, &doc_1).await.unwrap();
    let both = [col_1.clone(), col_2.clone()];
    let found = index.search(&org, "alpha", &both, 10).await.unwrap();
    let mut documents: Vec<_> = found.into_iter().map(|p| p.document).collect();
    documents.sort();
    let mut expected = vec![doc_2.clone(), doc_3.clone()];
    expected.sort();
    assert_eq!(documents, expected);
    index.remove_collection(&org, &col_1).await.unwrap();
    let found = index.search(&org, "alpha", &both, 10).await.unwrap();
    let documents: Vec<_> = found.into_iter().map(|p| p.document).collect();
    assert_eq!(documents, [doc_3]);
}
