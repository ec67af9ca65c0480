// Members of the organisation: searched by name, added by the name single sign-on matches,
// promoted, demoted and removed (confirmed), and given a monthly allowance of their own or the
// organisation's back. A removal ends the member's sign-in and running answers at once, as
// their provider's would.
import { useEffect, useRef, useState } from 'preact/hooks';

import { type AdminMember, admin, memberName } from '../../admin';
import { type Caps, capsWords } from '../../usage';
import { NoticeLine, useNotice, when } from './common';

export function Members({ me }: { me: string }) {
  const [members, setMembers] = useState<AdminMember[]>([]);
  const [next, setNext] = useState<string | null>(null);
  const [search, setSearch] = useState('');
  const [newName, setNewName] = useState('');
  const [newRole, setNewRole] = useState<'admin' | 'viewer'>('viewer');
  const { notice, busy, run } = useNotice();
  // The member whose allowance is being set, in their row. When the form closes (or the
  // member's own allowance is given back, and its button goes), their Set allowance button
  // takes the focus.
  const [editing, setEditing] = useState<string | null>(null);
  const table = useRef<HTMLTableElement>(null);
  const focusAfter = useRef<string | null>(null);
  const closeCaps = (userId: string) => {
    focusAfter.current = userId;
    setEditing(null);
  };
  useEffect(() => {
    const id = focusAfter.current;
    if (id === null || busy) return;
    focusAfter.current = null;
    table.current?.querySelector<HTMLButtonElement>(`button[data-caps="${CSS.escape(id)}"]`)?.focus();
  }, [members, editing, busy]);

  const load = (q: string, after?: string) =>
    run(async () => {
      const page = await admin.members({ q: q.trim() || undefined, after });
      setMembers((shown) => (after ? [...shown, ...page.members] : page.members));
      setNext(page.next ?? null);
    });
  useEffect(() => void load(''), []);

  const invite = () =>
    run(async () => {
      const m = await admin.invite(newName.trim(), newRole);
      setMembers((shown) => [...shown, m].sort((a, b) => (a.userId < b.userId ? -1 : 1)));
      setNewName('');
      return `${memberName(m)} was added as ${m.role === 'admin' ? 'an admin' : 'a viewer'}; they sign in with single sign-on.`;
    });
  const replace = (m: AdminMember) => setMembers((shown) => shown.map((s) => (s.userId === m.userId ? m : s)));
  const setRole = (m: AdminMember, role: 'admin' | 'viewer') =>
    run(async () => {
      replace(await admin.setRole(m.userId, role));
      return `${memberName(m)} is now ${role === 'admin' ? 'an admin' : 'a viewer'}.`;
    });
  const setCaps = (m: AdminMember, caps: Caps) =>
    run(async () => {
      replace(await admin.setCaps(m.userId, caps));
      closeCaps(m.userId);
      const words = capsWords(caps);
      return words === 'Unlimited' ? `${memberName(m)} now has no limit.` : `${memberName(m)} may now use ${words} a month.`;
    });
  const clearCaps = (m: AdminMember) =>
    run(async () => {
      replace(await admin.clearCaps(m.userId));
      closeCaps(m.userId);
      return `${memberName(m)} has the organisation's allowance again.`;
    });
  const remove = (m: AdminMember) => {
    const who = memberName(m);
    if (!confirm(`Remove ${who} from the organisation? Their sign-in and running answers end at once.`)) return;
    void run(async () => {
      const r = await admin.remove(m.userId);
      setMembers((shown) => shown.filter((s) => s.userId !== m.userId));
      return `${who} was removed${r.cancelledTurns ? `; ${r.cancelledTurns} running answer(s) stopped` : ''}.`;
    });
  };

  return (
    <section aria-labelledby="members-title">
      <h2 id="members-title">Members</h2>
      <form
        role="search"
        class="row"
        onSubmit={(e) => {
          e.preventDefault();
          void load(search);
        }}
      >
        <label for="member-search">Search members</label>
        <input id="member-search" type="search" value={search} onInput={(e) => setSearch((e.target as HTMLInputElement).value)} />
        <button type="submit" disabled={busy}>
          Search
        </button>
      </form>
      <NoticeLine notice={notice} />
      <table class="stack" ref={table}>
        <caption class="visually-hidden">Members, their roles and allowances</caption>
        <thead>
          <tr>
            <th scope="col">Member</th>
            <th scope="col">Role</th>
            <th scope="col">Since</th>
            <th scope="col">Allowance</th>
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
          {members.map((m) => (
            <tr key={m.userId}>
              <th scope="row">
                {memberName(m)}
                {m.userName && m.displayName && <div class="hint">{m.userName}</div>}
                {m.userId === me && <span class="badge"> (you)</span>}
              </th>
              <td data-label="Role">{m.role}</td>
              <td data-label="Since">{when(m.createdAt)}</td>
              <td data-label="Allowance">
                {m.caps ? (
                  <>
                    {capsWords(m.caps)}
                    <span class="change">their own</span>
                  </>
                ) : (
                  "The organisation's"
                )}
                {editing === m.userId && (
                  <CapsForm member={m} busy={busy} save={(caps) => void setCaps(m, caps)} cancel={() => closeCaps(m.userId)} />
                )}
              </td>
              <td class="actions">
                {m.role === 'viewer' ? (
                  <button type="button" disabled={busy} onClick={() => void setRole(m, 'admin')} aria-label={`Make admin: ${memberName(m)}`}>
                    Make admin
                  </button>
                ) : (
                  <button type="button" disabled={busy} onClick={() => void setRole(m, 'viewer')} aria-label={`Make viewer: ${memberName(m)}`}>
                    Make viewer
                  </button>
                )}
                <button
                  type="button"
                  disabled={busy}
                  data-caps={m.userId}
                  aria-expanded={editing === m.userId}
                  onClick={() => setEditing(editing === m.userId ? null : m.userId)}
                  aria-label={`Set allowance: ${memberName(m)}`}
                >
                  Set allowance
                </button>
                {m.caps && (
                  <button type="button" disabled={busy} onClick={() => void clearCaps(m)} aria-label={`Use the organisation's allowance: ${memberName(m)}`}>
                    Use the organisation's
                  </button>
                )}
                <button type="button" class="danger" disabled={busy} onClick={() => remove(m)} aria-label={`Remove: ${memberName(m)}`}>
                  Remove
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {members.length === 0 && !busy && <p class="hint">No members match.</p>}
      {next && (
        <button type="button" disabled={busy} onClick={() => void load(search, next)}>
          More members
        </button>
      )}
      <h3>Add a member</h3>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void invite();
        }}
      >
        <div class="field">
          <label for="new-member">userName (their e-mail at the identity provider)</label>
          <input id="new-member" required maxLength={256} value={newName} onInput={(e) => setNewName((e.target as HTMLInputElement).value)} />
        </div>
        <div class="field">
          <label for="new-role">Role</label>
          <select id="new-role" value={newRole} onChange={(e) => setNewRole((e.target as HTMLSelectElement).value as 'admin' | 'viewer')}>
            <option value="viewer">Viewer</option>
            <option value="admin">Admin</option>
          </select>
        </div>
        <button type="submit" disabled={busy}>
          Add member
        </button>
      </form>
    </section>
  );
}

/** A member's own allowance, in their row: questions and dollars a month, empty for no limit. */
function CapsForm(props: { member: AdminMember; busy: boolean; save: (caps: Caps) => void; cancel: () => void }) {
  const own = props.member.caps;
  const [questions, setQuestions] = useState(own?.questionCap?.toString() ?? '');
  const [usd, setUsd] = useState(own?.capUsd?.toString() ?? '');
  const first = useRef<HTMLInputElement>(null);
  useEffect(() => first.current?.focus(), []);
  const limit = (text: string) => (text.trim() ? Number(text) : null);
  return (
    <form
      class="caps"
      aria-label={`Allowance of ${memberName(props.member)}`}
      onKeyDown={(e) => e.key === 'Escape' && props.cancel()}
      onSubmit={(e) => {
        e.preventDefault();
        props.save({ questionCap: limit(questions), capUsd: limit(usd) });
      }}
    >
      <div class="field">
        <label for="caps-questions">Questions a month</label>
        <input id="caps-questions" ref={first} type="number" min="0" step="1" value={questions} onInput={(e) => setQuestions((e.target as HTMLInputElement).value)} aria-describedby="caps-hint" />
      </div>
      <div class="field">
        <label for="caps-usd">US dollars a month</label>
        <input id="caps-usd" type="number" min="0" step="0.01" value={usd} onInput={(e) => setUsd((e.target as HTMLInputElement).value)} aria-describedby="caps-hint" />
      </div>
      <p id="caps-hint" class="hint">
        Leave one empty for no limit. This takes the place of the organisation's allowance for them.
      </p>
      <div class="row">
        <button type="submit" disabled={props.busy}>
          Save allowance
        </button>
        <button type="button" onClick={props.cancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}
