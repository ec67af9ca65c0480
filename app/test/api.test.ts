// What a person is told for each failure the service answers.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { ApiFailure, explain } from '../src/api';

test('a rate limit says how long to wait', () => {
  assert.equal(explain(new ApiFailure(429, 'rate_limited', 'x', 17)), 'Too many requests. Try again in 17 s.');
});

test('the cost cap says the figures and when it renews', () => {
  const body = { error: { code: 'cost_cap_reached', message: 'x' }, monthToDateUsd: 25.5, capUsd: 25 };
  const f = new ApiFailure(429, 'cost_cap_reached', 'x', 3 * 86_400, body);
  assert.equal(explain(f), 'Your organisation reached its monthly cost cap ($25.50 of $25.00). It renews in 3 days.');
});

test('the quota says when it renews', () => {
  assert.match(explain(new ApiFailure(429, 'quota_exhausted', 'x', 5400)), /renew in 2 h\.$/);
});

test('the network and the provider are told apart, and only they are worth retrying', () => {
  const network = new ApiFailure(0, 'network', 'x');
  const provider = new ApiFailure(502, 'provider_unavailable', 'x');
  const missing = new ApiFailure(404, 'not_found', 'session not found');
  assert.equal(explain(network), 'The service cannot be reached. Retrying…');
  assert.equal(explain(provider), 'The AI provider cannot be reached right now. Try again in a moment.');
  assert.deepEqual([network.transient, provider.transient, missing.transient], [true, true, false]);
  // Anything else reads as the service wrote it.
  assert.equal(explain(missing), 'session not found');
});
