//! Naming and finding conversations: a member renames one (the title stays derived from the
//! first message until then) and finds theirs by words of the title.

use crate::domain::{FoundSessions, SESSION_LIST_LIMIT, Title, TitleQuery};
use crate::error::CoreError;
use crate::ids::SessionId;
use crate::policy::limits::Action;
use crate::ports::{Gate, Reads, StoreError};

use super::admission::admit;
use super::stop::live;
use super::{MAX_COMMIT_ATTEMPTS, Principal, Service, SignedIn};

impl Service {
    /// Gives the session `title`, keeping its place in the list (its `updatedAt` does not
    /// move) and everything else of it; a turn in flight goes on (its next commit reads the
    /// session again). Takes a slot of the member's rename limit. Two store round trips: the
    /// membership, session and rate window read together, then the session and the rate window
    /// written in one transaction. Idempotent: the same title again changes nothing more.
    /// Errors: `Unauthenticated`, `NotFound`, `RateLimited`.
    pub async fn rename_session(
        &self, who: &SignedIn, session: &SessionId, title: &Title,
    ) -> Result<(), CoreError> {
        let action = Action::Rename;
        let window = action.key(&who.user);
        let reads = Reads {
            rate_window: Some(&window),
            session: Some(session),
            ..who.reads()
        };
        for _ in 0..MAX_COMMIT_ATTEMPTS {
            let mut read = self.read_as(who, reads).await?;
            let current = live(read.session.take())?;
            let slot = admit(action, &who.user, None, &read, self.now())?;
            let mut next = current.clone();
            next.title = title.as_str().to_owned();
            next.version += 1;
            let gate = Gate {
                rate: slot.update(),
                query: None,
            };
            match (self.deps.store)
                .commit_session(&next, current.version, &[], None, Some(&gate))
                .await
            {
                Ok(()) => return Ok(()),
                // A turn committed, or another request took a slot: read both again.
                Err(StoreError::Conflict) => {}
                Err(StoreError::Gone) => return Err(CoreError::NotFound("session")),
                Err(e) => return Err(e.into()),
            }
        }
        Err(CoreError::internal("rename commit stayed contended"))
    }

    /// The member's conversations in the active organisation whose titles hold every word of
    /// `query`, most recently updated first, at most [`SESSION_LIST_LIMIT`]. One store call
    /// (on DynamoDB at most three Queries of GSI1, see [`crate::ports::SessionStore::find_sessions`]).
    pub async fn find_sessions(
        &self, p: &Principal, query: &TitleQuery,
    ) -> Result<FoundSessions, CoreError> {
        Ok(self
            .deps
            .store
            .find_sessions(&p.user, &p.org, query, SESSION_LIST_LIMIT)
            .await?)
    }
}
