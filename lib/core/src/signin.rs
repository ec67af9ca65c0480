//! Single-use sign-in links: a secret that signs one member in to one organisation once,
//! within minutes. The local binary prints one at start so that a newcomer is signed in with a
//! click; `knowledge signin-link` prints another. Only the secret's SHA-256 is stored, so a
//! read of the store signs nobody in.

use sha2::{Digest, Sha256};

use crate::clock::Timestamp;
use crate::domain::{Member, Ticket};
use crate::error::CoreError;
use crate::ids::{OrgId, UserId};
use crate::ports::{DirectoryStore, TicketStore};

/// How long a link works, in milliseconds: ten minutes.
pub const LINK_TTL_MS: i64 = 10 * 60 * 1000;

fn hash(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

/// A fresh link secret for `user` in `org`, valid until `now` plus [`LINK_TTL_MS`].
/// Errors: `NotFound` when `user` is not a member of `org`.
pub async fn issue(
    tickets: &dyn TicketStore, members: &dyn DirectoryStore, now: Timestamp, user: &UserId,
    org: &OrgId,
) -> Result<String, CoreError> {
    if members.get_member(org, user).await?.is_none() {
        return Err(CoreError::NotFound("member"));
    }
    let mut bytes = [0u8; 32];
    // getrandom's error carries no cause of its own; its message is all there is.
    getrandom::fill(&mut bytes).map_err(|e| CoreError::internal(e.to_string()))?;
    let secret = hex::encode(bytes);
    let ticket = Ticket {
        user: user.clone(),
        org: org.clone(),
        expires_at: now.plus_millis(LINK_TTL_MS),
        payload: None,
    };
    tickets.put_ticket(&hash(&secret), &ticket).await?;
    Ok(secret)
}

/// Who the link `secret` signs in, with their role; the link is used up whatever the outcome.
/// Errors: `Unauthenticated` for a secret never issued, used already or expired, or a member
/// removed since.
pub async fn redeem(
    tickets: &dyn TicketStore, members: &dyn DirectoryStore, now: Timestamp, secret: &str,
) -> Result<Member, CoreError> {
    let ticket = tickets.take_ticket(&hash(secret)).await?;
    let Some(ticket) = ticket.filter(|t| now < t.expires_at && t.payload.is_none()) else {
        return Err(CoreError::Unauthenticated);
    };
    match members.get_member(&ticket.org, &ticket.user).await? {
        Some(m) => Ok(m),
        None => Err(CoreError::Unauthenticated),
    }
}
