// A search's results as the app shows them: where a passage sits, and a snippet of its text with
// the words searched for marked, as stretches of text the view writes as text (a passage's markup
// is never parsed). Pure; tested in test/search.

/** Where a passage is in its document: its headings ("Setup › Rate limits"), or its page. */
export function whereWords(p: { headings: string[]; page?: number | null }): string {
  if (p.headings.length > 0) return p.headings.join(' › ');
  return p.page != null ? `Page ${p.page}` : '';
}

/** The words of a query worth marking in a result: each at least two letters or digits, longest
 *  first (so "rate" is not marked inside a marked "rates"), each once. */
export function queryTerms(q: string): string[] {
  const words = q.toLowerCase().match(/[\p{L}\p{N}]{2,}/gu) ?? [];
  return [...new Set(words)].sort((a, b) => b.length - a.length);
}

/** A stretch of text, marked when it is a word searched for. */
export interface Segment {
  text: string;
  marked: boolean;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** `text` cut into stretches, those that begin a word with one of `terms` (in any case) marked. */
export function highlight(text: string, terms: string[]): Segment[] {
  if (terms.length === 0 || !text) return text ? [{ text, marked: false }] : [];
  const pattern = new RegExp(`(?<![\\p{L}\\p{N}])(?:${terms.map(escapeRegExp).join('|')})`, 'giu');
  const out: Segment[] = [];
  let at = 0;
  for (const m of text.matchAll(pattern)) {
    const start = m.index ?? 0;
    if (start > at) out.push({ text: text.slice(at, start), marked: false });
    out.push({ text: m[0], marked: true });
    at = start + m[0].length;
  }
  if (at < text.length) out.push({ text: text.slice(at), marked: false });
  return out;
}

/** At most about `max` characters of `text`, around the first word searched for, cut at spaces,
 *  with an ellipsis where it was cut. */
export function snippet(text: string, terms: string[], max = 320): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  if (flat.length <= max) return flat;
  const first = highlight(flat, terms).findIndex((s) => s.marked);
  const offset = first < 0 ? 0 : highlight(flat, terms).slice(0, first).reduce((n, s) => n + s.text.length, 0);
  let start = Math.max(0, Math.min(offset - Math.floor(max / 4), flat.length - max));
  if (start > 0) {
    const space = flat.indexOf(' ', start);
    start = space < 0 || space > offset ? start : space + 1;
  }
  let end = Math.min(flat.length, start + max);
  if (end < flat.length) {
    const space = flat.lastIndexOf(' ', end);
    if (space > start) end = space;
  }
  return `${start > 0 ? '…' : ''}${flat.slice(start, end)}${end < flat.length ? '…' : ''}`;
}
