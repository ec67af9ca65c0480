//! [`TicketStore`] on SQLite: the `tickets` table.

use async_trait::async_trait;
use knowledge_core::clock::Timestamp;
use knowledge_core::domain::Ticket;
use knowledge_core::ids::{OrgId, UserId};
use knowledge_core::ports::{StoreResult, TicketStore};
use rusqlite::{OptionalExtension, params};

use crate::directory::unique;
use crate::{SqliteStore, backend, conversion};

#[async_trait]
impl TicketStore for SqliteStore {
    async fn put_ticket(&self, hash: &str, ticket: &Ticket) -> StoreResult<()> {
        let (h, t) = (hash.to_owned(), ticket.clone());
        self.write(move |tx| {
            let insert = "INSERT INTO tickets (hash, user_id, org_id, expires_at, payload)
                          VALUES (?1, ?2, ?3, ?4, ?5)";
            let row = params![
                h,
                t.user.as_str(),
                t.org.as_str(),
                t.expires_at.millis(),
                t.payload
            ];
            unique(tx.execute(insert, row)).map(|_| ())
        })
        .await
    }

    async fn take_ticket(&self, hash: &str) -> StoreResult<Option<Ticket>> {
        let h = hash.to_owned();
        self.write(move |tx| {
            tx.query_row(
                "DELETE FROM tickets WHERE hash = ?1 RETURNING user_id, org_id, expires_at, payload",
                [h],
                |r| {
                    Ok(Ticket {
                        user: UserId::parse(&r.get::<_, String>(0)?).map_err(conversion)?,
                        org: OrgId::parse(&r.get::<_, String>(1)?).map_err(conversion)?,
                        expires_at: Timestamp(r.get(2)?),
                        payload: r.get(3)?,
                    })
                },
            )
            .optional()
            .map_err(backend)
        })
        .await
    }
}
