//! The dense half's port: a model that makes texts into vectors, so that a passage is found by
//! what it means as well as by the words it shares with the query (`docs/design/retrieval.md`).

/// Why a model could not embed.
#[derive(Debug, thiserror::Error)]
#[error("the embedding model")]
pub struct EmbedError(#[source] pub Box<dyn std::error::Error + Send + Sync>);

/// A sentence-embedding model.
pub trait Embedder: Send + Sync {
    /// Names the model and its weights (`all-MiniLM-L6-v2@53aa51172d14`): the index keeps it
    /// beside each passage's vector and compares a query's vector only with vectors made by
    /// the model of the same name.
    fn model(&self) -> &str;

    /// One unit-length vector per text, in order, all of the model's dimensions. Blocking and
    /// CPU-bound: call it off the async workers.
    ///
    /// # Errors
    /// The model failed; nothing is cached, so calling again is safe.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError>;
}
