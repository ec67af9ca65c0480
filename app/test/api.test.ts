// What a person is told for each failure the service answers.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { ApiFailure, explain } from '../src/api';

test('a rate limit says how long to wait in words', () => {
  assert.equal(explain(new ApiFailure(429, 'rate_limited', 'x', 17)), 'You have sent the most messages allowed for now. You can send again in 17 seconds.');
  assert.equal(explain(new ApiFailure(429, 'rate_limited', 'x', 3539)), 'You have sent the most messages allowed for now. You can send again in about an hour.');
});

test('a message too long to send says the limit in words, not in bytes', () => {
  const told = explain(new ApiFailure(413, 'payload_too_large', 'the request body is larger than 262144 bytes'));
  assert.match(told, /too long to send/);
  assert.doesNotMatch(told, /262144|bytes/);
});

test('the cost cap says the figures and when it renews', () => {
  const body = { error: { code: 'cost_cap_reached', message: 'x' }, monthToDateUsd: 25.5, capUsd: 25 };
  const f = new ApiFailure(429, 'cost_cap_reached', 'x', 3 * 86_400, body);
  assert.equal(explain(f), 'Your organisation reached its monthly cost cap ($25.50 of $25.00). It renews in 3 days.');
});

test("a member's own allowance says which limit, the figures and when it renews", () => {
  const questions = { error: { code: 'member_cap_reached', message: 'x' }, memberMonthToDateQuestions: 20, memberQuestionCap: 20, memberMonthToDateUsd: 1.5 };
  assert.equal(
    explain(new ApiFailure(429, 'member_cap_reached', 'x', 2 * 86_400, questions)),
    'You have used all 20 of your questions for this month. It renews in 2 days; your conversations stay readable meanwhile.',
  );
  const dollars = { error: { code: 'member_cap_reached', message: 'x' }, memberMonthToDateQuestions: 3, memberQuestionCap: 20, memberMonthToDateUsd: 5.25, memberCapUsd: 5 };
  assert.equal(
    explain(new ApiFailure(429, 'member_cap_reached', 'x', 86_400, dollars)),
    'You have used your spending allowance for this month ($5.25 of $5.00). It renews in 1 day; your conversations stay readable meanwhile.',
  );
});

test('the quota says when it renews', () => {
  assert.match(explain(new ApiFailure(429, 'quota_exhausted', 'x', 5400)), /renew in about 2 hours\.$/);
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
