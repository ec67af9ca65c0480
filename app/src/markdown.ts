// Markdown of the agent's answers as safe HTML: answer.ts renders (marked, with any raw HTML the
// model wrote shown as text and citation markers as links the app writes), then DOMPurify removes
// anything else that could run (event handlers, javascript: URLs, forms, frames, styles). Links
// open in a new tab without an opener, but for the citations, which open the passage in the app.
// Nothing from the model is ever inserted unsanitised.

import DOMPurify from 'dompurify';

import { answerHtml, type Citation } from './answer';

/** Whether `node` is a citation link the app wrote: to a document's page, in this app. */
function isCitation(node: Element): boolean {
  return node.classList.contains('citation') && (node.getAttribute('href') ?? '').startsWith('/#/documents/');
}

DOMPurify.addHook('afterSanitizeAttributes', (node) => {
  if (node.tagName === 'A' && !isCitation(node)) {
    node.setAttribute('target', '_blank');
    node.setAttribute('rel', 'noopener noreferrer');
  }
});

function sanitise(html: string): string {
  return DOMPurify.sanitize(html, {
    FORBID_TAGS: ['style', 'form', 'input', 'button', 'iframe', 'img'],
    FORBID_ATTR: ['style'],
  });
}

/** An answer as sanitised HTML, and the passages it cites, numbered as its links are. */
export function renderAnswer(text: string): { html: string; citations: Citation[] } {
  const { html, citations } = answerHtml(text);
  return { html: sanitise(html), citations };
}

export function renderMarkdown(text: string): string {
  return renderAnswer(text).html;
}
