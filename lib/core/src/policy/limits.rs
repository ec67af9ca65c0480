//! Exact sliding-window rate limits per user, kept in the store so every process shares them.

use crate::clock::{Clock, Timestamp, whole_seconds_until};
use crate::ids::UserId;
use crate::ports::{LimitStore, RateUpdate, RateWindow, StoreError};

/// At most `max` admitted requests in any window of `window_ms`.
#[derive(Debug, Clone, Copy)]
pub struct Rule {
    pub window_ms: i64,
    pub max: usize,
}

const MINUTE: i64 = 60_000;
const HOUR: i64 = 3_600_000;

/// The rate-limited actions and their rules, from the interface's limits table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    CreateSession,
    Message,
    Cancel,
    /// A member answering a call the agent asks them about.
    Approve,
    /// A member renaming one of their conversations.
    Rename,
    /// A change in the admin API.
    AdminWrite,
    /// An admin's test of an identity provider or an integration: a request to a server the
    /// admin names.
    AdminProbe,
}

impl Action {
    pub fn rules(self) -> &'static [Rule] {
        match self {
            Action::CreateSession => &[
                Rule {
                    window_ms: MINUTE,
                    max: 10,
                },
                Rule {
                    window_ms: HOUR,
                    max: 20,
                },
            ],
            Action::Message => &[Rule {
                window_ms: MINUTE,
                max: 60,
            }],
            Action::Approve => &[Rule {
                window_ms: MINUTE,
                max: 60,
            }],
            Action::Cancel | Action::Rename => &[Rule {
                window_ms: MINUTE,
                max: 30,
            }],
            Action::AdminWrite => &[Rule {
                window_ms: MINUTE,
                max: 60,
            }],
            Action::AdminProbe => &[Rule {
                window_ms: MINUTE,
                max: 10,
            }],
        }
    }

    fn name(self) -> &'static str {
        match self {
            Action::CreateSession => "create",
            Action::Message => "message",
            Action::Cancel => "cancel",
            Action::Approve => "approve",
            Action::Rename => "rename",
            Action::AdminWrite => "admin",
            Action::AdminProbe => "probe",
        }
    }

    fn longest_window(self) -> i64 {
        self.rules().iter().map(|r| r.window_ms).max().unwrap_or(0)
    }

    /// The store key of the user's window for this action.
    pub fn key(self, user: &UserId) -> String {
        format!("{}#{}", self.name(), user)
    }
}

/// Decides one request against the recorded hits (ascending). On admission returns the hits to
/// store (pruned to the longest window, with the request's instant added); on refusal the whole
/// seconds until a slot frees (the `Retry-After`).
///
/// A window's time never goes back: a `now` earlier than the latest hit (a clock read before a
/// concurrent request was admitted, or another process's clock running behind) counts as that
/// hit's instant, so hits stay sorted and the wait never exceeds the window.
pub fn decide(action: Action, hits: &[Timestamp], now: Timestamp) -> Result<Vec<Timestamp>, u64> {
    let now = hits.last().map_or(now, |&latest| now.max(latest));
    let mut free_at: Option<Timestamp> = None;
    for rule in action.rules() {
        let start = now.millis() - rule.window_ms;
        let inside: Vec<Timestamp> = hits
            .iter()
            .copied()
            .filter(|t| t.millis() > start)
            .collect();
        if inside.len() >= rule.max {
            // The slot frees when enough of the oldest hits have left the window.
            let leaving = inside[inside.len() - rule.max];
            let at = leaving.plus_millis(rule.window_ms);
            free_at = Some(free_at.map_or(at, |f| f.max(at)));
        }
    }
    if let Some(at) = free_at {
        return Err(whole_seconds_until(now, at));
    }
    let horizon = now.millis() - action.longest_window();
    let mut kept: Vec<Timestamp> = hits
        .iter()
        .copied()
        .filter(|t| t.millis() > horizon)
        .collect();
    kept.push(now);
    Ok(kept)
}

/// A decision to admit one request, as the write that records it: the window's new hits, to
/// be stored only if the window is still at the version the decision read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slot {
    key: String,
    hits: Vec<Timestamp>,
    expected_version: u64,
    expires_at: Timestamp,
}

impl Slot {
    /// Decides one `action` by `user` at `now` against `window` as read. Errors: the whole
    /// seconds until a slot frees (the `Retry-After`) when the window is full.
    pub fn take(
        action: Action, user: &UserId, window: &RateWindow, now: Timestamp,
    ) -> Result<Self, u64> {
        let hits = decide(action, &window.hits, now)?;
        Ok(Self {
            key: action.key(user),
            hits,
            expected_version: window.version,
            expires_at: now.plus_millis(action.longest_window()),
        })
    }

    /// The conditional write of the window that records the slot.
    pub fn update(&self) -> RateUpdate<'_> {
        RateUpdate {
            key: &self.key,
            hits: &self.hits,
            expected_version: self.expected_version,
            expires_at: self.expires_at,
        }
    }
}

/// The slot a window's conditional write records, owned: for an adapter that moves the write
/// to another thread.
impl From<&RateUpdate<'_>> for Slot {
    fn from(update: &RateUpdate<'_>) -> Self {
        Self {
            key: update.key.to_owned(),
            hits: update.hits.to_vec(),
            expected_version: update.expected_version,
            expires_at: update.expires_at,
        }
    }
}

/// Outcome of [`acquire`].
#[derive(Debug, PartialEq, Eq)]
pub enum Admission {
    Admitted,
    /// Refused; retry after this many whole seconds.
    Refused {
        retry_after_secs: u64,
    },
}

/// Attempts on a contended window before giving up. Each failed attempt means another request
/// was admitted or refused meanwhile, so this bounds the wait, never fairness.
const MAX_ATTEMPTS: usize = 64;

/// Admits one `action` by `user` now, or refuses it. Race-free: the record is replaced with a
/// version check, and a lost race re-reads (the record and the clock) and decides again.
pub async fn acquire(
    store: &dyn LimitStore, clock: &dyn Clock, action: Action, user: &UserId,
) -> Result<Admission, StoreError> {
    let key = action.key(user);
    for _ in 0..MAX_ATTEMPTS {
        let window = store.get_rate_window(&key).await?;
        match Slot::take(action, user, &window, clock.now()) {
            Err(retry_after_secs) => return Ok(Admission::Refused { retry_after_secs }),
            Ok(slot) => match store.put_rate_window(slot.update()).await {
                Ok(()) => return Ok(Admission::Admitted),
                Err(StoreError::Conflict) => continue,
                Err(e) => return Err(e),
            },
        }
    }
    Err(StoreError::backend(format!(
        "rate window {key} stayed contended"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(action: Action, times: &[i64]) -> (usize, Vec<Result<(), u64>>) {
        let mut hits = vec![];
        let mut admitted = 0;
        let mut outcomes = vec![];
        for &t in times {
            match decide(action, &hits, Timestamp(t)) {
                Ok(h) => {
                    hits = h;
                    admitted += 1;
                    outcomes.push(Ok(()));
                }
                Err(wait) => outcomes.push(Err(wait)),
            }
        }
        (admitted, outcomes)
    }

    #[test]
    fn the_eleventh_creation_within_a_minute_waits_for_the_first_to_leave() {
        let times: Vec<i64> = (0..11).map(|i| 1_000 + i * 100).collect();
        let (admitted, outcomes) = run(Action::CreateSession, &times);
        assert_eq!(admitted, 10);
        // The first hit (t=1.0 s) leaves at 61.0 s; asked at 2.0 s, that is 59 s away.
        assert_eq!(outcomes[10], Err(59));
    }

    #[test]
    fn the_window_slides_rather_than_resetting() {
        // 10 at t=0..0.9s, then at t=60.0s exactly one slot has freed (the hit at t=0 left).
        let mut times: Vec<i64> = (0..10).map(|i| i * 100).collect();
        times.push(MINUTE);
        times.push(MINUTE + 1);
        let (_, outcomes) = run(Action::CreateSession, &times);
        assert_eq!(outcomes[10], Ok(()));
        // The next slot frees at 60.1 s, 99 ms later: rounded up to a whole second.
        assert_eq!(outcomes[11], Err(1));
    }

    #[test]
    fn twenty_creations_an_hour_hold_even_when_spread_over_minutes() {
        let times: Vec<i64> = (0..21).map(|i| i * 2 * MINUTE).collect();
        let (admitted, outcomes) = run(Action::CreateSession, &times);
        assert_eq!(admitted, 20);
        // Asked at 40 min; the first hit leaves the hour at 60 min.
        assert_eq!(outcomes[20], Err(20 * 60));
    }

    #[test]
    fn a_clock_behind_the_latest_hit_never_asks_to_wait_longer_than_the_window() {
        let hits: Vec<Timestamp> = (0..10).map(|i| Timestamp(1_000 + i)).collect();
        // Measured from the raw clock the wait would be 61 s (61.0 s - 0.5 s, rounded up).
        assert_eq!(
            decide(Action::CreateSession, &hits, Timestamp(500)),
            Err(60)
        );
        let admitted = decide(Action::Message, &hits, Timestamp(500)).unwrap();
        assert!(admitted.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn hits_older_than_the_longest_window_are_dropped() {
        let hits = vec![Timestamp(0), Timestamp(10)];
        let kept = decide(Action::Message, &hits, Timestamp(MINUTE + 5)).unwrap();
        assert_eq!(kept, vec![Timestamp(10), Timestamp(MINUTE + 5)]);
    }
}
