// The documents in words: sizes, a file refused before it is sent in the words of the service's
// refusal, and when the admin's list is read again.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { ApiFailure } from '../src/api';
import { ABANDONED_MS, POLL_MS, bytesWords, pollDelay, refusalOf, statusWords, uploadFailureWords } from '../src/documents';

test('a queued document a worker holds reads as being indexed, not as waiting', () => {
  assert.equal(statusWords('queued', true), 'Indexing…');
  assert.equal(statusWords('queued', false), 'Queued for indexing');
  assert.equal(statusWords('indexed', false), 'Indexed');
});

test('sizes in binary units, as the service counts its limits', () => {
  assert.equal(bytesWords(0), '0 bytes');
  assert.equal(bytesWords(1), '1 byte');
  assert.equal(bytesWords(1023), '1023 bytes');
  assert.equal(bytesWords(1536), '1.5 KB');
  assert.equal(bytesWords(25 << 20), '25 MB');
  assert.equal(bytesWords(100 * 1024 * 1024 + 1), '100 MB');
  assert.equal(bytesWords(10240 * 1024 * 1024), '10 GB');
});

test('a file over the limit is refused before it is sent in the words the service refusal gets', () => {
  const storage = { allowanceBytes: 100 << 20, maxFileBytes: 1 << 20 };
  const before = refusalOf({ name: 'big.pdf', size: (1 << 20) + 1 }, storage.maxFileBytes);
  const after = uploadFailureWords(new ApiFailure(413, 'file_too_large', 'a file may be at most 1048576 bytes'), 'big.pdf', storage);
  assert.equal(before, 'big.pdf is too large: a file may be at most 1 MB.');
  assert.equal(after, before);
  assert.equal(refusalOf({ name: 'ok.md', size: 1 << 20 }, storage.maxFileBytes), null);
  assert.equal(refusalOf({ name: 'empty.md', size: 0 }, storage.maxFileBytes), uploadFailureWords(new ApiFailure(400, 'empty_file', 'the file is empty'), 'empty.md', storage));
});

test("the service's other refusals in words, its own where they name what to do", () => {
  const storage = { allowanceBytes: 100 << 20, maxFileBytes: 25 << 20 };
  const words = (code: string, message = '') => uploadFailureWords(new ApiFailure(400, code, message), 'a.xls', storage);
  assert.equal(words('unsupported_format', 'this format is not read: upload Markdown, text, HTML, PDF or DOCX'), 'a.xls: This format is not read: upload Markdown, text, HTML, PDF or DOCX.');
  assert.match(words('storage_full'), /storage allowance of 100 MB/);
  assert.match(words('size_mismatch'), /upload it again/);
  assert.match(words('network'), /cannot be reached/);
  assert.match(words('collection_synced_from_folder'), /mirrors a folder/);
});

test('the list is read every 2 s while a document is queued or being uploaded, and not otherwise', () => {
  const now = Date.parse('2026-01-01T12:00:00Z');
  const at = (ms: number) => new Date(now - ms).toISOString();
  assert.equal(pollDelay([], now), null);
  assert.equal(pollDelay([{ status: 'indexed', updatedAt: at(0) }, { status: 'failed', updatedAt: at(0) }], now), null);
  assert.equal(pollDelay([{ status: 'indexed', updatedAt: at(0) }, { status: 'queued', updatedAt: at(10 * ABANDONED_MS) }], now), POLL_MS);
  assert.equal(pollDelay([{ status: 'uploading', updatedAt: at(1000) }], now), POLL_MS);
  // One whose bytes never came is the sweep's: the list stops waiting on it.
  assert.equal(pollDelay([{ status: 'uploading', updatedAt: at(ABANDONED_MS + 1) }], now), null);
  // A read that failed is tried again, less often each time.
  assert.ok(pollDelay([{ status: 'queued', updatedAt: at(0) }], now, 1)! > POLL_MS);
  assert.equal(pollDelay([{ status: 'queued', updatedAt: at(0) }], now, 50), 30_000);
});
