// One conversation: the transcript, polled by cursor while a turn runs (see polling.ts), and the
// composer. The first message of a new chat creates the session. Integrations the member must
// connect (or connect again) before the assistant can use them are named above the composer.
// Focus comes back to the composer after Send, Stop and Retry; Escape anywhere stops a turn.
import { useEffect, useRef, useState } from 'preact/hooks';

import { ApiFailure, api, explain } from '../api';
import { rateLimitWords } from '../limits';
import { nextDelay } from '../polling';
import { answered, applyPage, awaitingMember, busy, empty, type Transcript } from '../transcript';
import type { ApprovalState, Connection, Decision } from '../wire';
import { Conversation } from './Conversation';

/** The member's own connections that the assistant cannot use: not connected, or to reconnect. */
function Unconnected({ sessionId }: { sessionId: string | null }) {
  const [missing, setMissing] = useState<Connection[]>([]);
  useEffect(() => {
    api
      .connections()
      .then((r) => setMissing(r.connections.filter((c) => c.kind === 'member' && c.state !== 'connected')))
      // Only a hint: a failure to read it hides it.
      .catch(() => setMissing([]));
  }, [sessionId]);
  if (missing.length === 0) return null;
  const names = missing.map((c) => c.integration).join(', ');
  const reconnect = missing.every((c) => c.state === 'needs_reconnect');
  return (
    <p class="hint connect-hint">
      {missing.length === 1 ? `${names} is` : `${names} are`} {reconnect ? 'to be connected again' : 'not connected'}: the assistant cannot use {missing.length === 1 ? 'it' : 'them'} for you. <a href="/connections">{reconnect ? 'Reconnect' : 'Connect'}</a>
    </p>
  );
}

/** Questions the sample guide answers (lib/docs/sample), so a newcomer's first try finds something. */
export const EXAMPLES = ['How do I cancel a running answer?', 'What are the rate limits?', 'How do I rename a conversation?'];

/** A problem to show: in words, or a rate limit counted down to the moment it lifts. */
type Problem = { text: string } | { until: number; creating: boolean };

function problemOf(e: unknown, creating: boolean): Problem {
  if (e instanceof ApiFailure && e.code === 'rate_limited' && e.retryAfter !== undefined) {
    return { until: Date.now() + e.retryAfter * 1000, creating };
  }
  return { text: e instanceof ApiFailure ? explain(e) : String(e) };
}

/** The problem in words; a rate limit's wait is counted down each second. */
function ProblemLine({ problem }: { problem: Problem }) {
  const [, tick] = useState(0);
  const limit = 'until' in problem ? problem : null;
  useEffect(() => {
    if (!limit) return;
    const timer = window.setInterval(() => tick((n) => n + 1), 1000);
    return () => clearInterval(timer);
  }, [limit?.until]);
  const text = limit ? rateLimitWords((limit.until - Date.now()) / 1000, limit.creating) : (problem as { text: string }).text;
  return (
    <p class="problem" role="alert">
      {text}
    </p>
  );
}

export function Chat(props: {
  sessionId: string | null;
  onCreated: (id: string) => void;
  /** The session list changed: a message was sent, a title renamed. */
  onChanged: () => void;
  /** A turn ended. */
  onSettled: () => void;
}) {
  const { sessionId } = props;
  // The poller folds pages into `state.current.t` and shows each result, tagged with its
  // conversation: the render that opens another one shows nothing of the last.
  const [view, setView] = useState<{ of: string | null; t: Transcript }>({ of: sessionId, t: empty });
  const t = view.of === sessionId ? view.t : empty;
  const [problem, setProblemState] = useState<Problem | null>(null);
  const setProblem = (text: string | null) => setProblemState(text === null ? null : { text });
  const [draft, setDraft] = useState('');
  const composer = useRef<HTMLTextAreaElement>(null);
  const [sending, setSending] = useState(false);
  const state = useRef({ t, failures: 0, busySince: 0, timer: 0 as number | undefined, poll: () => {} });
  // Told when a turn ends (the sidebar reads its list again only if its last read failed).
  const settled = useRef(props.onSettled);
  settled.current = props.onSettled;
  // Told when the turn starts waiting for the member: the sidebar marks the conversation.
  const changed = useRef(props.onChanged);
  changed.current = props.onChanged;

  // The poller: one transcript request at a time, scheduled after each answer.
  useEffect(() => {
    setView({ of: sessionId, t: empty });
    setProblem(null);
    if (!sessionId) return;
    const s = state.current;
    s.t = empty;
    s.failures = 0;
    let stopped = false;
    let inFlight = false;
    // A poll asked for while one is on its way (after a send, say) runs when it answers: the
    // answer on its way may have been read before the change.
    let again = false;
    const schedule = () => {
      if (stopped) return;
      const now = Date.now();
      // A turn waiting for the member has no run to watch: polled as an idle one (their own
      // answer polls at once; another device's shows within the idle interval).
      const isBusy = busy(s.t) && !awaitingMember(s.t);
      if (!isBusy) s.busySince = 0;
      else if (s.busySince === 0) s.busySince = now;
      const delay = nextDelay({
        busy: isBusy,
        hasMore: s.t.hasMore,
        hidden: document.hidden,
        failures: s.failures,
        busyFor: isBusy ? now - s.busySince : 0,
      });
      clearTimeout(s.timer);
      s.timer = window.setTimeout(poll, delay);
    };
    const poll = async () => {
      if (stopped) return;
      if (inFlight) {
        again = true;
        return;
      }
      inFlight = true;
      try {
        const page = await api.transcript(sessionId, s.t.cursor);
        if (stopped) return;
        const wasBusy = busy(s.t);
        const wasWaiting = awaitingMember(s.t);
        s.t = applyPage(s.t, page);
        setView({ of: sessionId, t: s.t });
        if (wasBusy && !busy(s.t)) settled.current();
        if (!wasWaiting && awaitingMember(s.t)) changed.current();
        s.failures = 0;
        setProblem(null);
      } catch (e) {
        if (stopped) return;
        s.failures += 1;
        const f = e instanceof ApiFailure ? e : new ApiFailure(0, 'network', String(e));
        if (!f.transient) {
          stopped = true;
          setProblem(f.status === 404 ? 'This conversation no longer exists.' : explain(f));
          return;
        }
        setProblem(explain(f));
      } finally {
        inFlight = false;
      }
      if (again) {
        again = false;
        void poll();
        return;
      }
      schedule();
    };
    s.poll = () => {
      clearTimeout(s.timer);
      void poll();
    };
    const onVisible = () => {
      if (!document.hidden) s.poll();
    };
    document.addEventListener('visibilitychange', onVisible);
    window.addEventListener('focus', onVisible);
    window.addEventListener('online', onVisible);
    void poll();
    return () => {
      stopped = true;
      clearTimeout(s.timer);
      document.removeEventListener('visibilitychange', onVisible);
      window.removeEventListener('focus', onVisible);
      window.removeEventListener('online', onVisible);
    };
  }, [sessionId]);

  // A new chat opened at load is ready for typing.
  useEffect(() => {
    if (!sessionId) composer.current?.focus();
  }, []);

  const send = async (text: string) => {
    if (!text.trim() || sending) return;
    setSending(true);
    const creating = !sessionId;
    try {
      if (sessionId) {
        await api.message(sessionId, text);
        state.current.poll();
      } else {
        const created = await api.create(text);
        props.onCreated(created.id);
      }
      // Whatever was typed while this was on its way stays in the composer.
      setDraft((d) => (d === text ? '' : d));
      setProblem(null);
      props.onChanged();
    } catch (e) {
      setProblemState(problemOf(e, creating));
    } finally {
      setSending(false);
      composer.current?.focus();
    }
  };

  const stop = async () => {
    if (!sessionId) return;
    composer.current?.focus();
    try {
      await api.cancel(sessionId);
      state.current.poll();
    } catch (e) {
      setProblem(e instanceof ApiFailure ? explain(e) : String(e));
    }
  };

  const running = busy(t);
  // Escape stops the turn wherever focus is (a dialog or the drawer takes it first). The
  // listener stays for the page's life and asks this render whether a turn runs, so Escape
  // works from the moment the Stop button shows, not an effect later.
  const escape = useRef<(() => void) | null>(null);
  escape.current = running ? () => void stop() : null;
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.key !== 'Escape' || e.defaultPrevented || e.isComposing || !escape.current) return;
      e.preventDefault();
      escape.current();
    };
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, []);

  // The member's answer to a call: shown at once (the poll past its event does not read the
  // rewritten state), then the log is read for the resumed turn.
  const answer = async (toolUseId: string, decision: Decision) => {
    if (!sessionId) return;
    const done = await api.approve(sessionId, toolUseId, decision);
    const s = state.current;
    s.t = answered(s.t, toolUseId, done.state as ApprovalState);
    setView({ of: sessionId, t: s.t });
    s.poll();
    props.onChanged();
  };

  const rename = async (title: string) => {
    if (!sessionId) return;
    await api.rename(sessionId, title);
    state.current.poll();
    props.onChanged();
  };
  return (
    <section class="chat" aria-label="Conversation">
      {sessionId ? (
        <Conversation key={sessionId} transcript={t} retry={running || sending ? undefined : (q) => void send(q)} rename={rename} answer={answer} />
      ) : (
        <div class="empty">
          <h2>Ask your organisation's knowledge</h2>
          <ul class="examples">
            {EXAMPLES.map((q) => (
              <li key={q}>
                <button type="button" onClick={() => void send(q)}>
                  {q}
                </button>
              </li>
            ))}
          </ul>
        </div>
      )}
      {problem && <ProblemLine problem={problem} />}
      <Unconnected sessionId={sessionId} />
      <form
        class="composer"
        onSubmit={(e) => {
          e.preventDefault();
          void send(draft);
        }}
      >
        <label for="message" class="visually-hidden">
          Message
        </label>
        <textarea
          id="message"
          ref={composer}
          rows={2}
          placeholder={running ? 'Ask a follow-up; it is answered after the current one' : 'Ask a question'}
          value={draft}
          onInput={(e) => setDraft((e.target as HTMLTextAreaElement).value)}
          onKeyDown={(e) => {
            if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
              e.preventDefault();
              void send(draft);
            }
          }}
        />
        {running && (
          <button type="button" class="stop" onClick={() => void stop()}>
            Stop
          </button>
        )}
        <button type="submit" disabled={sending || !draft.trim()}>
          Send
        </button>
      </form>
    </section>
  );
}
