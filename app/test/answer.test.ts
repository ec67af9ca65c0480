// Citation markers in an answer: each becomes a numbered link the app writes, in order of first
// appearance, one passage cited twice keeping its number; a marker in code, malformed, or with ids
// not of the service's shape stays text; nothing else the model wrote becomes a link.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { answerHtml, citationsOf } from '../src/answer';

const COL = `col_${'a'.repeat(32)}`;
const DOC = `doc_${'0123456789abcdef'.repeat(2)}`;
const DOC2 = `doc_${'f'.repeat(32)}`;
const cite = (doc: string, passage: number | string) => `[[cite:${COL}/${doc}#${passage}]]`;
const href = (doc: string, passage: number) => `/#/documents/${COL}/${doc}?passage=${passage}`;

test('a marker becomes a numbered link to the passage on the document page', () => {
  const { html, citations } = answerHtml(`Cancel with Escape ${cite(DOC, 3)}.`);
  assert.deepEqual(citations, [{ n: 1, collectionId: COL, documentId: DOC, passage: 3 }]);
  assert.match(html, new RegExp(`<a class="citation" href="${href(DOC, 3).replace(/[?]/g, '\\?')}" aria-label="Source 1">\\[1\\]</a>`));
  assert.doesNotMatch(html, /cite:/);
});

test('citations are numbered by first appearance; the same passage cited again keeps its number', () => {
  const text = `First ${cite(DOC, 7)}, then ${cite(DOC2, 0)}, again ${cite(DOC, 7)}, and ${cite(DOC, 8)}.`;
  const { html, citations } = answerHtml(text);
  assert.deepEqual(
    citations.map((c) => [c.n, c.documentId, c.passage]),
    [
      [1, DOC, 7],
      [2, DOC2, 0],
      [3, DOC, 8],
    ],
  );
  assert.deepEqual([...html.matchAll(/>\[(\d)\]</g)].map((m) => m[1]), ['1', '2', '1', '3']);
});

test('citations are numbered in reading order across paragraphs, lists and tables', () => {
  const text = `Intro ${cite(DOC, 1)}\n\n- item ${cite(DOC, 2)}\n- item ${cite(DOC, 1)}\n\n| a | b |\n|---|---|\n| ${cite(DOC2, 5)} | x |\n\n**bold ${cite(DOC, 9)}**`;
  assert.deepEqual(
    citationsOf(text).map((c) => `${c.n}:${c.documentId === DOC ? 'd' : 'e'}${c.passage}`),
    ['1:d1', '2:d2', '3:e5', '4:d9'],
  );
});

test('a marker in a code span or a code block stays text, and is not counted', () => {
  const text = `Write \`${cite(DOC, 1)}\` to cite.\n\n\`\`\`\n${cite(DOC, 2)}\n\`\`\`\n\n    ${cite(DOC, 3)}\n\nReal ${cite(DOC2, 4)}.`;
  const { html, citations } = answerHtml(text);
  assert.deepEqual(citations, [{ n: 1, collectionId: COL, documentId: DOC2, passage: 4 }]);
  assert.equal(html.match(/class="citation"/g)?.length, 1);
  assert.ok(html.includes(`<code>${cite(DOC, 1)}</code>`), html);
  assert.ok(html.includes(`<code>${cite(DOC, 2)}\n</code>`), html);
  assert.ok(html.includes(`<code>${cite(DOC, 3)}\n</code>`), html);
});

test('malformed markers and ids not of the service shape stay text', () => {
  for (const bad of [
    `[[cite:${COL}/${DOC}]]`,
    `[[cite:${COL}/${DOC}#]]`,
    `[[cite:${COL}/${DOC}#-1]]`,
    `[[cite:${COL}/${DOC}#1.5]]`,
    `[[cite:${COL}/${DOC}#01]]`,
    `[[cite:${COL}/${DOC}#1234567890]]`,
    `[[cite:${COL.toUpperCase()}/${DOC}#1]]`,
    `[[cite:col_${'a'.repeat(31)}/${DOC}#1]]`,
    `[[cite:col_${'a'.repeat(33)}/${DOC}#1]]`,
    `[[cite:${COL}/${'doc_'}${'g'.repeat(32)}#1]]`,
    `[[cite:${COL}/${DOC}#1]`,
    `[[ cite:${COL}/${DOC}#1]]`,
    `[[cite:${DOC}/${COL}#1]]`,
  ]) {
    const { html, citations } = answerHtml(`See ${bad} here.`);
    assert.deepEqual(citations, [], bad);
    assert.doesNotMatch(html, /class="citation"/, bad);
    assert.doesNotMatch(html, /<a /, bad);
  }
});

test('nothing around a marker is taken into its link: quotes and markup written by the model stay text', () => {
  const text = `"><img src=x onerror=alert(1)>${cite(DOC, 2)}<script>x</script> [[cite:${COL}/${DOC}#2" onclick="x]]`;
  const { html, citations } = answerHtml(text);
  assert.equal(citations.length, 1);
  assert.doesNotMatch(html, /<img|<script|onclick="x"/);
  assert.equal(html.match(/<a /g)?.length, 1);
});

test('a marker inside a link\u2019s text is counted but written as its number only (no link in a link)', () => {
  const { html, citations } = answerHtml(`[the guide ${cite(DOC, 1)}](https://example.com) and ${cite(DOC, 1)}`);
  assert.equal(citations.length, 1);
  assert.equal(html.match(/<a /g)?.length, 2);
  assert.ok(html.includes('the guide [1]</a>'), html);
  assert.ok(html.includes('aria-label="Source 1">[1]</a>'), html);
});

test('adjacent markers and a marker at the very start are each found', () => {
  const { citations, html } = answerHtml(`${cite(DOC, 0)}${cite(DOC, 1)} ${cite(DOC2, 2)}`);
  assert.deepEqual(citations.map((c) => c.n), [1, 2, 3]);
  assert.equal(html.match(/class="citation"/g)?.length, 3);
});

test('an answer still being written, its marker cut short, shows the start as text', () => {
  const { html, citations } = answerHtml(`Partial [[cite:${COL}/doc_0123`);
  assert.deepEqual(citations, []);
  assert.ok(html.includes('[[cite:'), html);
});
