// The reading pages' addresses: made and read back; anything else is no reading page.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { documentHref, readingFromHash, searchHref } from '../src/routes';

const COL = `col_${'1'.repeat(32)}`;
const DOC = `doc_${'e'.repeat(32)}`;

test('a document at a passage, and without one, read back from its address', () => {
  assert.equal(documentHref(COL, DOC, 12), `/#/documents/${COL}/${DOC}?passage=12`);
  assert.deepEqual(readingFromHash(documentHref(COL, DOC, 12).slice(1)), { kind: 'document', collectionId: COL, documentId: DOC, passage: 12 });
  assert.deepEqual(readingFromHash(documentHref(COL, DOC).slice(1)), { kind: 'document', collectionId: COL, documentId: DOC, passage: null });
  assert.deepEqual(readingFromHash(`#/documents/${COL}/${DOC}?passage=x`), { kind: 'document', collectionId: COL, documentId: DOC, passage: null });
});

test('a search, its words whatever they hold', () => {
  const q = 'rate & limits #2 / über';
  assert.deepEqual(readingFromHash(searchHref(q).slice(1)), { kind: 'search', q });
  assert.deepEqual(readingFromHash('#/search'), { kind: 'search', q: '' });
});

test('other hashes, and ids not of the service shape, name no reading page', () => {
  for (const hash of ['', '#', '#message', '#/documents', `#/documents/${COL}`, `#/documents/${DOC}/${COL}`, `#/documents/${COL}/doc_x`, '#/admin', `#/documents/${COL}/${DOC}/more`, '#/documents/%E0%A4%A/x']) {
    assert.equal(readingFromHash(hash), null, hash);
  }
});
