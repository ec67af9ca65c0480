//! The core's `Parser` port on [`parse`]: an original made into the core's passages on the
//! blocking pool, a refusal into its reason.

use async_trait::async_trait;
use bytes::Bytes;
use knowledge_core::domain::{Format, Passage};
use knowledge_core::ports::Parser;

use crate::{Bounds, Refusal, parse};

/// [`Parser`] on [`parse`] within `bounds`: `Ingest { bounds: Bounds::DEFAULT }`, or
/// `Ingest::default()`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Ingest {
    pub bounds: Bounds,
}

#[async_trait]
impl Parser for Ingest {
    /// The passages of `bytes`, parsed off the async workers (parsing is CPU-bound and bounded
    /// in time only between pages and parts). Errors: the [`Refusal`]'s message, which a person
    /// can act on.
    async fn parse(&self, format: Format, bytes: Bytes) -> Result<Vec<Passage>, String> {
        let bounds = self.bounds;
        let parsed = tokio::task::spawn_blocking(move || parse(format, &bytes, &bounds))
            .await
            .unwrap_or_else(|_| Err(Refusal::Malformed("the parser failed".into())));
        match parsed {
            Ok(passages) => Ok(passages
                .into_iter()
                .map(|p| Passage {
                    headings: p.headings,
                    page: p.page,
                    text: p.text,
                })
                .collect()),
            Err(refusal) => Err(refusal.to_string()),
        }
    }
}
