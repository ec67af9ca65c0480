// The admin area, for the organisation's admins: one page per concern under /admin/<section>,
// reached from the sidebar. Usage and the audit log are here; the other sections have files
// of their own. The service decides who is an admin: a viewer who comes here is told so.
import { useEffect, useState } from 'preact/hooks';

import { AUDIT_ACTIONS, type AuditEntry, type Usage, admin } from '../../admin';
import { ACTIONS, type Named, readable } from '../../audit';
import type { Account } from '../../wire';
import { Integrations } from './Integrations';
import { Members } from './Members';
import { MemorySetting } from './MemorySetting';
import { ScimToken, SingleSignOn } from './SignOn';
import { NoticeLine, useNotice, when } from './common';

export const SECTIONS = [
  ['members', 'Members'],
  ['sso', 'Single sign-on'],
  ['scim', 'SCIM'],
  ['integrations', 'Integrations'],
  ['usage', 'Usage'],
  ['audit', 'Audit log'],
] as const;

export type Section = (typeof SECTIONS)[number][0];

export function sectionFromPath(path: string): Section | null {
  const m = path.match(/^\/admin(?:\/([a-z]+))?\/?$/);
  if (!m) return null;
  const found = SECTIONS.find(([id]) => id === (m[1] ?? 'members'));
  return found ? found[0] : null;
}

function UsagePage() {
  const [usage, setUsage] = useState<Usage | null>(null);
  const [quota, setQuota] = useState('');
  const [cap, setCap] = useState('');
  const { notice, busy, run } = useNotice();
  const show = (u: Usage) => {
    setUsage(u);
    setQuota(u.monthlyQueryQuota?.toString() ?? '');
    setCap(u.costCapUsd?.toString() ?? '');
  };
  useEffect(() => void run(async () => show(await admin.usage())), []);
  const save = () =>
    run(async () => {
      show(await admin.setLimits(quota.trim() ? Number(quota) : null, cap.trim() ? Number(cap) : null));
      return 'The limits are saved; they apply from the next question.';
    });
  return (
    <section aria-labelledby="usage-title">
      <h2 id="usage-title">Usage</h2>
      {usage && (
        <dl class="usage">
          <dt>Month</dt>
          <dd>{usage.month}</dd>
          <dt>Questions</dt>
          <dd>
            {usage.queries}
            {usage.monthlyQueryQuota != null ? ` of ${usage.monthlyQueryQuota}` : ' (no quota)'}
          </dd>
          <dt>Spend</dt>
          <dd>
            ${usage.monthToDateUsd.toFixed(2)}
            {usage.costCapUsd != null ? ` of $${usage.costCapUsd.toFixed(2)}` : ' (no cap)'}
          </dd>
        </dl>
      )}
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void save();
        }}
      >
        <div class="field">
          <label for="quota">Monthly question quota</label>
          <input id="quota" type="number" min="0" step="1" value={quota} onInput={(e) => setQuota((e.target as HTMLInputElement).value)} aria-describedby="limits-hint" />
        </div>
        <div class="field">
          <label for="cap">Monthly cost cap (US dollars)</label>
          <input id="cap" type="number" min="0" step="0.01" value={cap} onInput={(e) => setCap((e.target as HTMLInputElement).value)} aria-describedby="limits-hint" />
        </div>
        <p id="limits-hint" class="hint">
          Leave a limit empty for none.
        </p>
        <button type="submit" disabled={busy}>
          Save limits
        </button>
      </form>
      <NoticeLine notice={notice} />
    </section>
  );
}

/** A name, with its id in small type beneath when there is one. */
function NamedCell({ named }: { named: Named }) {
  return (
    <>
      {named.name}
      {named.id && <span class="id">{named.id}</span>}
    </>
  );
}

function AuditPage() {
  const [entries, setEntries] = useState<AuditEntry[]>([]);
  const [next, setNext] = useState<string | null>(null);
  const [action, setAction] = useState('');
  const { notice, busy, run } = useNotice();
  const load = (filter: string, before?: string) =>
    run(async () => {
      const page = await admin.audit({ action: filter || undefined, before });
      setEntries((shown) => (before ? [...shown, ...page.entries] : page.entries));
      setNext(page.next ?? null);
    });
  useEffect(() => void load(action), [action]);
  return (
    <section aria-labelledby="audit-title">
      <h2 id="audit-title">Audit log</h2>
      <div class="row">
        <label for="audit-action">Action</label>
        <select id="audit-action" value={action} onChange={(e) => setAction((e.target as HTMLSelectElement).value)}>
          <option value="">All actions</option>
          {AUDIT_ACTIONS.map((a) => (
            <option key={a} value={a}>
              {ACTIONS[a] ?? a}
            </option>
          ))}
        </select>
      </div>
      <NoticeLine notice={notice} />
      <table class="stack">
        <caption class="visually-hidden">Changes to the organisation, newest first</caption>
        <thead>
          <tr>
            <th scope="col">When</th>
            <th scope="col">Action</th>
            <th scope="col">Target</th>
            <th scope="col">By</th>
          </tr>
        </thead>
        <tbody>
          {entries.map((e, i) => {
            const r = readable(e);
            return (
              <tr key={`${e.at}-${i}`}>
                <td data-label="When">{when(e.at)}</td>
                <td data-label="Action">
                  {r.what}
                  {r.change && <span class="change">{r.change}</span>}
                </td>
                <td data-label="Target">
                  <NamedCell named={r.target} />
                </td>
                <td data-label="By">
                  <NamedCell named={r.by} />
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
      {entries.length === 0 && !busy && <p class="hint">Nothing recorded.</p>}
      {next && (
        <button type="button" disabled={busy} onClick={() => void load(action, next)}>
          Older entries
        </button>
      )}
    </section>
  );
}

export function Admin(props: { account: Account; section: Section; go: (path: string) => void }) {
  const { account, section } = props;
  useEffect(() => {
    document.title = `${SECTIONS.find(([id]) => id === section)?.[1]} · Admin`;
    return () => {
      document.title = 'Knowledge';
    };
  }, [section]);
  if (account.org.role !== 'admin') {
    return (
      <main class="admin">
        <h1>Admin</h1>
        <p role="alert">Only an admin of {account.org.name} can see this page.</p>
        <a href="/">Back to the chat</a>
      </main>
    );
  }
  return (
    <div class="layout admin-layout">
      <nav class="sidebar" aria-label="Admin">
        <a
          href="/"
          onClick={(e) => {
            e.preventDefault();
            props.go('/');
          }}
        >
          ← Back to the chat
        </a>
        <ul class="sections">
          {SECTIONS.map(([id, label]) => (
            <li key={id}>
              <a
                href={`/admin/${id}`}
                aria-current={id === section ? 'page' : undefined}
                onClick={(e) => {
                  e.preventDefault();
                  props.go(`/admin/${id}`);
                }}
              >
                {label}
              </a>
            </li>
          ))}
        </ul>
      </nav>
      <main class="admin">
        <h1>Admin of {account.org.name}</h1>
        {section === 'members' && <Members me={account.user.id} />}
        {section === 'sso' && <SingleSignOn />}
        {section === 'scim' && <ScimToken />}
        {section === 'integrations' && <Integrations me={account.user.id} />}
        {section === 'usage' && (
          <>
            <UsagePage />
            <MemorySetting />
          </>
        )}
        {section === 'audit' && <AuditPage />}
      </main>
    </div>
  );
}
