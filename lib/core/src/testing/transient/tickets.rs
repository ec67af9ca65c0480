//! [`TicketStore`] in memory: single-use sign-in tickets under their hash.

use async_trait::async_trait;

use super::TransientStore;
use crate::domain::Ticket;
use crate::ports::{StoreError, StoreResult, TicketStore};

#[async_trait]
impl TicketStore for TransientStore {
    async fn put_ticket(&self, hash: &str, ticket: &Ticket) -> StoreResult<()> {
        let mut s = self.state();
        if s.tickets.contains_key(hash) {
            return Err(StoreError::AlreadyExists);
        }
        s.tickets.insert(hash.to_owned(), ticket.clone());
        Ok(())
    }

    async fn take_ticket(&self, hash: &str) -> StoreResult<Option<Ticket>> {
        Ok(self.state().tickets.remove(hash))
    }
}
