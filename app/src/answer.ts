// An answer's Markdown as HTML, before it is sanitised (markdown.ts sanitises it with DOMPurify):
// marked renders, raw HTML the model wrote is shown as text, and each citation marker the agent
// writes, `[[cite:<collection>/<document>#<passage>]]`, becomes a numbered link to the document's
// page at that passage. Pure (no DOM); tested in test/answer.
//
// The marker is a token of marked's inline grammar matched by a strict pattern (ids of exactly
// `col_`/`doc_` and 32 lowercase hex digits, a whole number), so one inside a code span or a code
// block, which marked reads as code first, stays text; the link is written here from the matched
// ids, never from anything else the model wrote.
import { Marked, type Token, type Tokens } from 'marked';

import { documentHref } from './routes';

/** One passage an answer cites, numbered in order of first appearance in that answer. */
export interface Citation {
  n: number;
  collectionId: string;
  documentId: string;
  passage: number;
}

/** The marker, anchored at the start of what marked has left to read. */
const MARKER = /^\[\[cite:(col_[0-9a-f]{32})\/(doc_[0-9a-f]{32})#(0|[1-9][0-9]{0,8})\]\]/;

interface CitationToken extends Tokens.Generic {
  type: 'citation';
  collectionId: string;
  documentId: string;
  passage: number;
  /** Its number in the answer, set before rendering. */
  n?: number;
  /** Inside a link's text: written as its number only (a link holds no link). */
  inLink?: boolean;
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

/** The link a citation is shown as: its number, to the passage on the document's page. */
export function citationLink(c: Citation): string {
  const href = escapeHtml(documentHref(c.collectionId, c.documentId, c.passage));
  return `<a class="citation" href="${href}" aria-label="Source ${c.n}">[${c.n}]</a>`;
}

// Raw HTML (block or inline) becomes text: an `<img onerror=…>` in an answer is never even
// parsed into an element, so no browser gets as far as refusing its handler.
const marked = new Marked(
  { gfm: true, breaks: false, async: false, renderer: { html: ({ text }) => escapeHtml(text) } },
  {
    extensions: [
      {
        name: 'citation',
        level: 'inline',
        start: (src: string) => {
          const at = src.indexOf('[[cite:');
          return at < 0 ? undefined : at;
        },
        tokenizer: (src: string): CitationToken | undefined => {
          const m = MARKER.exec(src);
          if (!m) return undefined;
          return { type: 'citation', raw: m[0], collectionId: m[1], documentId: m[2], passage: Number(m[3]) };
        },
        renderer: (token: Tokens.Generic) => {
          const t = token as CitationToken;
          const c: Citation = { n: t.n ?? 0, collectionId: t.collectionId, documentId: t.documentId, passage: t.passage };
          return t.inLink ? `[${c.n}]` : citationLink(c);
        },
      },
    ],
  },
);

const key = (c: { collectionId: string; documentId: string; passage: number }) => `${c.collectionId}/${c.documentId}#${c.passage}`;

/** Numbers the citations of `tokens` in reading order (one passage cited twice keeps its first
 *  number) and returns them, each once. */
function numberCitations(tokens: Token[]): Citation[] {
  const found = new Map<string, Citation>();
  marked.walkTokens(tokens, (token) => {
    if (token.type === 'link') {
      // Its text is read after it: a citation there is marked as inside a link.
      marked.walkTokens((token as Tokens.Link).tokens, (inner) => {
        if (inner.type === 'citation') (inner as CitationToken).inLink = true;
      });
    }
    if (token.type !== 'citation') return;
    const t = token as CitationToken;
    let c = found.get(key(t));
    if (!c) {
      c = { n: found.size + 1, collectionId: t.collectionId, documentId: t.documentId, passage: t.passage };
      found.set(key(t), c);
    }
    t.n = c.n;
  });
  return [...found.values()];
}

/** `text` (an answer's Markdown) as HTML to sanitise, and the passages it cites, by number. */
export function answerHtml(text: string): { html: string; citations: Citation[] } {
  const tokens = marked.lexer(text);
  const citations = numberCitations(tokens);
  return { html: marked.parser(tokens), citations };
}

/** The passages `text` cites, by number. */
export function citationsOf(text: string): Citation[] {
  return numberCitations(marked.lexer(text));
}
