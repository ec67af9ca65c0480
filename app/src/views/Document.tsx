// A document the member may open (`/#/documents/<collection>/<document>?passage=<n>`): its name,
// collection and status, its original to download, and its passages read a window at a time: the
// window around the passage named (scrolled into view, marked and given the focus, so a screen
// reader starts there), earlier ones on request, later ones as the reader scrolls to the end or
// presses Show more. One deleted, or in a collection the member may no longer open, is said so.
import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';

import { ApiFailure, api, documentUrl } from '../api';
import { bytesWords, failureWords } from '../documents';
import { whereWords } from '../search';
import type { Passage, ReaderDocument } from '../wire';

/** Passages a window holds, and how many before the one named it starts with. */
const WINDOW = 30;
const BEFORE = 5;

export const GONE = 'This document was deleted, or you may no longer open it.';

type Loaded = { document: ReaderDocument; passages: Passage[]; first: number; next: number | null };

export function DocumentPage(props: { collectionId: string; documentId: string; passage: number | null; titled: (name: string) => void }) {
  const { collectionId, documentId, passage } = props;
  const [loaded, setLoaded] = useState<Loaded | 'gone' | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const [loading, setLoading] = useState(false);
  const list = useRef<HTMLOListElement>(null);
  const end = useRef<HTMLDivElement>(null);
  const heading = useRef<HTMLHeadingElement>(null);
  // Kept while earlier passages are put above: where the reader was, counted from the bottom.
  const keep = useRef<number | null>(null);
  const placed = useRef(false);

  const failed = (e: unknown) => {
    if (e instanceof ApiFailure && e.status === 404) setLoaded('gone');
    else setProblem(failureWords(e));
  };

  useEffect(() => {
    let stale = false;
    const from = passage === null ? 0 : Math.max(0, passage - BEFORE);
    (async () => {
      const [document, window] = await Promise.all([
        api.document(collectionId, documentId),
        api.passages(collectionId, documentId, from, WINDOW),
      ]);
      // A passage past the document's end (it was replaced by a shorter one) opens its start.
      const shown = window.passages.length === 0 && from > 0 ? await api.passages(collectionId, documentId, 0, WINDOW) : window;
      if (stale) return;
      const first = shown === window ? from : 0;
      setLoaded({ document, passages: shown.passages, first, next: shown.next ?? null });
      props.titled(document.name);
    })().catch((e) => !stale && failed(e));
    return () => {
      stale = true;
    };
  }, [collectionId, documentId, passage]);

  const current = loaded !== 'gone' ? loaded : null;
  const target = current?.passages.find((p) => p.passage === passage) ?? null;

  // Once drawn, the passage named is in view and has the focus (else the title has it).
  useLayoutEffect(() => {
    if (!current || placed.current) return;
    placed.current = true;
    const at = target && list.current?.querySelector<HTMLElement>(`#passage-${target.passage}`);
    if (at) {
      at.focus({ preventScroll: true });
      at.scrollIntoView({ block: 'center' });
    } else heading.current?.focus();
  }, [current]);
  // Earlier passages put above leave the reader where they were.
  useLayoutEffect(() => {
    const pane = list.current?.closest('main');
    if (keep.current === null || !pane) return;
    pane.scrollTop = pane.scrollHeight - keep.current;
    keep.current = null;
  }, [current?.first]);

  const more = async () => {
    if (!current || current.next === null || loading) return;
    setLoading(true);
    try {
      const w = await api.passages(collectionId, documentId, current.next, WINDOW);
      setLoaded((l) => (l && l !== 'gone' ? { ...l, passages: [...l.passages, ...w.passages], next: w.next ?? null } : l));
    } catch (e) {
      failed(e);
    } finally {
      setLoading(false);
    }
  };
  const earlier = async () => {
    if (!current || current.first === 0 || loading) return;
    setLoading(true);
    const from = Math.max(0, current.first - WINDOW);
    try {
      const w = await api.passages(collectionId, documentId, from, current.first - from);
      const pane = list.current?.closest('main');
      if (pane) keep.current = pane.scrollHeight - pane.scrollTop;
      setLoaded((l) => (l && l !== 'gone' ? { ...l, passages: [...w.passages, ...l.passages], first: from } : l));
    } catch (e) {
      failed(e);
    } finally {
      setLoading(false);
    }
  };
  // Scrolled to the end of what is loaded, the next window is read.
  const moreRef = useRef(more);
  moreRef.current = more;
  useEffect(() => {
    if (!end.current || typeof IntersectionObserver === 'undefined') return;
    const seen = new IntersectionObserver((entries) => {
      if (entries.some((e) => e.isIntersecting)) void moreRef.current();
    });
    seen.observe(end.current);
    return () => seen.disconnect();
  }, [current !== null && current.next !== null]);

  if (loaded === 'gone') {
    return (
      <section class="document-page" aria-labelledby="document-title">
        <h1 id="document-title">Document</h1>
        <p class="gone" role="status">
          {GONE}
        </p>
      </section>
    );
  }
  if (!current) {
    return (
      <section class="document-page" aria-label="Document">
        {problem ? (
          <p class="problem" role="alert">
            {problem}
          </p>
        ) : (
          <p class="hint">Loading…</p>
        )}
      </section>
    );
  }
  const { document: d, passages, first, next } = current;
  return (
    <section class="document-page" aria-labelledby="document-title">
      <h1 id="document-title" ref={heading} tabIndex={-1}>
        {d.name}
      </h1>
      <p class="hint document-facts">
        In {d.collectionName} · {d.format.toUpperCase()} · {bytesWords(d.bytes)}
        {d.status === 'indexed' ? ` · ${d.passages === 1 ? '1 passage' : `${d.passages} passages`}` : ''}
      </p>
      <div class="row">
        <a class="button" href={`${documentUrl(collectionId, documentId)}/original`} download={d.name}>
          Download original
        </a>
      </div>
      {d.status !== 'indexed' && (
        <p class="hint" role="status">
          {d.status === 'failed'
            ? 'This document could not be read: its passages cannot be shown. The original can still be downloaded.'
            : 'This document is being indexed: its passages show here once it is.'}
        </p>
      )}
      {passage !== null && !target && d.status === 'indexed' && (
        <p class="hint" role="status">
          The passage cited is no longer in this document (it may have been replaced): it opens at its start.
        </p>
      )}
      {problem && (
        <p class="problem" role="alert">
          {problem}
        </p>
      )}
      {first > 0 && (
        <button type="button" class="earlier" disabled={loading} onClick={() => void earlier()}>
          Show earlier passages
        </button>
      )}
      <ol class="passages" ref={list} aria-label={`Passages of ${d.name}`}>
        {passages.map((p) => {
          const cited = p.passage === passage;
          const where = whereWords(p);
          return (
            <li key={p.passage} id={`passage-${p.passage}`} class={cited ? 'passage cited' : 'passage'} tabIndex={cited ? -1 : undefined} aria-current={cited ? 'true' : undefined}>
              {cited && <span class="cited-label">The passage cited</span>}
              {where && <p class="where">{where}</p>}
              <p class="text">{p.text}</p>
            </li>
          );
        })}
      </ol>
      {next !== null && (
        <button type="button" class="more" disabled={loading} onClick={() => void more()}>
          Show more
        </button>
      )}
      <div ref={end} class="end" />
    </section>
  );
}
