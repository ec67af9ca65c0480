//! The passage index: a document's passages replaced at once, searches kept within the
//! collections asked and the organisation asked, removals, and an index that outlives its
//! process on disk.

use knowledge_search::{DocumentKey, NewPassage, PassageIndex, SearchError};

fn key<'a>(collection: &'a str, document: &'a str, generation: u64) -> DocumentKey<'a> {
    DocumentKey {
        collection,
        document,
        generation,
    }
}

fn passage(text: &str) -> NewPassage<'_> {
    NewPassage {
        headings: &[],
        page: None,
        text,
    }
}

fn documents(index: &PassageIndex, org: &str, query: &str, collections: &[&str]) -> Vec<String> {
    let hits = index.search(org, query, collections, 10).unwrap();
    hits.into_iter()
        .map(|h| format!("{}#{}@{}", h.document, h.ordinal, h.generation))
        .collect()
}

#[test]
fn a_replaced_document_is_found_by_its_new_passages_only() {
    let index = PassageIndex::in_memory();
    let old = [
        passage("Expenses are filed monthly."),
        passage("Receipts kept for years."),
    ];
    index
        .replace("org_a", key("col_1", "doc_1", 1), &old)
        .unwrap();
    assert_eq!(
        documents(&index, "org_a", "receipts", &["col_1"]),
        ["doc_1#1@1"]
    );
    let new = [passage("Expenses are filed weekly.")];
    index
        .replace("org_a", key("col_1", "doc_1", 2), &new)
        .unwrap();
    assert!(documents(&index, "org_a", "receipts", &["col_1"]).is_empty());
    assert_eq!(
        documents(&index, "org_a", "filed weekly", &["col_1"]),
        ["doc_1#0@2"]
    );
}

#[test]
fn a_search_stays_within_the_collections_and_the_organisation_asked() {
    let index = PassageIndex::in_memory();
    index
        .replace(
            "org_a",
            key("hr", "handbook", 1),
            &[passage("Parental leave is sixteen weeks.")],
        )
        .unwrap();
    index
        .replace(
            "org_a",
            key("board", "minutes", 1),
            &[passage("Leave of absence for the CEO.")],
        )
        .unwrap();
    index
        .replace(
            "org_b",
            key("hr", "theirs", 1),
            &[passage("Leave policy of another company.")],
        )
        .unwrap();
    assert_eq!(
        documents(&index, "org_a", "leave", &["hr"]),
        ["handbook#0@1"]
    );
    let both = documents(&index, "org_a", "leave", &["hr", "board"]);
    assert_eq!(both.len(), 2, "{both:?}");
    assert!(documents(&index, "org_a", "leave", &[]).is_empty());
    assert_eq!(
        documents(&index, "org_b", "leave", &["hr", "board"]),
        ["theirs#0@1"]
    );
}

#[test]
fn headings_and_pages_come_back_with_their_passage_and_a_headings_words_find_it() {
    let index = PassageIndex::in_memory();
    let headings = ["Travel".to_owned(), "Trains".to_owned()];
    let passages = [
        NewPassage {
            headings: &headings,
            page: Some(3),
            text: "Book second class.",
        },
        NewPassage {
            headings: &[],
            page: Some(4),
            text: "Trains are mentioned once here.",
        },
    ];
    index
        .replace("org_a", key("c", "policy", 7), &passages)
        .unwrap();
    // "trains" is only in the first passage's headings: they are searched as its text is.
    let hits = index.search("org_a", "trains", &["c"], 10).unwrap();
    assert_eq!(hits.len(), 2, "{hits:?}");
    let titled = hits.iter().find(|h| h.page == Some(3)).unwrap();
    assert_eq!(titled.headings, headings);
    assert_eq!(titled.text, "Book second class.");
    let travel = index.search("org_a", "travel", &["c"], 10).unwrap();
    assert_eq!(travel.len(), 1, "{travel:?}");
    assert_eq!(travel[0].page, Some(3));
}

#[test]
fn removing_a_document_or_a_collection_takes_its_passages_out_at_once() {
    let index = PassageIndex::in_memory();
    index
        .replace("org_a", key("c1", "d1", 1), &[passage("alpha beta")])
        .unwrap();
    index
        .replace("org_a", key("c1", "d2", 1), &[passage("alpha gamma")])
        .unwrap();
    index
        .replace("org_a", key("c2", "d3", 1), &[passage("alpha delta")])
        .unwrap();
    index.remove("org_a", "d1").unwrap();
    index.remove("org_a", "d1").unwrap();
    assert_eq!(documents(&index, "org_a", "alpha", &["c1"]), ["d2#0@1"]);
    index.remove_collection("org_a", "c1").unwrap();
    assert!(documents(&index, "org_a", "alpha", &["c1"]).is_empty());
    assert_eq!(documents(&index, "org_a", "alpha", &["c2"]), ["d3#0@1"]);
}

#[test]
fn query_syntax_is_read_as_words_never_as_a_match_all() {
    let index = PassageIndex::in_memory();
    index
        .replace("org_a", key("c", "d", 1), &[passage("nothing relevant")])
        .unwrap();
    for query in ["*", "collection:c", "text:*", "", "a:b:c", "NOT x"] {
        assert!(
            documents(&index, "org_a", query, &["c"]).is_empty(),
            "{query}"
        );
    }
}

#[test]
fn an_id_that_could_name_another_folder_is_refused() {
    let index = PassageIndex::in_memory();
    for bad in ["../org_b", "org/b", "", "org b"] {
        assert!(
            matches!(
                index.search(bad, "x", &["c"], 5),
                Err(SearchError::BadId(_))
            ),
            "{bad}"
        );
    }
    let refused = index.replace("org_a", key("c", "../d", 1), &[passage("x")]);
    assert!(matches!(refused, Err(SearchError::BadId(_))));
}

#[test]
fn an_index_on_disk_is_found_again_by_the_next_process() {
    let dir = tempfile::tempdir().unwrap();
    {
        let index = PassageIndex::on_disk(dir.path());
        index
            .replace("org_a", key("c", "d", 1), &[passage("durable words")])
            .unwrap();
    }
    let reopened = PassageIndex::on_disk(dir.path());
    assert_eq!(documents(&reopened, "org_a", "durable", &["c"]), ["d#0@1"]);
}

#[test]
fn several_documents_replaced_in_one_commit_are_all_found_and_a_bad_id_changes_none() {
    let index = PassageIndex::in_memory();
    let (one, two) = ([passage("first words")], [passage("second words")]);
    let batch = [(key("c", "d1", 1), &one[..]), (key("c", "d2", 1), &two[..])];
    index.replace_many("org_a", &batch).unwrap();
    let mut found = documents(&index, "org_a", "words", &["c"]);
    found.sort();
    assert_eq!(found, ["d1#0@1", "d2#0@1"]);
    let bad = [
        (key("c", "d1", 2), &two[..]),
        (key("c", "../d3", 1), &one[..]),
    ];
    assert!(index.replace_many("org_a", &bad).is_err());
    assert_eq!(documents(&index, "org_a", "first", &["c"]), ["d1#0@1"]);
}

#[test]
fn a_document_the_index_holds_newer_is_left_out_of_a_batch_and_the_others_written() {
    let index = PassageIndex::in_memory();
    index
        .replace("org_a", key("c", "d1", 3), &[passage("newer words")])
        .unwrap();
    let (old, fresh) = ([passage("older words")], [passage("fresh words")]);
    let batch = [
        (key("c", "d1", 2), &old[..]),
        (key("c", "d2", 1), &fresh[..]),
    ];
    assert_eq!(index.replace_many("org_a", &batch).unwrap(), 1);
    let mut found = documents(&index, "org_a", "words", &["c"]);
    found.sort();
    assert_eq!(found, ["d1#0@3", "d2#0@1"]);
    assert!(
        !index
            .replace("org_a", key("c", "d1", 1), &[passage("x")])
            .unwrap()
    );
    assert!(
        index
            .replace("org_a", key("c", "d1", 3), &[passage("again")])
            .unwrap()
    );
}

#[test]
fn a_settled_index_is_its_meta_and_files_and_a_copy_of_them_opens_elsewhere() {
    let (here, there) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let index = PassageIndex::on_disk(here.path());
    for n in 0..3 {
        let document = format!("doc_{n}");
        let text = format!("Travel policy number {n}.");
        (index.replace("org_a", key("col_1", &document, 1), &[passage(&text)])).unwrap();
    }
    index.remove("org_a", "doc_0").unwrap();
    let committed = index.settle("org_a").unwrap();
    assert!(committed.meta.contains("segments"));
    assert!(!committed.files.is_empty());
    let folder = index.folder("org_a").unwrap().unwrap();
    let copy = there.path().join("org_a");
    std::fs::create_dir_all(&copy).unwrap();
    for file in &committed.files {
        std::fs::copy(folder.join(file), copy.join(file)).unwrap();
    }
    std::fs::write(copy.join("meta.json"), &committed.meta).unwrap();
    let elsewhere = PassageIndex::on_disk(there.path());
    let mut found = documents(&elsewhere, "org_a", "travel", &["col_1"]);
    found.sort();
    assert_eq!(found, ["doc_1#0@1", "doc_2#0@1"]);
    // Writing again after settling takes a new writer; closing forgets the open index.
    (index.replace("org_a", key("col_1", "doc_3", 1), &[passage("Travel too.")])).unwrap();
    index.close("org_a");
    assert_eq!(documents(&index, "org_a", "travel", &["col_1"]).len(), 3);
    assert!(PassageIndex::in_memory().settle("org_a").is_err());
}

#[test]
fn an_index_an_older_version_wrote_with_another_schema_is_made_anew_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("org");
    std::fs::create_dir_all(&folder).unwrap();
    let mut old = tantivy::schema::Schema::builder();
    let text = old.add_text_field("text", tantivy::schema::TEXT | tantivy::schema::STORED);
    let old = tantivy::Index::create_in_dir(&folder, old.build()).unwrap();
    let mut writer: tantivy::IndexWriter = old.writer(15_000_000).unwrap();
    writer
        .add_document(tantivy::doc!(text => "an old passage"))
        .unwrap();
    writer.commit().unwrap();
    drop(writer);

    let index = PassageIndex::on_disk(dir.path());
    assert!(index.was_reset("org").unwrap());
    assert!(documents(&index, "org", "passage", &["c"]).is_empty());
    index
        .replace("org", key("c", "new", 1), &[passage("a new passage")])
        .unwrap();
    assert_eq!(documents(&index, "org", "passage", &["c"]), ["new#0@1"]);
    let died = PassageIndex::on_disk(dir.path());
    assert!(
        died.was_reset("org").unwrap(),
        "a process that dies before the requeue leaves the reset known"
    );
    died.requeued("org").unwrap();
    let again = PassageIndex::on_disk(dir.path());
    assert!(
        !again.was_reset("org").unwrap(),
        "made anew once, not at every start"
    );
    assert_eq!(documents(&again, "org", "passage", &["c"]), ["new#0@1"]);
}
