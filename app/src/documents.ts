// The organisation's documents as the app shows them: sizes and statuses in words, when the admin's
// list is read again, a file refused before it is sent (in the words of the service's refusal).
// Pure; tested in test/documents.
import { ApiFailure, explain } from './api';
import type { DocumentStatus } from './wire';

/** `n` bytes in words: "512 bytes", "1.5 KB", "25 MB" (binary units, as the service's limits). */
export function bytesWords(n: number): string {
  if (n < 1024) return n === 1 ? '1 byte' : `${n} bytes`;
  const units = ['KB', 'MB', 'GB', 'TB'];
  let value = n / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  const shown = value >= 100 || Number.isInteger(value) ? Math.round(value).toString() : value.toFixed(1).replace(/\.0$/, '');
  return `${shown} ${units[unit]}`;
}

/** A document's status in words; `indexing` when a worker holds it now. */
export function statusWords(status: DocumentStatus, indexing = false): string {
  switch (status) {
    case 'uploading':
      return 'Uploading';
    case 'queued':
      return indexing ? 'Indexing…' : 'Queued for indexing';
    case 'indexed':
      return 'Indexed';
    case 'failed':
      return 'Failed';
  }
}

/** How often the admin's document list is read while a document is on its way. */
export const POLL_MS = 2_000;
/** A document `uploading` for longer was abandoned (its bytes never came): the service's sweep
 *  removes it, and the list stops waiting on it. */
export const ABANDONED_MS = 15 * 60_000;

/** Whether the list must be read again to see `d` change: it is queued, or being uploaded. */
export function changing(d: { status: DocumentStatus; updatedAt: string }, now: number): boolean {
  if (d.status === 'queued') return true;
  return d.status === 'uploading' && now - Date.parse(d.updatedAt) < ABANDONED_MS;
}

/** Milliseconds until the list is read again, or null while nothing in it can change on its own.
 *  A failed read is tried again, waiting longer each time (up to 30 s). */
export function pollDelay(documents: { status: DocumentStatus; updatedAt: string }[], now: number, failures = 0): number | null {
  if (!documents.some((d) => changing(d, now))) return null;
  return failures === 0 ? POLL_MS : Math.min(30_000, POLL_MS * 2 ** Math.min(failures, 4));
}

/** Why a file may not be uploaded at all, in the words the service's refusal gets (below), or
 *  null. */
export function refusalOf(file: { name: string; size: number }, maxFileBytes: number): string | null {
  if (file.size === 0) return `${file.name} is empty: there is nothing in it to upload.`;
  if (file.size > maxFileBytes) return tooLarge(file.name, maxFileBytes);
  return null;
}

function tooLarge(name: string, maxFileBytes: number): string {
  return `${name} is too large: a file may be at most ${bytesWords(maxFileBytes)}.`;
}

/** `message` (the service's) as a sentence. */
function sentence(message: string): string {
  const text = message.trim();
  if (!text) return text;
  return `${text[0].toUpperCase()}${text.slice(1)}${/[.!?]$/.test(text) ? '' : '.'}`;
}

/** What to tell the admin when `name`'s upload failed with `f`. */
export function uploadFailureWords(f: ApiFailure, name: string, storage: { allowanceBytes: number; maxFileBytes: number }): string {
  switch (f.code) {
    case 'file_too_large':
    case 'payload_too_large':
      return tooLarge(name, storage.maxFileBytes);
    case 'empty_file':
      return `${name} is empty: there is nothing in it to upload.`;
    case 'storage_full':
      return `${name} would take the organisation's documents past its storage allowance of ${bytesWords(storage.allowanceBytes)}: delete some, or ask for a larger plan.`;
    case 'unsupported_format':
    case 'content_mismatch':
      return `${name}: ${sentence(f.message)}`;
    case 'size_mismatch':
      return `${name} changed while it was being sent: upload it again.`;
    case 'network':
      return `${name} was not sent: the service cannot be reached. Upload it again when it can.`;
    default:
      return `${name}: ${explain(f)}`;
  }
}

/** A failure as the admin or reader reads it. */
export function failureWords(e: unknown): string {
  return e instanceof ApiFailure ? explain(e) : String(e);
}
