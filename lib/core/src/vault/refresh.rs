//! The one refresh of a grant's generation.
//!
//! - **In a process**, callers of one grant queue on its flight lock: the first refreshes, the
//!   others then read the grant, see its generation moved, and use the new token.
//! - **Across processes**, the refresher first claims a lease on the grant (a swap from the
//!   value it read). A caller that finds a live lease at the grant's generation waits, reading
//!   again with a growing pause, until the generation moves.
//! - **A refresh token is never sent twice.** A lease that ran out at an unchanged generation
//!   means its holder sent the refresh and never stored the result (it died), or its answer was
//!   lost: the token may be spent, so the grant needs a reconnect rather than a second send,
//!   which a server with reuse detection answers by revoking the whole grant.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::{Instant, sleep};

use super::{Access, GrantAt, Vault, VaultError, expiry, unavailable};
use crate::clock::Timestamp;
use crate::domain::{Grant, GrantStatus, Lease, ReconnectReason};
use crate::fault;
use crate::ports::{StoreError, TokenError};
use crate::telemetry::{self, RefreshOutcome};

/// The longest pause between two reads of a grant another process is refreshing.
const POLL_MAX: Duration = Duration::from_secs(1);

impl Vault {
    /// The lock that serialises this process's refreshes of the grant at `at`.
    fn flight(&self, at: &GrantAt) -> Arc<tokio::sync::Mutex<()>> {
        let key = format!("{}\n{}\n{}", at.org, at.owner.as_str(), at.name());
        let mut flights = self.flights.lock().expect("the flights' lock");
        flights.retain(|_, lock| Arc::strong_count(lock) > 1);
        flights.entry(key).or_default().clone()
    }

    /// An access token from the stored grant once `needed(grant, now)` no longer holds of it:
    /// refreshed here, or by whoever else was refreshing it. Errors: as [`Vault::access`].
    pub(super) async fn refresh(
        &self, at: &GrantAt, needed: impl Fn(&Grant, Timestamp) -> bool,
    ) -> Result<Access, VaultError> {
        let turn = self.flight(at).lock_owned().await;
        // A lease lasts `lease`; a waiter gives up a little after one would have run out.
        let give_up = Instant::now() + self.timing.lease + self.timing.lease / 2;
        let mut pause = self.timing.poll;
        loop {
            let Some(sealed) =
                (self.store.get_grant(&at.org, &at.owner, at.name()).await).map_err(unavailable)?
            else {
                return Err(VaultError::NotConnected);
            };
            let grant = self.open(at, &sealed).ok_or(VaultError::NotConnected)?;
            if let GrantStatus::NeedsReconnect(reason) = grant.status {
                return Err(VaultError::NeedsReconnect(reason));
            }
            let now = self.now();
            if !needed(&grant, now) {
                return Ok(Access::from(&grant));
            }
            match grant.lease {
                Some(lease) if lease.generation == grant.generation && lease.until > now => {
                    if Instant::now() + pause > give_up {
                        return Err(VaultError::Unavailable(
                            "another process's refresh did not finish in time".into(),
                        ));
                    }
                    sleep(pause).await;
                    pause = (pause * 2).min(POLL_MAX);
                    continue;
                }
                Some(lease) if lease.generation == grant.generation => {
                    tracing::warn!(
                        integration = at.name(),
                        "a refresh's lease ran out unfinished; the grant needs a reconnect"
                    );
                    let reason = ReconnectReason::RefreshInterrupted;
                    match self.retire(at, &sealed, grant, reason).await {
                        Err(StoreError::Conflict) => continue,
                        Err(e) => return Err(unavailable(e)),
                        Ok(reason) => return Err(VaultError::NeedsReconnect(reason)),
                    }
                }
                _ => {}
            }
            // Read before the claim: a secret that no longer opens must not leave a lease.
            let secret = self.client_secret(at)?;
            let Some(refresh_token) = grant.refresh_token.clone() else {
                match self
                    .retire(at, &sealed, grant, ReconnectReason::Expired)
                    .await
                {
                    Err(StoreError::Conflict) => continue,
                    Err(e) => return Err(unavailable(e)),
                    Ok(reason) => return Err(VaultError::NeedsReconnect(reason)),
                }
            };
            let claimed = Grant {
                lease: Some(Lease {
                    until: now.plus_millis(millis(self.timing.lease)),
                    generation: grant.generation,
                }),
                ..grant.clone()
            };
            let claimed_sealed = self.seal(at, &claimed);
            match self.swap(at, &sealed, Some(&claimed_sealed)).await {
                Ok(()) => {}
                Err(StoreError::Conflict) => continue,
                Err(e) => return Err(unavailable(e)),
            }
            // The request is sent and its answer stored by a task of its own, holding this
            // process's turn: a caller that stops waiting (its own bound ran out) leaves the
            // refresh to finish and be recorded within the lease, instead of a live lease with
            // nobody behind it.
            let (vault, at) = (self.clone(), at.clone());
            let settled = tokio::spawn(async move {
                let answer = vault.send(&at, secret.as_deref(), &refresh_token).await;
                let settled = vault
                    .settle(&at, &claimed_sealed, claimed, refresh_token, answer)
                    .await;
                drop(turn);
                settled
            });
            return settled.await.unwrap_or_else(|e| {
                Err(VaultError::Unavailable(format!("a refresh failed: {e}")))
            });
        }
    }

    /// Sends the refresh of a claimed grant: bounded by three quarters of the lease, so that
    /// its answer is stored before the lease runs out. An answer not come by then is lost (the
    /// token may have been spent).
    async fn send(
        &self, at: &GrantAt, secret: Option<&str>, refresh_token: &str,
    ) -> Result<crate::ports::IssuedTokens, TokenError> {
        fault::point("refresh", "claimed").await;
        let access = at
            .access()
            .map_err(|e| TokenError::Refused(e.to_string()))?;
        let bound = self.timing.lease * 3 / 4;
        let answer =
            tokio::time::timeout(bound, self.tokens.refresh(access, secret, refresh_token))
                .await
                .unwrap_or_else(|_| {
                    Err(TokenError::Uncertain(format!(
                        "the token endpoint did not answer within {bound:?}"
                    )))
                });
        fault::point("refresh", "answered").await;
        answer
    }

    /// Stores what the refresh of `claimed` (stored as `claimed_sealed`) answered.
    async fn settle(
        &self, at: &GrantAt, claimed_sealed: &str, claimed: Grant, sent: String,
        answer: Result<crate::ports::IssuedTokens, TokenError>,
    ) -> Result<Access, VaultError> {
        let now = self.now();
        telemetry::oauth_refresh(match &answer {
            Ok(_) => RefreshOutcome::Refreshed,
            Err(TokenError::Refused(_)) => RefreshOutcome::Refused,
            Err(TokenError::Uncertain(_) | TokenError::Unavailable(_)) => RefreshOutcome::Failed,
        });
        let tokens = match answer {
            Ok(tokens) => tokens,
            Err(TokenError::Refused(why)) => {
                tracing::warn!(integration = at.name(), %why, "a refresh was refused");
                let reason = ReconnectReason::RefreshRefused;
                return Err(self
                    .retire_claimed(at, claimed_sealed, claimed, reason)
                    .await);
            }
            Err(TokenError::Uncertain(why)) => {
                tracing::warn!(integration = at.name(), %why, "a refresh's answer was lost");
                let reason = ReconnectReason::RefreshInterrupted;
                return Err(self
                    .retire_claimed(at, claimed_sealed, claimed, reason)
                    .await);
            }
            Err(TokenError::Unavailable(why)) => {
                // Nothing was issued: give the claim back, keeping the refresh token.
                let released = Grant {
                    lease: None,
                    ..claimed
                };
                let sealed = self.seal(at, &released);
                if let Err(e) = self.swap(at, claimed_sealed, Some(&sealed)).await {
                    tracing::warn!(integration = at.name(), error = %e, "releasing a lease failed");
                }
                return Err(VaultError::Unavailable(format!(
                    "the authorization server: {why}"
                )));
            }
        };
        let next = Grant {
            access_token: tokens.access_token,
            refresh_token: tokens.refresh_token.or(Some(sent)),
            expires_at: expiry(now, tokens.expires_in),
            scope: tokens.scope.or(claimed.scope.clone()),
            generation: claimed.generation + 1,
            lease: None,
            status: GrantStatus::Active,
            ..claimed
        };
        let sealed = self.seal(at, &next);
        if let Err(e) = self.swap(at, claimed_sealed, Some(&sealed)).await {
            // Disconnected meanwhile, or the store failed: these tokens serve this call only.
            tracing::warn!(integration = at.name(), error = %e, "refreshed tokens were not stored");
        }
        Ok(Access::from(&next))
    }

    /// Marks `grant` (stored as `sealed`) as needing a reconnect for `reason`, returning the
    /// reason. Errors: `Conflict` when the grant moved meanwhile (read it again); the store's.
    pub(super) async fn retire(
        &self, at: &GrantAt, sealed: &str, grant: Grant, reason: ReconnectReason,
    ) -> Result<ReconnectReason, StoreError> {
        let retired = Grant {
            lease: None,
            status: GrantStatus::NeedsReconnect(reason),
            ..grant
        };
        let next = self.seal(at, &retired);
        self.swap(at, sealed, Some(&next)).await.map(|()| reason)
    }

    /// [`Vault::retire`] of a grant this caller holds the lease of: the error to return. It
    /// needs a reconnect whether or not the mark was stored (a grant that moved under a lease
    /// was disconnected or reconnected meanwhile; a store failure is logged).
    async fn retire_claimed(
        &self, at: &GrantAt, sealed: &str, grant: Grant, reason: ReconnectReason,
    ) -> VaultError {
        if let Err(e) = self.retire(at, sealed, grant, reason).await {
            tracing::warn!(integration = at.name(), error = %e, "marking a grant failed");
        }
        VaultError::NeedsReconnect(reason)
    }

    async fn swap(&self, at: &GrantAt, from: &str, to: Option<&str>) -> Result<(), StoreError> {
        (self.store)
            .swap_grant(&at.org, &at.owner, at.name(), Some(from), to, None)
            .await
    }
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX / 2)
}
