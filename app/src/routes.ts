// The member's reading pages, addressed in the hash of the page at `/` (the service serves the
// app at a fixed set of paths, and `/` is one; the hash never reaches it): the search results at
// `/#/search?q=<words>` and a document at `/#/documents/<collection>/<document>?passage=<n>`.
// Pure; tested in test/routes.

/** A reading page: the results of a search, or a document (at a passage, when one is named). */
export type Reading =
  | { kind: 'search'; q: string }
  | { kind: 'document'; collectionId: string; documentId: string; passage: number | null };

const COLLECTION = /^col_[0-9a-f]{32}$/;
const DOCUMENT = /^doc_[0-9a-f]{32}$/;
/** A passage's place: a whole number a u32 holds. */
const PASSAGE = /^(0|[1-9][0-9]{0,8})$/;

/** The address of a document's page, at `passage` when given. */
export function documentHref(collectionId: string, documentId: string, passage?: number | null): string {
  const at = passage == null ? '' : `?passage=${passage}`;
  return `/#/documents/${encodeURIComponent(collectionId)}/${encodeURIComponent(documentId)}${at}`;
}

/** The address of the results of searching for `q`. */
export function searchHref(q: string): string {
  return `/#/search?${new URLSearchParams({ q })}`;
}

/** The reading page `hash` (as `location.hash`) names, or null. */
export function readingFromHash(hash: string): Reading | null {
  const m = hash.match(/^#\/(search|documents\/([^/?#]+)\/([^/?#]+))(?:\?([^#]*))?$/);
  if (!m) return null;
  const params = new URLSearchParams(m[4] ?? '');
  if (m[1] === 'search') return { kind: 'search', q: params.get('q') ?? '' };
  const [collectionId, documentId] = [safeDecode(m[2]), safeDecode(m[3])];
  if (!COLLECTION.test(collectionId) || !DOCUMENT.test(documentId)) return null;
  const at = params.get('passage');
  const passage = at !== null && PASSAGE.test(at) ? Number(at) : null;
  return { kind: 'document', collectionId, documentId, passage };
}

function safeDecode(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return '';
  }
}

/** The reading page of the current address: only at `/`. */
export function readingFromLocation(): Reading | null {
  return location.pathname === '/' ? readingFromHash(location.hash) : null;
}
