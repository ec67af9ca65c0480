// The sessions of the active organisation, newest first: open (the focus goes to the message box),
// start a new chat, search the organisation's documents, find a conversation by title, delete (with confirmation; focus moves to the conversation that
// takes its place); the organisation switcher, the member's connections, memory and usage, the
// admin area for admins, and sign-out.
import { useEffect, useRef, useState } from 'preact/hooks';

import { ApiFailure, api, explain } from '../api';
import { searchHref } from '../routes';
import { listedTitle } from '../transcript';
import type { Account, SessionSummary } from '../wire';

export function Sidebar(props: {
  account: Account;
  sessions: SessionSummary[];
  current: string | null;
  /** Opens a conversation (null: a new chat); `focus` puts the focus in its message box. */
  open: (id: string | null, focus?: boolean) => void;
  go: (path: string) => void;
  changed: () => void;
  problem: (text: string) => void;
}) {
  const { account, current } = props;
  const name = account.user.displayName ?? account.user.userName ?? account.user.id;
  const [query, setQuery] = useState('');
  const [words, setWords] = useState('');
  const [found, setFound] = useState<{ sessions: SessionSummary[]; complete: boolean } | null>(null);
  const sessions = found?.sessions ?? props.sessions;
  // After a delete, the conversation now in its place (or New chat) takes the focus.
  const focusAfter = useRef<string | null | undefined>(undefined);
  const list = useRef<HTMLUListElement>(null);
  const newChat = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    const id = focusAfter.current;
    if (id === undefined) return;
    const link = id && list.current?.querySelector<HTMLAnchorElement>(`a[data-id="${CSS.escape(id)}"]`);
    focusAfter.current = undefined;
    (link || newChat.current)?.focus();
  }, [sessions]);

  // Find: the member's conversations whose titles hold every word typed, asked of the service a
  // quarter of a second after typing stops.
  useEffect(() => {
    const words = query.trim();
    if (!words) {
      setFound(null);
      return;
    }
    let stale = false;
    const timer = window.setTimeout(() => {
      api
        .find(words)
        .then((r) => !stale && setFound(r))
        .catch((e) => !stale && props.problem(e instanceof ApiFailure ? explain(e) : String(e)));
    }, 250);
    return () => {
      stale = true;
      clearTimeout(timer);
    };
  }, [query, props.sessions]);

  const remove = async (s: SessionSummary) => {
    if (!confirm(`Delete “${s.title}”? This cannot be undone.`)) return;
    const at = sessions.findIndex((x) => x.id === s.id);
    const neighbour = sessions[at + 1] ?? sessions[at - 1];
    try {
      await api.remove(s.id);
      focusAfter.current = neighbour?.id ?? null;
      if (s.id === current) props.open(null);
      props.changed();
    } catch (e) {
      props.problem(e instanceof ApiFailure ? explain(e) : String(e));
    }
  };
  const switchOrg = async (orgId: string) => {
    try {
      await api.switchOrg(orgId);
      location.assign('/');
    } catch (e) {
      props.problem(e instanceof ApiFailure ? explain(e) : String(e));
    }
  };
  return (
    <aside class="sidebar" id="sidebar">
      <button
        type="button"
        class="new"
        ref={newChat}
        onClick={() => props.open(null, true)}
      >
        New chat
      </button>
      {account.orgs.length > 1 && (
        <div class="org">
          <label for="org">Organisation</label>
          <select id="org" value={account.org.id} onChange={(e) => void switchOrg((e.target as HTMLSelectElement).value)}>
            {account.orgs.map((o) => (
              <option key={o.id} value={o.id}>
                {o.name}
              </option>
            ))}
          </select>
        </div>
      )}
      <form
        class="doc-search"
        role="search"
        aria-label="Documents"
        onSubmit={(e) => {
          e.preventDefault();
          if (words.trim()) props.go(searchHref(words.trim()));
        }}
      >
        <label for="doc-search" class="visually-hidden">
          Search documents
        </label>
        <input
          id="doc-search"
          type="search"
          placeholder="Search documents"
          maxLength={1000}
          value={words}
          onInput={(e) => setWords((e.target as HTMLInputElement).value)}
        />
        <button type="submit">Search</button>
      </form>
      <div class="find" role="search">
        <label for="find" class="visually-hidden">
          Find a conversation
        </label>
        <input id="find" type="search" placeholder="Find a conversation" value={query} onInput={(e) => setQuery((e.target as HTMLInputElement).value)} />
      </div>
      <nav class="conversations" aria-label="Conversations">
        {found && (
          <p class="hint" role="status">
            {found.sessions.length === 0 ? 'No conversation has these words in its title' : `${found.sessions.length} found`}
            {found.complete ? '.' : ' among your most recent conversations.'}
          </p>
        )}
        <ul class="sessions" ref={list}>
          {sessions.map((s) => (
            <li key={s.id} class={s.id === current ? 'current' : ''}>
              <a
                href={`/c/${encodeURIComponent(s.id)}`}
                data-id={s.id}
                aria-current={s.id === current ? 'page' : undefined}
                onClick={(e) => {
                  e.preventDefault();
                  props.open(s.id, true);
                }}
              >
                {listedTitle(s.title)}
                {s.awaitingApproval && (
                  <span class="badge waiting" title="Waiting for your approval">
                    <span aria-hidden="true">●</span>
                    <span class="visually-hidden"> (waiting for your approval)</span>
                  </span>
                )}
              </a>
              <button type="button" class="delete" aria-label={`Delete ${s.title}`} onClick={() => void remove(s)}>
                ×
              </button>
            </li>
          ))}
        </ul>
      </nav>
      <a
        href="/connections"
        class="connections-link"
        onClick={(e) => {
          e.preventDefault();
          props.go('/connections');
        }}
      >
        Connections
      </a>
      <a
        href="/memory"
        class="memory-link"
        onClick={(e) => {
          e.preventDefault();
          props.go('/memory');
        }}
      >
        Memory
      </a>
      <a
        href="/usage"
        class="usage-link"
        onClick={(e) => {
          e.preventDefault();
          props.go('/usage');
        }}
      >
        Usage
      </a>
      {account.org.role === 'admin' && (
        <a
          href="/admin"
          class="admin-link"
          onClick={(e) => {
            e.preventDefault();
            props.go('/admin/members');
          }}
        >
          Admin
        </a>
      )}
      <div class="me">
        <span class="name" title={name}>
          {name}
        </span>
        <button
          type="button"
          onClick={async () => {
            await api.logout().catch(() => undefined);
            location.assign('/');
          }}
        >
          Sign out
        </button>
      </div>
    </aside>
  );
}
