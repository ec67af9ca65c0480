// How long to wait, in words, and what a limit reached says.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { rateLimitWords, waitWords } from '../src/limits';

test('waits read as a person would say them', () => {
  const said = [3539, 3600, 5400, 7200, 600, 90, 89, 60, 54, 1, 0].map(waitWords);
  assert.deepEqual(said, [
    'about an hour',
    'about an hour',
    'about 2 hours',
    'about 2 hours',
    'about 10 minutes',
    'about 2 minutes',
    '89 seconds',
    '60 seconds',
    '54 seconds',
    '1 second',
    '0 seconds',
  ]);
});

test('the limit on new conversations says that existing ones still work', () => {
  const told = rateLimitWords(3539, true);
  assert.match(told, /in about an hour/);
  assert.match(told, /existing conversations still work/);
  assert.doesNotMatch(told, /\d+ s\b/);
});

test('a limit that has run out says so', () => {
  assert.equal(rateLimitWords(0, true), 'You can start a new conversation again now.');
  assert.equal(rateLimitWords(-3, false), 'You can send again now.');
});
