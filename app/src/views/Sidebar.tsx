// The sessions of the active organisation, newest first: open, start a new chat, delete (with
// confirmation); the organisation switcher, the member's connections, the admin area for admins,
// and sign-out.
import { ApiFailure, api, explain } from '../api';
import type { Account, SessionSummary } from '../wire';

export function Sidebar(props: {
  account: Account;
  sessions: SessionSummary[];
  current: string | null;
  open: (id: string | null) => void;
  go: (path: string) => void;
  changed: () => void;
  problem: (text: string) => void;
}) {
  const { account, sessions, current } = props;
  const remove = async (s: SessionSummary) => {
    if (!confirm(`Delete “${s.title}”? This cannot be undone.`)) return;
    try {
      await api.remove(s.id);
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
    <aside class="sidebar">
      <button type="button" class="new" onClick={() => props.open(null)}>
        New chat
      </button>
      {account.orgs.length > 1 && (
        <>
          <label for="org">Organisation</label>
          <select id="org" value={account.org.id} onChange={(e) => void switchOrg((e.target as HTMLSelectElement).value)}>
            {account.orgs.map((o) => (
              <option key={o.id} value={o.id}>
                {o.name}
              </option>
            ))}
          </select>
        </>
      )}
      <nav class="conversations" aria-label="Conversations">
        <ul class="sessions">
          {sessions.map((s) => (
            <li key={s.id} class={s.id === current ? 'current' : ''}>
              <a
                href={`/c/${encodeURIComponent(s.id)}`}
                aria-current={s.id === current ? 'page' : undefined}
                onClick={(e) => {
                  e.preventDefault();
                  props.open(s.id);
                }}
              >
                {s.title}
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
        <span>{account.user.displayName ?? account.user.userName ?? account.user.id}</span>
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
