// The conversation's items: questions, answers in sanitised Markdown with their sources and a
// copy button on code, tool calls folded with their input and output, errors and stops. New
// answers are announced to screen readers.
import { useEffect, useRef } from 'preact/hooks';

import { renderMarkdown } from '../markdown';
import { busy, type Item, type Transcript } from '../transcript';

function json(value: unknown): string {
  return JSON.stringify(value, null, 2) ?? '';
}

function Answer({ item }: { item: Extract<Item, { kind: 'agent' }> }) {
  const body = useRef<HTMLDivElement>(null);
  useEffect(() => {
    // A copy button on each code block; the HTML itself is sanitised (markdown.ts).
    for (const pre of body.current?.querySelectorAll('pre') ?? []) {
      if (pre.querySelector('button.copy')) continue;
      // A code block may scroll sideways: keyboard users reach it to scroll it.
      pre.tabIndex = 0;
      const button = document.createElement('button');
      button.type = 'button';
      button.className = 'copy';
      button.textContent = 'Copy';
      button.addEventListener('click', () => {
        void navigator.clipboard?.writeText(pre.querySelector('code')?.textContent ?? pre.textContent ?? '');
        button.textContent = 'Copied';
      });
      pre.prepend(button);
    }
  }, [item.text]);
  return (
    <article class="agent">
      <div class="markdown" ref={body} dangerouslySetInnerHTML={{ __html: renderMarkdown(item.text) }} />
      {item.sources.length > 0 && (
        <div class="sources">
          <h3>Sources</h3>
          <ul>
            {item.sources.map((s) => (
              <li key={s.locator}>
                {/^https?:\/\//.test(s.locator) ? (
                  <a href={s.locator} target="_blank" rel="noopener noreferrer">
                    {s.label}
                  </a>
                ) : (
                  s.label
                )}
              </li>
            ))}
          </ul>
        </div>
      )}
    </article>
  );
}

function Entry({ item }: { item: Item }) {
  switch (item.kind) {
    case 'user':
      return (
        <article class="user">
          <p>{item.text}</p>
          {item.queued && <span class="badge">Queued</span>}
          {item.unanswered && <span class="badge">Not answered: the turn before it was stopped</span>}
        </article>
      );
    case 'agent':
      return <Answer item={item} />;
    case 'tool':
      return (
        <details class="tool">
          <summary>
            {item.done ? 'Used' : 'Using'} {item.tool}
          </summary>
          <h4>Input</h4>
          <pre tabIndex={0}>{json(item.input)}</pre>
          {item.done && (
            <>
              <h4>Output</h4>
              <pre tabIndex={0}>{json(item.output)}</pre>
            </>
          )}
        </details>
      );
    case 'error':
      return (
        <p class="error" role="alert">
          {item.message} <code>{item.code}</code>
        </p>
      );
    case 'terminated':
      return <p class="terminated">{item.reason === 'cancelled' ? 'Stopped.' : 'This answer failed and was stopped.'}</p>;
  }
}

export function Conversation({ transcript }: { transcript: Transcript }) {
  const last = [...transcript.items].reverse().find((i) => i.kind === 'agent');
  const end = useRef<HTMLDivElement>(null);
  useEffect(() => end.current?.scrollIntoView({ block: 'end' }), [transcript.items.length]);
  return (
    <div class="conversation">
      <h2 class="title">{transcript.title}</h2>
      {transcript.items.map((item) => (
        <Entry key={item.id} item={item} />
      ))}
      {busy(transcript) && <p class="thinking">Answering…</p>}
      <div ref={end} />
      <div class="visually-hidden" aria-live="polite">
        {last?.kind === 'agent' ? `New answer: ${last.text.slice(0, 200)}` : ''}
      </div>
    </div>
  );
}
