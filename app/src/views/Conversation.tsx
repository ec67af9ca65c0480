// The conversation's items: questions, answers in sanitised Markdown with their sources (and the
// passages they cite, numbered as their citation links are), a copy
// button on code and one for the whole answer as Markdown, tool calls folded with their input
// and output (a call that asks the member with Approve, Decline and Always allow), errors and
// stops with Retry on the last one. The title can be renamed. New
// answers are announced to screen readers.
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';

import { ApiFailure, explain } from '../api';
import { renderAnswer, renderMarkdown } from '../markdown';
import { awaitingMember, busy, type Item, retryable, shownTitle, TITLE_CHARS, type Transcript } from '../transcript';
import type { Decision } from '../wire';
import { Cited } from './Cited';

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
  const [copied, setCopied] = useState(false);
  const { html, citations } = useMemo(() => renderAnswer(item.text), [item.text]);
  return (
    <article class="agent">
      <div class="markdown" ref={body} dangerouslySetInnerHTML={{ __html: html }} />
      {citations.length > 0 && <Cited citations={citations} />}
      {item.sources.length > 0 && (
        <div class="sources">
          <h3>Sources</h3>
          <ul>
            {item.sources.map((s) => (
              <li key={`${s.locator}\n${s.label}`}>
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
      <div class="answer-actions">
        <button
          type="button"
          class="quiet"
          onClick={() => void navigator.clipboard?.writeText(item.text).then(() => setCopied(true), () => setCopied(false))}
        >
          {copied ? 'Copied' : 'Copy as Markdown'}
        </button>
      </div>
    </article>
  );
}

/** What an error event's code means to the person reading; the service's message otherwise. */
function failureWords(item: Extract<Item, { kind: 'error' }>): string {
  switch (item.code) {
    case 'agent_failed':
    case 'step_failed':
      return 'The assistant could not finish this answer.';
    case 'step_timeout':
      return 'The answer took too long and was given up.';
    case 'tool_unavailable':
      return 'A tool the assistant needed could not be reached.';
    default:
      return item.message;
  }
}

/** A tool's name as the member reads it: without its integration's prefix, in words. */
function toolWords(tool: string, integration?: string): string {
  const bare = integration && tool.startsWith(`${integration}_`) ? tool.slice(integration.length + 1) : tool;
  return bare.replace(/[_-]+/g, ' ');
}

/** The input's simple fields (text, numbers, yes or no), to read as a list; the rest is in the
 *  JSON below it. */
function simpleFields(input: unknown): [string, string][] {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) return [];
  return Object.entries(input as Record<string, unknown>)
    .filter(([, v]) => ['string', 'number', 'boolean'].includes(typeof v))
    .map(([k, v]) => [k.replace(/[_-]+/g, ' '), String(v)]);
}

const ANSWERED: Record<string, string> = {
  approved: 'You approved this call.',
  declined: 'You declined this call; it did not run.',
  expired: 'Not answered in time; it did not run.',
};

/** A call that asks the member: what it would do, and Approve, Decline and (where the admin
 *  permits it) Always allow. A group with its own label for screen readers; the outcome is
 *  announced. */
function AskedCall({ item, answer }: { item: Extract<Item, { kind: 'tool' }>; answer?: (id: string, decision: Decision) => Promise<void> }) {
  const approval = item.approval!;
  const [busyWith, setBusyWith] = useState<Decision | null>(null);
  const [failed, setFailed] = useState<string | null>(null);
  const integration = approval.integration ?? 'an integration';
  const what = toolWords(item.tool, approval.integration ?? undefined);
  const fields = simpleFields(item.input);
  const decide = async (decision: Decision) => {
    if (!answer || busyWith) return;
    setBusyWith(decision);
    try {
      await answer(item.id, decision);
      setFailed(null);
    } catch (e) {
      setFailed(e instanceof ApiFailure ? explain(e) : String(e));
    } finally {
      setBusyWith(null);
    }
  };
  const label = `The assistant asks to ${what} in ${integration}`;
  return (
    <section class="asked" role="group" aria-label={label} data-state={approval.state}>
      <p class="asked-what">
        The assistant asks to <strong>{what}</strong> in <strong>{integration}</strong>.
      </p>
      {fields.length > 0 && (
        <dl class="asked-input">
          {fields.map(([k, v]) => (
            <div key={k}>
              <dt>{k}</dt>
              <dd>{v}</dd>
            </div>
          ))}
        </dl>
      )}
      <details>
        <summary>Everything it would send</summary>
        <pre tabIndex={0}>{json(item.input)}</pre>
      </details>
      {approval.state === 'pending' ? (
        <div class="asked-actions">
          <button type="button" disabled={busyWith !== null} onClick={() => void decide('approve')}>
            Approve
          </button>
          <button type="button" class="quiet" disabled={busyWith !== null} onClick={() => void decide('decline')}>
            Decline
          </button>
          {approval.mayAlwaysAllow && (
            <button type="button" class="quiet" disabled={busyWith !== null} onClick={() => void decide('always')}>
              Always allow
            </button>
          )}
        </div>
      ) : null}
      <p class="asked-outcome" role="status">
        {ANSWERED[approval.state] ?? ''}
      </p>
      {failed && (
        <p class="problem" role="alert">
          {failed}
        </p>
      )}
    </section>
  );
}

function RetryButton({ retry }: { retry: () => void }) {
  return (
    <button type="button" class="retry" onClick={retry}>
      Retry
    </button>
  );
}

function Entry({ item, retry, answer }: { item: Item; retry?: () => void; answer?: (id: string, decision: Decision) => Promise<void> }) {
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
      if (item.approval && !item.done) return <AskedCall item={item} answer={answer} />;
      return (
        <details class="tool">
          <summary>
            {item.done ? 'Used' : 'Using'} {item.tool}
            {item.approval && item.approval.state !== 'approved' ? ` (${item.approval.state})` : ''}
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
        <div class="turn-end">
          <p class="error" role="alert" data-code={item.code}>
            {failureWords(item)}
          </p>
          {retry && <RetryButton retry={retry} />}
        </div>
      );
    case 'terminated':
      return (
        <div class="turn-end">
          <p class="terminated">{item.reason === 'cancelled' ? 'Stopped.' : 'This answer failed and was stopped.'}</p>
          {retry && <RetryButton retry={retry} />}
        </div>
      );
  }
}

/** The title, and renaming it in place (Enter saves, Escape cancels). */
function Title({ transcript, rename }: { transcript: Transcript; rename: (title: string) => Promise<void> }) {
  const [editing, setEditing] = useState<string | null>(null);
  const [failed, setFailed] = useState<string | null>(null);
  const renameButton = useRef<HTMLButtonElement>(null);
  const input = useRef<HTMLInputElement>(null);
  useEffect(() => {
    if (editing !== null) input.current?.focus();
  }, [editing !== null]);
  const finish = () => {
    setEditing(null);
    setTimeout(() => renameButton.current?.focus());
  };
  const save = async () => {
    const title = editing?.trim() ?? '';
    if (!title) return setFailed('A title cannot be empty.');
    try {
      await rename(title);
      setFailed(null);
      finish();
    } catch (e) {
      setFailed(e instanceof ApiFailure ? explain(e) : String(e));
    }
  };
  if (editing === null) {
    return (
      <div class="title-row">
        <h2 class="title">{shownTitle(transcript)}</h2>
        <button type="button" class="quiet" ref={renameButton} onClick={() => setEditing(transcript.title)} aria-label="Rename this conversation">
          Rename
        </button>
      </div>
    );
  }
  return (
    <form
      class="title-row"
      onSubmit={(e) => {
        e.preventDefault();
        void save();
      }}
    >
      <label for="rename" class="visually-hidden">
        Title
      </label>
      <input
        id="rename"
        ref={input}
        maxLength={TITLE_CHARS}
        value={editing}
        onInput={(e) => setEditing((e.target as HTMLInputElement).value)}
        onKeyDown={(e) => {
          if (e.key === 'Escape') {
            e.preventDefault();
            e.stopPropagation();
            finish();
          }
        }}
      />
      <button type="submit">Save</button>
      {failed && (
        <span class="problem" role="alert">
          {failed}
        </span>
      )}
    </form>
  );
}

export function Conversation(props: {
  transcript: Transcript;
  retry?: (question: string) => void;
  rename: (title: string) => Promise<void>;
  answer?: (toolUseId: string, decision: Decision) => Promise<void>;
}) {
  const { transcript } = props;
  const last = [...transcript.items].reverse().find((i) => i.kind === 'agent');
  const end = useRef<HTMLDivElement>(null);
  // To the end of the pane the transcript scrolls in, past the composer that sticks to its
  // bottom, so that nothing of the last answer hides behind it.
  useEffect(() => {
    const pane = end.current?.closest('main');
    if (pane) pane.scrollTop = pane.scrollHeight;
  }, [transcript.items.length]);
  // Retry sends the failed or stopped turn's question again; offered on the last item only.
  const again = retryable(transcript);
  const retry = again && props.retry ? () => props.retry?.(again.question) : undefined;
  return (
    <div class="conversation">
      <Title transcript={transcript} rename={props.rename} />
      {transcript.items.map((item) => (
        <Entry key={item.id} item={item} retry={again?.itemId === item.id ? retry : undefined} answer={props.answer} />
      ))}
      {busy(transcript) && transcript.draft && (
        <article class="agent draft" aria-busy="true">
          <div class="markdown" dangerouslySetInnerHTML={{ __html: renderMarkdown(transcript.draft) }} />
        </article>
      )}
      {awaitingMember(transcript) ? (
        <p class="thinking">Waiting for your answer above.</p>
      ) : (
        busy(transcript) && <p class="thinking">{transcript.draft ? 'Writing…' : 'Answering…'}</p>
      )}
      <div ref={end} />
      <div class="visually-hidden" aria-live="polite">
        {last?.kind === 'agent' ? `New answer: ${last.text.slice(0, 200)}` : ''}
      </div>
    </div>
  );
}
