// A search's results in words: where a passage sits, its snippet cut around the words searched
// for, and those words marked, markup left as text.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { highlight, queryTerms, snippet, whereWords } from '../src/search';

test('a passage is placed by its headings, or its page', () => {
  assert.equal(whereWords({ headings: ['Setup', 'Rate limits'], page: null }), 'Setup › Rate limits');
  assert.equal(whereWords({ headings: [], page: 4 }), 'Page 4');
  assert.equal(whereWords({ headings: [] }), '');
});

test('the words searched for are marked where a word begins with them, in any case, longest first', () => {
  const terms = queryTerms('Rate rates, a LIMIT!');
  assert.deepEqual(terms, ['rates', 'limit', 'rate']);
  const segments = highlight('Rates and rate-limits: the limiter; pirate', terms);
  assert.deepEqual(segments.filter((s) => s.marked).map((s) => s.text), ['Rates', 'rate', 'limit', 'limit']);
  assert.equal(segments.map((s) => s.text).join(''), 'Rates and rate-limits: the limiter; pirate');
  // Markup in a passage is text here: the view writes each segment as text.
  assert.deepEqual(highlight('<b>rate</b>', ['rate']), [
    { text: '<b>', marked: false },
    { text: 'rate', marked: true },
    { text: '</b>', marked: false },
  ]);
  assert.deepEqual(highlight('text', []), [{ text: 'text', marked: false }]);
  assert.deepEqual(queryTerms('a ( * ) .+'), []);
});

test('a long passage is cut around the first word searched for, at spaces', () => {
  const text = `${'alpha '.repeat(100)}the needle is here ${'omega '.repeat(100)}`;
  const cut = snippet(text, ['needle'], 120);
  assert.ok(cut.startsWith('…') && cut.endsWith('…'), cut);
  assert.ok(cut.includes('needle'), cut);
  assert.ok(cut.length <= 122, `${cut.length}`);
  // Cut at spaces: every word whole.
  for (const word of cut.replace(/…/g, '').split(' ')) assert.ok(['alpha', 'the', 'needle', 'is', 'here', 'omega'].includes(word), word);
  assert.equal(snippet('short  text\n\nhere', ['x']), 'short text here');
  assert.ok(snippet(text, ['absent'], 50).startsWith('alpha'));
});
