// The passages an answer cites, under it, by the numbers its links carry: each document's name
// (read once per page load, whoever cites it) linked to the passage, or, for a document deleted
// or closed to the member since, "No longer available" and no link.
import { useEffect, useState } from 'preact/hooks';

import { ApiFailure, api } from '../api';
import type { Citation } from '../answer';
import { documentHref } from '../routes';
import type { ReaderDocument } from '../wire';

type Known = ReaderDocument | 'gone';

/** The documents read this page load, by `<collection>/<document>`. A read that failed for a
 *  reason other than 404 is forgotten, so the next answer to cite it reads it again. */
const documents = new Map<string, Promise<Known>>();

function documentOf(collectionId: string, documentId: string): Promise<Known> {
  const key = `${collectionId}/${documentId}`;
  let known = documents.get(key);
  if (!known) {
    known = api.document(collectionId, documentId).catch((e) => {
      if (e instanceof ApiFailure && e.status === 404) return 'gone' as const;
      documents.delete(key);
      throw e;
    });
    documents.set(key, known);
  }
  return known;
}

export function Cited({ citations }: { citations: Citation[] }) {
  const [known, setKnown] = useState<Record<string, Known | 'unknown'>>({});
  const keys = [...new Set(citations.map((c) => `${c.collectionId}/${c.documentId}`))];
  useEffect(() => {
    let stale = false;
    for (const key of keys) {
      const [collectionId, documentId] = key.split('/');
      documentOf(collectionId, documentId).then(
        (d) => !stale && setKnown((k) => ({ ...k, [key]: d })),
        () => !stale && setKnown((k) => ({ ...k, [key]: 'unknown' })),
      );
    }
    return () => {
      stale = true;
    };
  }, [keys.join(' ')]);
  return (
    <div class="cited-sources">
      <h3>Cited</h3>
      <ul>
        {citations.map((c) => {
          const d = known[`${c.collectionId}/${c.documentId}`];
          const href = documentHref(c.collectionId, c.documentId, c.passage);
          return (
            <li key={c.n} data-citation={c.n}>
              <span class="number">[{c.n}]</span>{' '}
              {d === 'gone' ? (
                <span class="gone">No longer available</span>
              ) : d === undefined || d === 'unknown' ? (
                <a href={href}>{d === 'unknown' ? `Passage ${c.passage + 1} (its document's name could not be read)` : 'Loading…'}</a>
              ) : (
                <>
                  <a href={href}>{d.name}</a>
                  <span class="hint">
                    {' '}
                    in {d.collectionName}, passage {c.passage + 1}
                  </span>
                </>
              )}
            </li>
          );
        })}
      </ul>
    </div>
  );
}
