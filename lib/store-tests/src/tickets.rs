//! Cases of [`TicketStore`](knowledge_core::ports::TicketStore): single-use sign-in tickets.

use std::sync::Arc;

use knowledge_core::domain::Ticket;
use knowledge_core::ids::{OrgId, UserId};
use knowledge_core::ports::StoreError;

use crate::{NOW, Tested};

fn ticket() -> Ticket {
    Ticket {
        user: UserId::generate(),
        org: OrgId::generate(),
        expires_at: NOW.plus_millis(60_000),
        payload: None,
    }
}

/// A ticket that keeps its flow's data.
fn with_payload() -> Ticket {
    Ticket {
        payload: Some("v1.sealed".into()),
        ..ticket()
    }
}

/// A fresh key of the form the service stores: hex digits.
fn hash() -> String {
    UserId::generate()
        .as_str()
        .trim_start_matches("usr_")
        .to_owned()
}

pub async fn a_ticket_is_taken_once_and_a_hash_is_stored_once(store: Arc<dyn Tested>) {
    let (h, t) = (hash(), ticket());
    store.put_ticket(&h, &t).await.unwrap();
    let again = store.put_ticket(&h, &ticket()).await;
    assert!(matches!(again, Err(StoreError::AlreadyExists)), "{again:?}");
    assert_eq!(store.take_ticket(&h).await.unwrap(), Some(t));
    assert_eq!(store.take_ticket(&h).await.unwrap(), None);
    assert_eq!(store.take_ticket(&hash()).await.unwrap(), None);
    let (h, t) = (hash(), with_payload());
    store.put_ticket(&h, &t).await.unwrap();
    assert_eq!(
        store.take_ticket(&h).await.unwrap(),
        Some(t),
        "its payload reads back"
    );
}

pub async fn of_concurrent_takes_of_one_ticket_exactly_one_gets_it(store: Arc<dyn Tested>) {
    let (h, t) = (hash(), ticket());
    store.put_ticket(&h, &t).await.unwrap();
    let takes: Vec<_> = (0..8)
        .map(|_| {
            let (store, h) = (store.clone(), h.clone());
            tokio::spawn(async move { store.take_ticket(&h).await.unwrap() })
        })
        .collect();
    let mut got = Vec::new();
    for take in takes {
        got.extend(take.await.unwrap());
    }
    assert_eq!(got, [t]);
}
