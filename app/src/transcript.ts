// The conversation as the app shows it, folded from the session's event log. Pure: the views
// render a Transcript, the poller feeds it pages; tested without a browser (test/transcript).

import type { Approval, ApprovalState, TranscriptPage, WireEvent } from './wire';

/** A place an answer drew on: a tool result's document or page. */
export interface Source {
  label: string;
  locator: string;
}

export type Item =
  | { kind: 'user'; id: string; text: string; queued: boolean; unanswered?: boolean }
  | { kind: 'agent'; id: string; text: string; sources: Source[] }
  | { kind: 'tool'; id: string; tool: string; input: unknown; output?: unknown; done: boolean; approval?: Approval }
  | { kind: 'error'; id: string; code: string; message: string }
  | { kind: 'terminated'; id: string; reason: string };

export interface Transcript {
  title: string;
  /** The last event folded in: where the next poll starts. */
  cursor: string | null;
  /** A run is answering (the service's `workflowRunId`). */
  running: boolean;
  /** More events wait beyond the last page: poll again at once. */
  hasMore: boolean;
  items: Item[];
  /** The last turn was stopped or failed (`status_terminated`); a new message starts again. */
  terminated: boolean;
  /** Sources of the turn in flight, not yet attached to an answer. */
  pendingSources: Source[];
  /** Questions asked and not yet answered to the end (`status_idle`): the one being answered
   *  and those queued behind it. */
  openTurns: number;
  /** The answer being written now (the last page's `draft`), shown until it arrives whole. */
  draft: string | null;
}

export const empty: Transcript = {
  title: '',
  cursor: null,
  running: false,
  hasMore: false,
  items: [],
  terminated: false,
  pendingSources: [],
  openTurns: 0,
  draft: null,
};

const LOCATORS = ['url', 'link', 'source', 'path'];
const LABELS = ['title', 'heading', 'name'];

/** The sources a tool's output names: objects (or an array of them) with a URL or path. */
export function sourcesOf(output: unknown): Source[] {
  const list = Array.isArray(output) ? output : [output];
  const found: Source[] = [];
  for (const entry of list) {
    if (entry === null || typeof entry !== 'object') continue;
    const o = entry as Record<string, unknown>;
    const locator = LOCATORS.map((k) => o[k]).find((v): v is string => typeof v === 'string' && v !== '');
    if (!locator) continue;
    const label = LABELS.map((k) => o[k]).find((v): v is string => typeof v === 'string' && v !== '');
    found.push({ locator, label: label ? `${label} (${locator})` : locator });
  }
  return found;
}

/** `into` and then each of `more` not listed yet: a source is a passage (its locator and its
 *  label, say a file and its section), so two sections of one file are two sources. */
function addSources(into: Source[], more: Source[]): Source[] {
  const key = (s: Source) => `${s.locator}\n${s.label}`;
  const seen = new Set(into.map(key));
  return [...into, ...more.filter((s) => !seen.has(key(s)) && (seen.add(key(s)), true))];
}

/** `items` with the oldest queued question marked as being answered. */
function startNextQueued(items: Item[]): Item[] {
  const i = items.findIndex((it) => it.kind === 'user' && it.queued);
  return i < 0 ? items : items.map((it, j) => (j === i ? { ...it, queued: false } : it));
}

function fold(t: Transcript, e: WireEvent): Transcript {
  const items = t.items;
  switch (e.type) {
    case 'user_message':
      // A question asked while another is being answered waits for its turn; one after a stop
      // starts the conversation again.
      return {
        ...t,
        terminated: false,
        openTurns: t.openTurns + 1,
        items: [...items, { kind: 'user', id: e.id, text: e.payload.text, queued: t.openTurns > 0 }],
      };
    case 'agent_message': {
      const answer: Item = { kind: 'agent', id: e.id, text: e.payload.text, sources: t.pendingSources };
      return { ...t, items: [...items, answer], pendingSources: [] };
    }
    case 'tool_use': {
      const approval = e.payload.approval ? (e.payload.approval as Approval) : undefined;
      return { ...t, items: [...items, { kind: 'tool', id: e.id, tool: e.payload.tool, input: e.payload.input, done: false, approval }] };
    }
    case 'tool_result': {
      const open = items.findIndex((it) => it.kind === 'tool' && !it.done && it.tool === e.payload.tool);
      // A call that asked the member: its result says how it was answered.
      const state = e.payload.approval as ApprovalState | null | undefined;
      const asked = open >= 0 ? items[open] : undefined;
      const approval = state && asked?.kind === 'tool' && asked.approval ? { ...asked.approval, state } : undefined;
      const result = { output: e.payload.output, done: true, ...(approval ? { approval } : {}) };
      const next =
        open >= 0
          ? items.map((it, i) => (i === open ? { ...it, ...result } : it))
          : [...items, { kind: 'tool' as const, id: e.id, tool: e.payload.tool, input: null, ...result }];
      return { ...t, items: next, pendingSources: addSources(t.pendingSources, sourcesOf(e.payload.output)) };
    }
    case 'status_idle': {
      // The turn is over; the oldest queued question is answered next.
      const openTurns = Math.max(0, t.openTurns - 1);
      return { ...t, openTurns, pendingSources: [], items: openTurns > 0 ? startNextQueued(items) : items };
    }
    case 'status_terminated': {
      // Questions queued behind a stopped turn stay in the log unanswered.
      const left = items.map((it) => (it.kind === 'user' && it.queued ? { ...it, queued: false, unanswered: true } : it));
      return {
        ...t,
        terminated: true,
        openTurns: 0,
        items: [...left, { kind: 'terminated', id: e.id, reason: e.payload.reason }],
      };
    }
    case 'error':
      return { ...t, items: [...items, { kind: 'error', id: e.id, code: e.payload.code, message: e.payload.message }] };
  }
}

/** `t` with a transcript page folded in. Events already folded (a page fetched twice after a
 *  retry) are skipped, so folding is idempotent; event ids (`evt_` and a zero-padded sequence
 *  number) sort as the log does. */
export function applyPage(t: Transcript, page: TranscriptPage): Transcript {
  const known = new Set(t.items.map((it) => it.id));
  let next: Transcript = { ...t, title: page.title || t.title };
  for (const e of page.events) {
    if (known.has(e.id) || (t.cursor !== null && e.id <= t.cursor)) continue;
    next = fold(next, e);
    next.cursor = e.id;
  }
  const running = page.workflowRunId != null;
  return { ...next, running, hasMore: page.hasMore, draft: running ? (page.draft?.text ?? null) : null };
}

/** The calls waiting for the member to approve or decline them. */
export function pendingCalls(t: Transcript): Extract<Item, { kind: 'tool' }>[] {
  return t.items.filter((it): it is Extract<Item, { kind: 'tool' }> => it.kind === 'tool' && !it.done && it.approval?.state === 'pending');
}

/** Whether the turn waits for the member: no run is answering, and a call asks them. */
export function awaitingMember(t: Transcript): boolean {
  return !t.running && !t.terminated && pendingCalls(t).length > 0;
}

/** `t` with the member's answer to the call `id` shown at once: the log rewrites the call's
 *  event, which a poll past it does not read again. */
export function answered(t: Transcript, id: string, state: ApprovalState): Transcript {
  const items = t.items.map((it) => (it.kind === 'tool' && it.id === id && it.approval ? { ...it, approval: { ...it.approval, state } } : it));
  return { ...t, items };
}

/** Whether the conversation waits on the service: a run is answering, or a message is not yet
 *  answered. */
export function busy(t: Transcript): boolean {
  return !t.terminated && (t.running || t.openTurns > 0);
}

/** The question a failed or stopped turn asked, when the conversation ends on that failure (its
 *  last item is an error or a stop): Retry sends it again as a new message. */
export function retryable(t: Transcript): { itemId: string; question: string } | null {
  const last = t.items[t.items.length - 1];
  if (!last || (last.kind !== 'error' && last.kind !== 'terminated') || busy(t)) return null;
  const asked = [...t.items].reverse().find((it) => it.kind === 'user' && !it.unanswered);
  return asked?.kind === 'user' ? { itemId: last.id, question: asked.text } : null;
}

/** Titles are the first 60 characters of the first message (the interface's rule). */
export const TITLE_CHARS = 60;

/** A title as shown: with an ellipsis when it is cut from a longer first message. */
export function shownTitle(t: Transcript): string {
  const first = t.items.find((it) => it.kind === 'user');
  const cut = first?.kind === 'user' && first.text.length > t.title.length && first.text.startsWith(t.title);
  return cut ? `${t.title}…` : t.title;
}

/** A title from the sessions' list, which has no first message: one of the full 60 characters
 *  is taken as cut. */
export function listedTitle(title: string): string {
  return [...title].length >= TITLE_CHARS ? `${title}…` : title;
}
