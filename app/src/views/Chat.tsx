// One conversation: the transcript, polled by cursor while a turn runs (see polling.ts), and the
// composer. The first message of a new chat creates the session. Integrations the member must
// connect (or connect again) before the assistant can use them are named above the composer.
import { useEffect, useRef, useState } from 'preact/hooks';

import { ApiFailure, api, explain } from '../api';
import { nextDelay } from '../polling';
import { applyPage, busy, empty, type Transcript } from '../transcript';
import type { Connection } from '../wire';
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

const EXAMPLES = ['What is our refund policy?', 'How do I cancel a running answer?', 'Summarise the onboarding guide.'];

export function Chat(props: { sessionId: string | null; onCreated: (id: string) => void; onChanged: () => void }) {
  const { sessionId } = props;
  // The poller folds pages into `state.current.t` and shows each result.
  const [t, setT] = useState<Transcript>(empty);
  const [problem, setProblem] = useState<string | null>(null);
  const [draft, setDraft] = useState('');
  const [sending, setSending] = useState(false);
  const state = useRef({ t, failures: 0, busySince: 0, timer: 0 as number | undefined, poll: () => {} });
  // The sidebar's order follows the sessions' updates: told when a turn ends.
  const changed = useRef(props.onChanged);
  changed.current = props.onChanged;

  // The poller: one transcript request at a time, scheduled after each answer.
  useEffect(() => {
    setT(empty);
    setProblem(null);
    if (!sessionId) return;
    const s = state.current;
    s.t = empty;
    s.failures = 0;
    let stopped = false;
    let inFlight = false;
    const schedule = () => {
      if (stopped) return;
      const now = Date.now();
      const isBusy = busy(s.t);
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
      if (stopped || inFlight) return;
      inFlight = true;
      try {
        const page = await api.transcript(sessionId, s.t.cursor);
        if (stopped) return;
        const wasBusy = busy(s.t);
        s.t = applyPage(s.t, page);
        setT(s.t);
        if (wasBusy && !busy(s.t)) changed.current();
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

  const send = async (text: string) => {
    if (!text.trim() || sending) return;
    setSending(true);
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
      setProblem(e instanceof ApiFailure ? explain(e) : String(e));
    } finally {
      setSending(false);
    }
  };

  const stop = async () => {
    if (!sessionId) return;
    try {
      await api.cancel(sessionId);
      state.current.poll();
    } catch (e) {
      setProblem(e instanceof ApiFailure ? explain(e) : String(e));
    }
  };

  const running = busy(t);
  return (
    <section class="chat" aria-label="Conversation">
      {sessionId ? (
        <Conversation transcript={t} />
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
      {problem && (
        <p class="problem" role="alert">
          {problem}
        </p>
      )}
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
          rows={2}
          placeholder={running ? 'Ask a follow-up; it is answered after the current one' : 'Ask a question'}
          value={draft}
          onInput={(e) => setDraft((e.target as HTMLTextAreaElement).value)}
          onKeyDown={(e) => {
            if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
              e.preventDefault();
              void send(draft);
            } else if (e.key === 'Escape' && running) {
              e.preventDefault();
              void stop();
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
