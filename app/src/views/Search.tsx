// The organisation's documents searched (`/#/search?q=…`): the passages the member may open that
// best match, each with its document (a link to the passage on the document's page), its
// collection, where it sits (headings or page) and a snippet with the words searched for marked.
// Everything shown is text: a passage's words are never parsed as HTML.
import { useEffect, useRef, useState } from 'preact/hooks';

import { api } from '../api';
import { failureWords } from '../documents';
import { highlight, queryTerms, snippet, whereWords } from '../search';
import { documentHref, searchHref } from '../routes';
import type { SearchHit } from '../wire';

export function SearchPage(props: { q: string; go: (path: string) => void }) {
  const q = props.q.trim();
  const [found, setFound] = useState<{ of: string; hits: SearchHit[] } | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const [draft, setDraft] = useState(props.q);
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => heading.current?.focus(), []);
  useEffect(() => {
    setDraft(props.q);
    setProblem(null);
    if (!q) return;
    // An answer overtaken by another search is dropped.
    let stale = false;
    api
      .search(q)
      .then((r) => !stale && setFound({ of: q, hits: r.results }))
      .catch((e) => !stale && setProblem(failureWords(e)));
    return () => {
      stale = true;
    };
  }, [q]);

  const hits = found?.of === q ? found.hits : null;
  const terms = queryTerms(q);
  return (
    <section class="search-page" aria-labelledby="search-title">
      <h1 id="search-title" ref={heading} tabIndex={-1}>
        Search documents
      </h1>
      <form
        role="search"
        aria-label="Search the documents again"
        class="row"
        onSubmit={(e) => {
          e.preventDefault();
          if (draft.trim()) props.go(searchHref(draft.trim()));
        }}
      >
        <label for="search-again">Search for</label>
        <input id="search-again" type="search" required maxLength={1000} value={draft} onInput={(e) => setDraft((e.target as HTMLInputElement).value)} />
        <button type="submit">Search</button>
      </form>
      {problem && (
        <p class="problem" role="alert">
          {problem}
        </p>
      )}
      {!q && <p class="hint">Type words to look for in the organisation's documents.</p>}
      {q && hits === null && !problem && <p class="hint">Searching…</p>}
      {hits && (
        <p class="hint" role="status">
          {hits.length === 0
            ? `Nothing found for “${q}” in the documents you may open.`
            : `${hits.length === 1 ? 'One passage' : `${hits.length} passages`} found for “${q}”, best first.`}
        </p>
      )}
      {hits && hits.length > 0 && (
        <ol class="results">
          {hits.map((h) => {
            const where = whereWords(h);
            return (
              <li key={`${h.documentId}#${h.passage}`} class="result">
                <a class="result-title" href={documentHref(h.collectionId, h.documentId, h.passage)}>
                  {h.documentName}
                </a>
                <p class="where">
                  <span class="collection">{h.collectionName}</span>
                  {where && <span class="headings"> · {where}</span>}
                </p>
                <p class="snippet">
                  {highlight(snippet(h.text, terms), terms).map((s, i) => (s.marked ? <mark key={i}>{s.text}</mark> : s.text))}
                </p>
              </li>
            );
          })}
        </ol>
      )}
    </section>
  );
}
