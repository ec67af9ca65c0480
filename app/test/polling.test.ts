// The polling schedule: fast while a turn runs, slower when idle or hidden, at once for more.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { BUSY_FAST_MS, BUSY_SLOW_MS, IDLE_MS, RETRY_MAX_MS, nextDelay, type PollState } from '../src/polling';

const base: PollState = { busy: true, hasMore: false, hidden: false, failures: 0, busyFor: 0 };

test('a running turn is polled every second for its first minute (its draft grows), then every 5 s', () => {
  assert.equal(nextDelay(base), 1_000);
  assert.equal(nextDelay({ ...base, busyFor: 59_999 }), BUSY_FAST_MS);
  assert.equal(nextDelay({ ...base, busyFor: 60_000 }), BUSY_SLOW_MS);
  assert.ok(BUSY_SLOW_MS <= 5_000);
});

test('more events are asked for at once', () => {
  assert.equal(nextDelay({ ...base, hasMore: true }), 0);
  assert.equal(nextDelay({ ...base, busy: false, hasMore: true, hidden: true }), 0);
});

test('an idle conversation is polled slowly, a hidden tab slower still', () => {
  assert.equal(nextDelay({ ...base, busy: false }), IDLE_MS);
  assert.ok(nextDelay({ ...base, busy: false, hidden: true }) > IDLE_MS);
  assert.ok(nextDelay({ ...base, hidden: true }) > BUSY_SLOW_MS);
});

test('failures back off from a second, doubling, up to thirty', () => {
  const delays = [1, 2, 3, 4, 5, 6, 50].map((failures) => nextDelay({ ...base, failures }));
  assert.deepEqual(delays, [1_000, 2_000, 4_000, 8_000, 16_000, RETRY_MAX_MS, RETRY_MAX_MS]);
});
