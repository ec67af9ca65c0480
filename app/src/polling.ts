// When to ask for the transcript next. Pure: the chat view's poller asks it after every answer
// (and polls at once when the tab comes back into view); tested in test/polling.

/** What the next delay depends on. */
export interface PollState {
  /** The conversation waits on the service (see `busy` in transcript.ts). */
  busy: boolean;
  /** The last page said more events follow. */
  hasMore: boolean;
  /** The tab is hidden (`document.hidden`). */
  hidden: boolean;
  /** Polls that failed in a row (network gone, server error). */
  failures: number;
  /** Milliseconds since the turn in flight began (0 when idle). */
  busyFor: number;
}

/** While a turn runs: every second for its first minute, so that the answer's draft (written
 *  at most once a second) shows as it grows; then every 5 s, the interface's slowest. A poll
 *  costs about $0.0000020 on AWS (docs/deploy.md), so a 10 s answer's ten polls cost $0.00002. */
export const BUSY_FAST_MS = 1_000;
export const BUSY_SLOW_MS = 5_000;
const BUSY_FAST_FOR_MS = 60_000;
/** Idle, in view: another tab or device may have sent a message. */
export const IDLE_MS = 30_000;
/** Hidden tabs poll a quarter as often, a busy one at most every 20 s. */
const HIDDEN_FACTOR = 4;
/** Failures back off from 1 s, doubling, to at most 30 s. */
const RETRY_FIRST_MS = 1_000;
export const RETRY_MAX_MS = 30_000;

/** Milliseconds until the next poll. */
export function nextDelay(s: PollState): number {
  if (s.failures > 0) {
    return Math.min(RETRY_MAX_MS, RETRY_FIRST_MS * 2 ** Math.min(s.failures - 1, 16));
  }
  if (s.hasMore) return 0;
  // A hidden tab has no draft to show: it never polls fast.
  const fast = !s.hidden && s.busyFor < BUSY_FAST_FOR_MS;
  const base = s.busy ? (fast ? BUSY_FAST_MS : BUSY_SLOW_MS) : IDLE_MS;
  return s.hidden ? base * HIDDEN_FACTOR : base;
}
