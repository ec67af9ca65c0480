// The audit log (/admin/audit): changes to the organisation, newest first, of one action when
// asked, people named as they were then, the organisation by its name; and a download of the
// log, of the days, the kind of change and who made it that the admin picks, as CSV or JSON
// Lines.
import { useEffect, useRef, useState } from 'preact/hooks';

import { AUDIT_ACTIONS, AUDIT_ACTORS, type AuditEntry, type AuditExport, admin, auditExportUrl } from '../../admin';
import { ACTIONS, type Named, readable } from '../../audit';
import type { OrgView } from '../../wire';
import { NoticeLine, useNotice, when } from './common';

/** A name, with its id in small type beneath when there is one. */
function NamedCell({ named }: { named: Named }) {
  return (
    <>
      {named.name}
      {named.id && <span class="id">{named.id}</span>}
    </>
  );
}

/** `org`: the organisation whose log it is, named in words where an entry names it by id. */
export function AuditPage({ org }: { org: OrgView }) {
  const [entries, setEntries] = useState<AuditEntry[]>([]);
  const [next, setNext] = useState<string | null>(null);
  const [action, setAction] = useState('');
  const { notice, busy, run } = useNotice();
  // An answer for a filter no longer chosen is dropped: it never lands under another one.
  const chosen = useRef(action);
  chosen.current = action;
  const load = (filter: string, before?: string) =>
    run(async () => {
      const page = await admin.audit({ action: filter || undefined, before });
      if (filter !== chosen.current) return;
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
          <ActionOptions />
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
            const r = readable(e, org);
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
      <AuditDownload />
    </section>
  );
}

/** Each audit action as an option, in words. */
function ActionOptions() {
  return (
    <>
      {AUDIT_ACTIONS.map((a) => (
        <option key={a} value={a}>
          {ACTIONS[a] ?? a}
        </option>
      ))}
    </>
  );
}

const FORMATS = { csv: 'CSV', jsonl: 'JSON Lines' } as const;

/** The download's filter, read as the admin sets it; the link carries it (empty fields left out). */
function AuditDownload() {
  const [filter, setFilter] = useState<AuditExport>({ format: 'csv' });
  const set = (key: keyof AuditExport) => (e: Event) =>
    setFilter((f) => ({ ...f, [key]: (e.target as HTMLInputElement | HTMLSelectElement).value }));
  return (
    <form aria-labelledby="audit-export-title" onSubmit={(e) => e.preventDefault()}>
      <h3 id="audit-export-title">Download the log</h3>
      <div class="row">
        <div class="field">
          <label for="export-from">From</label>
          <input id="export-from" type="date" value={filter.from ?? ''} onInput={set('from')} />
        </div>
        <div class="field">
          <label for="export-to">To</label>
          <input id="export-to" type="date" value={filter.to ?? ''} onInput={set('to')} />
        </div>
      </div>
      <div class="field">
        <label for="export-kind">Kind of change</label>
        <select id="export-kind" value={filter.action ?? ''} onChange={set('action')}>
          <option value="">Every kind</option>
          <ActionOptions />
        </select>
      </div>
      <div class="field">
        <label for="export-by">Made by</label>
        <select id="export-by" value={filter.actor ?? ''} onChange={set('actor')}>
          <option value="">Anyone</option>
          {AUDIT_ACTORS.map(([actor, words]) => (
            <option key={actor} value={actor}>
              {words}
            </option>
          ))}
        </select>
      </div>
      <div class="field">
        <label for="export-format">Format</label>
        <select id="export-format" value={filter.format} onChange={set('format')}>
          {Object.entries(FORMATS).map(([format, words]) => (
            <option key={format} value={format}>
              {words}
            </option>
          ))}
        </select>
      </div>
      <p class="hint">Both days are included (UTC); leave a date empty to start at the first entry or end at the last.</p>
      <div>
        <a class="button" href={auditExportUrl(filter)} download={`audit.${filter.format}`}>
          Download the log ({FORMATS[filter.format]})
        </a>
      </div>
    </form>
  );
}
