//! [`TicketStore`] on DynamoDB: one item per ticket, removed by its time to live if never taken.

use async_trait::async_trait;
use knowledge_core::clock::Timestamp;
use knowledge_core::domain::Ticket;
use knowledge_core::ids::{OrgId, UserId};
use knowledge_core::ports::{StoreError, StoreResult, TicketStore};

use crate::codec::{corrupt, get_n, get_s, key_item, n, s};
use crate::{DynamoStore, keys};

#[async_trait]
impl TicketStore for DynamoStore {
    async fn put_ticket(&self, hash: &str, ticket: &Ticket) -> StoreResult<()> {
        let mut item = key_item(keys::ticket(hash));
        item.insert("user".into(), s(ticket.user.as_str()));
        item.insert("org".into(), s(ticket.org.as_str()));
        item.insert("expiresAtMs".into(), n(ticket.expires_at.millis()));
        if let Some(payload) = &ticket.payload {
            item.insert("payload".into(), s(payload));
        }
        // DynamoDB's TTL removes a ticket nobody took, some time after it expired.
        let ttl = (ticket.expires_at.millis() + 999).div_euclid(1000);
        item.insert(keys::TTL.into(), n(ttl));
        let put = (self.client.put_item().set_item(Some(item)))
            .condition_expression("attribute_not_exists(#pk)")
            .expression_attribute_names("#pk", keys::PK);
        match self.put_checked(put).await? {
            true => Ok(()),
            false => Err(StoreError::AlreadyExists),
        }
    }

    async fn take_ticket(&self, hash: &str) -> StoreResult<Option<Ticket>> {
        let Some(item) = self.take(keys::ticket(hash)).await? else {
            return Ok(None);
        };
        Ok(Some(Ticket {
            user: UserId::parse(get_s(&item, "user")?).map_err(|_| corrupt("user"))?,
            org: OrgId::parse(get_s(&item, "org")?).map_err(|_| corrupt("org"))?,
            expires_at: Timestamp(get_n(&item, "expiresAtMs")?),
            payload: match item.get("payload") {
                None => None,
                Some(_) => Some(get_s(&item, "payload")?.to_owned()),
            },
        }))
    }
}
