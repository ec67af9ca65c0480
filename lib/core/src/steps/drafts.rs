//! The answer in progress while `CallAgent` waits on the provider: the text the provider has
//! streamed so far is written beside the session, the first piece at once and then at most
//! once every [`DRAFT_EVERY`], until the call ends (the step's commit then removes it).

use std::convert::Infallible;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::domain::{Draft, DraftMark, draft_text};
use crate::ids::{RunId, SessionKey};
use crate::ports::{Drafts, StoreError};

use super::Steps;

/// The least time between two draft writes of one agent call: a transcript poll sees a draft
/// at most this old, and a 5 s answer costs about five writes.
pub const DRAFT_EVERY: Duration = Duration::from_secs(1);

/// The latest text an agent call reported, for [`Steps::keep_drafts`] to write at its pace,
/// and when its first words came.
pub(super) struct Latest(watch::Sender<String>, OnceLock<Instant>);

impl Latest {
    pub(super) fn new() -> (Self, watch::Receiver<String>) {
        let (tx, rx) = watch::channel(String::new());
        (Self(tx, OnceLock::new()), rx)
    }

    /// When the call reported its first words, if it did.
    pub(super) fn first_words(&self) -> Option<Instant> {
        self.1.get().copied()
    }
}

impl Drafts for Latest {
    fn written(&self, text: &str) {
        if !text.trim().is_empty() {
            self.1.get_or_init(Instant::now);
        }
        // Only what a draft keeps, so that a long answer is not copied whole at each piece.
        let kept = draft_text(text);
        self.0.send_if_modified(|latest| {
            let changed = latest != kept;
            if changed {
                kept.clone_into(latest);
            }
            changed
        });
    }
}

impl Steps {
    /// Writes the drafts `latest` receives for the call `mark` of `run`, the first at once and
    /// then at most one every [`DRAFT_EVERY`]. Never returns: the caller drops it when the call
    /// ends (a write cut short then is harmless: its mark is the ended call's, never shown).
    /// It stops writing once the session refuses drafts (gone, or another run's), skips a
    /// write that met a commit in flight, and logs a failed one without failing the step: a
    /// draft is only a preview.
    pub(super) async fn keep_drafts(
        &self, key: &SessionKey, run: &RunId, mark: DraftMark, mut latest: watch::Receiver<String>,
    ) -> Infallible {
        loop {
            if latest.changed().await.is_err() {
                break;
            }
            let draft = Draft::new(&latest.borrow_and_update(), self.clock.now(), mark);
            match self.sessions.put_draft(key, run, &draft).await {
                Ok(true) => {}
                Ok(false) => break,
                Err(StoreError::Conflict) => {}
                Err(e) => tracing::warn!(
                    session = %key.session,
                    error = %crate::error::Chain(&e),
                    "a draft was not written"
                ),
            }
            tokio::time::sleep(DRAFT_EVERY).await;
        }
        std::future::pending().await
    }
}
