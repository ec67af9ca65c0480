//! Hybrid search over the index: a passage found by what it means, the two rankings fused, and
//! vectors compared only with a query's of the same model. The model here is a small one that
//! knows three concepts (the real model's own tests are `lib/embed`'s): what is tested is the
//! index's keeping, reading and fusing of vectors.

use std::sync::Arc;

use knowledge_search::{DocumentKey, EmbedError, Embedder, NewPassage, PassageIndex};

/// Vectors over three concepts, by the words a text holds: animals, vehicles, anything else.
struct Concepts(&'static str);

impl Embedder for Concepts {
    fn model(&self) -> &str {
        self.0
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(texts
            .iter()
            .map(|text| {
                let mut v = [0.0f32; 3];
                for word in text.to_lowercase().split(|c: char| !c.is_alphanumeric()) {
                    let axis = match word {
                        "cat" | "kitten" | "feline" | "dog" => 0,
                        "car" | "automobile" | "vehicle" | "truck" => 1,
                        "" => continue,
                        _ => 2,
                    };
                    v[axis] += 1.0;
                }
                // Words of no concept weigh little, so that a text is its concepts.
                v[2] *= 0.1;
                let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
                v.iter().map(|x| x / norm).collect()
            })
            .collect())
    }
}

fn write(index: &PassageIndex, document: &str, text: &str) {
    let passage = [NewPassage {
        headings: &[],
        page: None,
        text,
    }];
    let key = DocumentKey {
        collection: "c",
        document,
        generation: 1,
    };
    index.replace("org", key, &passage).unwrap();
}

fn found(index: &PassageIndex, query: &str) -> Vec<String> {
    (index.search("org", query, &["c"], 10).unwrap())
        .into_iter()
        .map(|hit| hit.document)
        .collect()
}

fn concepts(name: &'static str) -> Arc<dyn Embedder> {
    Arc::new(Concepts(name))
}

#[test]
fn a_passage_that_shares_no_word_with_the_query_is_found_by_its_meaning() {
    let index = PassageIndex::in_memory().with_embedder(concepts("concepts@1"));
    write(
        &index,
        "pets",
        "The feline sleeps on the sofa all afternoon.",
    );
    write(&index, "roads", "The truck waits at the crossing.");
    assert_eq!(
        found(&index, "kitten").first().map(String::as_str),
        Some("pets")
    );
    assert_eq!(
        found(&index, "automobile").first().map(String::as_str),
        Some("roads")
    );
}

#[test]
fn without_a_model_only_shared_words_find_a_passage() {
    let index = PassageIndex::in_memory();
    write(
        &index,
        "pets",
        "The feline sleeps on the sofa all afternoon.",
    );
    assert!(found(&index, "kitten").is_empty());
    assert_eq!(found(&index, "feline"), ["pets"]);
}

#[test]
fn a_passage_both_halves_find_ranks_above_one_only_its_words_find() {
    let index = PassageIndex::in_memory().with_embedder(concepts("concepts@1"));
    write(
        &index,
        "words",
        "The garage opens at nine; ask for the car keys there.",
    );
    write(&index, "both", "A car is a vehicle.");
    write(&index, "meaning", "The truck and the automobile.");
    let order = found(&index, "car");
    assert_eq!(order.first().map(String::as_str), Some("both"), "{order:?}");
    assert!(order.contains(&"meaning".to_owned()), "{order:?}");
}

#[test]
fn a_query_is_never_compared_with_another_models_vectors() {
    let dir = tempfile::tempdir().unwrap();
    let first = PassageIndex::on_disk(dir.path()).with_embedder(concepts("concepts@1"));
    write(
        &first,
        "pets",
        "The feline sleeps on the sofa all afternoon.",
    );
    drop(first);
    let other = PassageIndex::on_disk(dir.path()).with_embedder(concepts("concepts@2"));
    assert!(
        found(&other, "kitten").is_empty(),
        "another model's vectors were compared"
    );
    assert_eq!(found(&other, "feline"), ["pets"], "the words still find it");
    let same = PassageIndex::on_disk(dir.path()).with_embedder(concepts("concepts@1"));
    assert_eq!(
        found(&same, "kitten"),
        ["pets"],
        "the same model reads its vectors back"
    );
}

#[test]
fn a_replaced_passages_old_meaning_is_found_no_more() {
    let index = PassageIndex::in_memory().with_embedder(concepts("concepts@1"));
    write(
        &index,
        "pets",
        "The feline sleeps on the sofa all afternoon.",
    );
    write(&index, "notes", "A feline.");
    assert_eq!(found(&index, "kitten")[..2], ["notes", "pets"]);
    let passage = [NewPassage {
        headings: &[],
        page: None,
        text: "The truck waits at the crossing.",
    }];
    let key = DocumentKey {
        collection: "c",
        document: "notes",
        generation: 2,
    };
    index.replace("org", key, &passage).unwrap();
    // Every passage comes back, the nearest first: the replaced one is now the farthest.
    assert_eq!(found(&index, "kitten"), ["pets", "notes"]);
    assert_eq!(found(&index, "automobile"), ["notes", "pets"]);
    index.remove("org", "notes").unwrap();
    assert_eq!(found(&index, "automobile"), ["pets"]);
}

#[test]
fn a_search_by_meaning_stays_within_the_collections_asked() {
    let index = PassageIndex::in_memory().with_embedder(concepts("concepts@1"));
    let passage = [NewPassage {
        headings: &[],
        page: None,
        text: "The feline sleeps.",
    }];
    let key = DocumentKey {
        collection: "closed",
        document: "pets",
        generation: 1,
    };
    index.replace("org", key, &passage).unwrap();
    assert!(found(&index, "kitten").is_empty());
    let other_org = index.search("other", "kitten", &["closed"], 10).unwrap();
    assert!(other_org.is_empty());
}
