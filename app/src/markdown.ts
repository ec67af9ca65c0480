// Markdown of the agent's answers as safe HTML: marked renders, with any raw HTML the model
// wrote shown as text (never parsed as markup), then DOMPurify removes anything else that could
// run (event handlers, javascript: URLs, forms, frames, styles). Links open in a new tab without
// an opener. Nothing from the model is ever inserted unsanitised.

import DOMPurify from 'dompurify';
import { Marked } from 'marked';

DOMPurify.addHook('afterSanitizeAttributes', (node) => {
  if (node.tagName === 'A') {
    node.setAttribute('target', '_blank');
    node.setAttribute('rel', 'noopener noreferrer');
  }
});

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

// Raw HTML (block or inline) becomes text: an `<img onerror=…>` in an answer is never even
// parsed into an element, so no browser gets as far as refusing its handler.
const marked = new Marked({ gfm: true, breaks: false, async: false, renderer: { html: ({ text }) => escapeHtml(text) } });

export function renderMarkdown(text: string): string {
  const html = marked.parse(text, { async: false });
  return DOMPurify.sanitize(html, {
    FORBID_TAGS: ['style', 'form', 'input', 'button', 'iframe', 'img'],
    FORBID_ATTR: ['style'],
  });
}
