// What the assistant remembers about the member in this organisation (/memory): each note with
// when it was saved and a link to the conversation it came from; forgetting one, or all after
// confirmation; the member's own switch; an export of everything as JSON. No admin sees this.
import { useEffect, useState } from 'preact/hooks';

import { api } from '../api';
import type { MemoryPage } from '../wire';
import { NoticeLine, useNotice, when } from './admin/common';

export function Memory(props: { open: (session: string) => void }) {
  const [page, setPage] = useState<MemoryPage | null>(null);
  const { notice, busy, run } = useNotice();
  const reload = async () => setPage(await api.memory());
  useEffect(() => void run(reload), []);

  const forget = (id: string, text: string) =>
    run(async () => {
      await api.forgetNote(id);
      await reload();
      return `Forgotten: “${text}”.`;
    });
  const forgetAll = () => {
    if (!confirm('Forget everything the assistant remembers about you here? This cannot be undone.')) return;
    void run(async () => {
      const { forgotten } = await api.forgetAllNotes();
      await reload();
      return forgotten === 1 ? 'One note was forgotten.' : `${forgotten} notes were forgotten.`;
    });
  };
  // The switch moves at once; the page read back after a failure shows the stored state.
  const toggle = (enabled: boolean) =>
    run(async () => {
      setPage((p) => p && { ...p, enabled });
      setPage(await api.switchMemory(enabled).catch(async (e) => {
        await reload();
        throw e;
      }));
      return enabled ? 'Memory is on.' : 'Memory is off: nothing is saved or used until you switch it on.';
    });

  return (
    <section class="memory" aria-labelledby="memory-title">
      <h1 id="memory-title">Memory</h1>
      <p class="hint">
        Short notes the assistant keeps about you in this organisation, from what you told it, and uses in later
        conversations. Only you see them.
      </p>
      {page && !page.organisationEnabled && (
        <p class="problem" role="status">
          Your organisation has switched memory off: nothing is saved or used.
        </p>
      )}
      {page && (
        <div class="field switch">
          <input id="memory-on" type="checkbox" checked={page.enabled} disabled={busy} onChange={(e) => void toggle((e.target as HTMLInputElement).checked)} />
          <label for="memory-on">Let the assistant remember things about me</label>
        </div>
      )}
      <NoticeLine notice={notice} />
      {page && page.notes.length === 0 && <p class="hint">Nothing is remembered.</p>}
      {page && page.notes.length > 0 && (
        <>
          <table class="stack">
            <caption class="visually-hidden">What the assistant remembers</caption>
            <thead>
              <tr>
                <th scope="col">Note</th>
                <th scope="col">Saved</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {page.notes.map((n) => (
                <tr key={n.id}>
                  <td data-label="Note">{n.text}</td>
                  <td data-label="Saved">
                    {when(n.savedAt)}
                    {n.sessionId && (
                      <a
                        class="from"
                        href={`/c/${encodeURIComponent(n.sessionId)}`}
                        onClick={(e) => {
                          e.preventDefault();
                          props.open(n.sessionId!);
                        }}
                      >
                        in this conversation
                      </a>
                    )}
                  </td>
                  <td class="actions">
                    <button type="button" class="danger" disabled={busy} onClick={() => void forget(n.id, n.text)} aria-label={`Forget: ${n.text}`}>
                      Forget
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          <p class="hint">
            {page.notes.length} of {page.maxNotes} notes.
          </p>
        </>
      )}
      {page && (
        <div class="row">
          <a class="button" href="/api/memory/export" download="memory.json">
            Export as JSON
          </a>
          {page.notes.length > 0 && (
            <button type="button" class="danger" disabled={busy} onClick={forgetAll}>
              Forget everything
            </button>
          )}
        </div>
      )}
      {page === null && !notice && <p class="hint">Loading…</p>}
    </section>
  );
}
