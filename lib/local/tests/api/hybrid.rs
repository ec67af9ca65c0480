//! Hybrid search in the real binary, as a newcomer starts it: with its embedding model a
//! passage is found by what it means through `GET /api/search`; without it (pip cannot bring
//! it) the service starts all the same, says so in its log, and searches by words alone. The
//! model's folder is `KNOWLEDGE_TEST_MODELS`, as `lib/embed`'s tests use it.

use std::path::Path;

use reqwest::Method;

use crate::binary::{Process, admin, call};

/// Two files that share no word with the query `kitten`, one of them about cats.
fn folder(dir: &Path) -> std::path::PathBuf {
    let docs = dir.join("handbook");
    std::fs::create_dir_all(&docs).unwrap();
    std::fs::write(
        docs.join("pets.md"),
        "# Pets at the office\n\nA feline may sleep on the sofa of the lounge on Fridays.\n",
    )
    .unwrap();
    std::fs::write(
        docs.join("parking.md"),
        "# Parking\n\nTrucks unload at the north gate before eight in the morning.\n",
    )
    .unwrap();
    docs
}

/// The names of the documents a member's search for `q` finds, best first.
async fn found(p: &Process, dir: &Path, q: &str) -> Vec<String> {
    let cookie = admin(
        dir,
        &["cookie", "--org", "org_default", "--user", "usr_default"],
    )
    .await;
    let path = format!("/api/search?q={q}");
    let (status, results) = call(Method::GET, &p.base, &path, &cookie, None).await;
    assert_eq!(status, 200, "{results}");
    (results["results"].as_array().unwrap().iter())
        .map(|r| r["documentName"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn with_its_model_the_service_finds_a_passage_by_what_it_means() {
    let Some(models) = std::env::var_os("KNOWLEDGE_TEST_MODELS") else {
        assert!(
            std::env::var_os("KNOWLEDGE_TEST_REQUIRE_MODEL").is_none(),
            "KNOWLEDGE_TEST_REQUIRE_MODEL is set but KNOWLEDGE_TEST_MODELS is not"
        );
        eprintln!("KNOWLEDGE_TEST_MODELS is not set: skipped");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let docs = folder(dir.path());
    let models = models.to_string_lossy().into_owned();
    let docs = docs.to_string_lossy().into_owned();
    let p = Process::start_with(
        dir.path(),
        &["--docs", &docs, "--models-dir", &models],
        &[],
        &[("KNOWLEDGE_HYBRID_SEARCH", "true")],
    )
    .await;
    assert!(p.logs().contains("hybrid search"), "{}", p.logs());
    let names = found(&p, dir.path(), "kitten").await;
    assert_eq!(
        names.first().map(String::as_str),
        Some("pets.md"),
        "{names:?}"
    );
    let names = found(&p, dir.path(), "lorries%20delivering%20goods").await;
    assert_eq!(
        names.first().map(String::as_str),
        Some("parking.md"),
        "{names:?}"
    );
    p.kill().await;
}

#[tokio::test]
async fn without_its_model_the_service_says_so_and_searches_by_words_alone() {
    let dir = tempfile::tempdir().unwrap();
    let docs = folder(dir.path());
    let models = dir.path().join("models").to_string_lossy().into_owned();
    let docs = docs.to_string_lossy().into_owned();
    let p = Process::start_with(
        dir.path(),
        &["--docs", &docs, "--models-dir", &models],
        &[],
        &[
            ("KNOWLEDGE_HYBRID_SEARCH", "true"),
            ("KNOWLEDGE_PYTHON", "/nonexistent/python3"),
        ],
    )
    .await;
    let logs = p.logs();
    assert!(
        logs.contains("searched by their words alone (BM25)"),
        "{logs}"
    );
    assert!(found(&p, dir.path(), "kitten").await.is_empty());
    assert_eq!(found(&p, dir.path(), "feline").await, ["pets.md"]);
    p.kill().await;
}

#[tokio::test]
async fn documents_indexed_without_the_model_are_indexed_again_once_it_is_there() {
    let Some(models) = std::env::var_os("KNOWLEDGE_TEST_MODELS") else {
        assert!(std::env::var_os("KNOWLEDGE_TEST_REQUIRE_MODEL").is_none());
        eprintln!("KNOWLEDGE_TEST_MODELS is not set: skipped");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let docs = folder(dir.path()).to_string_lossy().into_owned();
    let models = models.to_string_lossy().into_owned();
    let options = ["--docs", docs.as_str(), "--models-dir", models.as_str()];
    let words = Process::start(dir.path(), &options, &[]).await;
    assert!(found(&words, dir.path(), "kitten").await.is_empty());
    words.kill().await;

    let hybrid = Process::start_with(
        dir.path(),
        &options,
        &[],
        &[("KNOWLEDGE_HYBRID_SEARCH", "true")],
    )
    .await;
    assert!(
        hybrid.printed.contains("queued to be indexed again"),
        "{}",
        hybrid.printed
    );
    let deadline = tokio::time::Instant::now() + crate::support::WAIT;
    loop {
        let names = found(&hybrid, dir.path(), "kitten").await;
        if names.first().map(String::as_str) == Some("pets.md") {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "never found by meaning: {names:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    hybrid.kill().await;
}
