// The transcript reducer: what a person sees for each shape of event log.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import {
  answered,
  applyPage,
  awaitingMember,
  busy,
  empty,
  listedTitle,
  pendingCalls,
  retryable,
  shownTitle,
  sourcesOf,
  type Transcript,
} from '../src/transcript';
import type { EventBody, TranscriptPage, WireEvent } from '../src/wire';

let seq = 0;
function ev(body: EventBody): WireEvent {
  seq += 1;
  return { ...body, id: `evt_${String(seq).padStart(12, '0')}`, occurredAt: '2026-11-24T00:00:00Z' } as WireEvent;
}
const user = (text: string) => ev({ type: 'user_message', payload: { text } });
const agent = (text: string) => ev({ type: 'agent_message', payload: { text } });
const idle = () => ev({ type: 'status_idle', payload: {} });
const page = (events: WireEvent[], running = false, hasMore = false): TranscriptPage => ({
  title: 'T',
  workflowRunId: running ? 'run_1' : null,
  events,
  hasMore,
  backfillFailed: false,
});

test('a question and its answer read in order, and the cursor is the last event', () => {
  const events = [user('What is our refund policy?'), agent('Within **30** days.'), idle()];
  const t = applyPage(empty, page(events));
  assert.deepEqual(
    t.items.map((i) => i.kind),
    ['user', 'agent'],
  );
  assert.equal(t.cursor, events[2].id);
  assert.equal(busy(t), false);
});

test('folding the same page twice changes nothing', () => {
  const events = [user('a'), agent('b'), idle()];
  const once = applyPage(empty, page(events));
  assert.deepEqual(applyPage(once, page(events)), once);
});

test('a tool call is shown with its input and then its output, and its passages go under the answer as sources', () => {
  const use = ev({ type: 'tool_use', payload: { tool: 'docs_search', input: { query: 'refund' } } });
  const output = [
    { source: 'guide/refunds.md', heading: 'Refunds', text: '...' },
    { source: 'guide/refunds.md', heading: 'Refunds again', text: '...' },
    { url: 'https://wiki.example.com/policy', title: 'Policy' },
    { text: 'no locator' },
  ];
  const result = ev({ type: 'tool_result', payload: { tool: 'docs_search', output } });
  let t = applyPage(empty, page([user('refunds?'), use], true));
  const tool = t.items[1];
  assert.equal(tool.kind === 'tool' && tool.done, false);
  t = applyPage(t, page([result, agent('30 days'), idle()]));
  const [, called, answer] = t.items;
  assert.ok(called.kind === 'tool' && called.done);
  assert.deepEqual(called.kind === 'tool' && called.output, output);
  assert.ok(answer.kind === 'agent');
  assert.deepEqual(
    answer.kind === 'agent' && answer.sources.map((s) => s.label),
    ['Refunds (guide/refunds.md)', 'Refunds again (guide/refunds.md)', 'Policy (https://wiki.example.com/policy)'],
  );
  assert.deepEqual(t.pendingSources, []);
});

test('a follow-up sent while a turn runs is queued until its own turn starts', () => {
  let t = applyPage(empty, page([user('first')], true));
  assert.equal(busy(t), true);
  t = applyPage(t, page([user('second')], true));
  const queued = () => t.items.some((i) => i.kind === 'user' && i.text === 'second' && i.queued);
  assert.equal(queued(), true);
  t = applyPage(t, page([agent('answer to first')], true));
  assert.equal(queued(), true, 'the first turn has not ended yet');
  t = applyPage(t, page([idle()], true));
  assert.equal(queued(), false, 'the first turn ended: the second is being answered');
  assert.equal(busy(t), true);
  t = applyPage(t, page([agent('answer to second'), idle()]));
  assert.equal(busy(t), false);
});

test('a stop ends the turn plainly and a new message starts again', () => {
  let t: Transcript = applyPage(empty, page([user('long question')], true));
  t = applyPage(t, page([ev({ type: 'status_terminated', payload: { reason: 'cancelled' } })]));
  assert.equal(t.terminated, true);
  assert.equal(busy(t), false);
  assert.equal(t.items.at(-1)?.kind, 'terminated');
  t = applyPage(t, page([user('again')], true));
  assert.equal(t.terminated, false);
  assert.equal(busy(t), true);
});

test('questions queued behind a stopped turn are shown as not answered', () => {
  let t = applyPage(empty, page([user('first'), user('second')], true));
  t = applyPage(t, page([ev({ type: 'status_terminated', payload: { reason: 'cancelled' } })]));
  const second = t.items.find((i) => i.kind === 'user' && i.text === 'second');
  assert.deepEqual(second?.kind === 'user' && [second.queued, second.unanswered], [false, true]);
});

test('errors in the log are shown with their code and message', () => {
  const failed = ev({ type: 'error', payload: { code: 'cost_cap_reached', message: 'The cap is reached.' } });
  const t = applyPage(empty, page([user('q'), failed, idle()]));
  assert.deepEqual(t.items[1], { kind: 'error', id: failed.id, code: 'cost_cap_reached', message: 'The cap is reached.' });
  assert.equal(busy(t), false);
});

test('hasMore and the running flag follow the last page', () => {
  const t = applyPage(empty, page([user('q')], true, true));
  assert.equal(t.hasMore, true);
  assert.equal(t.running, true);
});

test('sources come from objects with a URL or path, nothing else', () => {
  assert.deepEqual(sourcesOf(null), []);
  assert.deepEqual(sourcesOf('text'), []);
  assert.deepEqual(sourcesOf({ path: 'a.md' }), [{ locator: 'a.md', label: 'a.md' }]);
  assert.deepEqual(sourcesOf([{ link: 'https://x', name: 'X' }]), [{ locator: 'https://x', label: 'X (https://x)' }]);
});

test('a failed turn can be retried with its own question, and only while nothing runs', () => {
  const failed = ev({ type: 'error', payload: { code: 'agent_failed', message: 'x' } });
  const stop = ev({ type: 'status_terminated', payload: { reason: 'failed' } });
  const t = applyPage(empty, page([user('first'), agent('one'), idle(), user('second'), failed, stop]));
  assert.deepEqual(retryable(t), { itemId: stop.id, question: 'second' });
  // Answered since: nothing to retry.
  const answered = applyPage(t, page([user('third'), agent('three'), idle()]));
  assert.equal(retryable(answered), null);
  // A run in flight: not yet.
  assert.equal(retryable(applyPage(empty, page([user('q'), failed], true))), null);
});

test('a stopped turn retries its own question, not the ones queued behind it', () => {
  const stop = ev({ type: 'status_terminated', payload: { reason: 'cancelled' } });
  const t = applyPage(empty, page([user('asked'), user('queued'), stop]));
  assert.equal(retryable(t)?.question, 'asked');
});

test('a title cut from a longer first message ends with an ellipsis, a whole one does not', () => {
  const long = 'x'.repeat(70);
  const cut = applyPage(empty, { ...page([user(long)]), title: long.slice(0, 60) });
  assert.equal(shownTitle(cut), `${'x'.repeat(60)}…`);
  const whole = applyPage(empty, { ...page([user('short')]), title: 'short' });
  assert.equal(shownTitle(whole), 'short');
  assert.equal(listedTitle('é'.repeat(60)), `${'é'.repeat(60)}…`);
  assert.equal(listedTitle('é'.repeat(59)), 'é'.repeat(59));
});

test('a running turn shows its draft until the answer arrives whole', () => {
  const asked = applyPage(empty, { ...page([user('Tell me')], true), draft: { text: 'Half an', updatedAt: 'x' } });
  assert.equal(asked.draft, 'Half an');
  const grown = applyPage(asked, { ...page([], true), draft: { text: 'Half an answer', updatedAt: 'y' } });
  assert.equal(grown.draft, 'Half an answer');
  const done = applyPage(grown, page([agent('Half an answer, whole.'), idle()]));
  assert.equal(done.draft, null);
  // A page without a run never shows one.
  assert.equal(applyPage(empty, { ...page([user('q')]), draft: { text: 'stale', updatedAt: 'z' } }).draft, null);
});

test('a call that asks the member waits with no run, and shows how it was answered once its result comes', () => {
  const approval = { state: 'pending', integration: 'kb', expiresAt: '2026-11-29T00:00:00Z', mayAlwaysAllow: true };
  const use = ev({ type: 'tool_use', payload: { tool: 'kb_create_note', input: { text: 'hi' }, approval } });
  let t = applyPage(empty, page([user('write it'), use]));
  assert.equal(awaitingMember(t), true);
  assert.equal(busy(t), true, 'the turn is not over');
  assert.deepEqual(
    pendingCalls(t).map((c) => c.id),
    [use.id],
  );
  // The member answers: shown at once, before any poll.
  t = answered(t, use.id, 'declined');
  assert.equal(awaitingMember(t), false);
  // Another device's answer arrives as the result, which carries the final state.
  let other = applyPage(empty, page([user('write it'), use]));
  const result = ev({ type: 'tool_result', payload: { tool: 'kb_create_note', output: { error: 'declined' }, approval: 'declined' } });
  other = applyPage(other, page([result], true));
  const call = other.items.find((i) => i.kind === 'tool');
  assert.equal(call?.kind === 'tool' && call.approval?.state, 'declined');
  assert.equal(awaitingMember(other), false);
});

test('a running turn is not waiting for the member, even with a call shown as pending', () => {
  const approval = { state: 'pending', expiresAt: '2026-11-29T00:00:00Z', mayAlwaysAllow: false };
  const use = ev({ type: 'tool_use', payload: { tool: 'kb_create_note', input: {}, approval } });
  const t = applyPage(empty, page([user('write it'), use], true));
  assert.equal(awaitingMember(t), false);
});
