// The member's connections to the organisation's OAuth integrations (/connections): whether
// each is connected, as whose account, since when, and whether it needs connecting again.
// Connect and Reconnect send the browser to the integration's own sign-in page, which sends it
// back here; Disconnect (confirmed) deletes the tokens and revokes them at the server. Below,
// the tools the member always allows, each to take back.
import { useEffect, useState } from 'preact/hooks';

import { api } from '../api';
import { hostOf } from '../url';
import type { Connection } from '../wire';
import { NoticeLine, type Notice, useNotice } from './admin/common';
import { AllowedTools } from './AllowedTools';

/** Why a connection needs connecting again, in words. */
export const REASONS: Record<string, string> = {
  refresh_refused: 'the service no longer accepts the access you gave',
  refresh_interrupted: 'renewing the access was interrupted',
  expired: 'the access expired',
  token_rejected: 'the service refused the access',
};

/** How the last connect went, from the URL the callback sent the browser to. */
function arrival(): Notice {
  const q = new URLSearchParams(location.search);
  const connected = q.get('connected');
  if (connected && /^[a-z][a-z0-9-]{0,23}$/.test(connected)) return { kind: 'done', text: `${connected} is connected.` };
  if (q.get('connect_error')) return { kind: 'failed', text: 'Connecting did not complete; start it again.' };
  return null;
}

function since(at?: string | null): string {
  return at ? new Date(at).toLocaleDateString() : '';
}

function state(c: Connection): string {
  if (c.state === 'connected') return c.kind === 'organisation' ? `The organisation's account, since ${since(c.connectedAt)}` : `Connected since ${since(c.connectedAt)}`;
  if (c.state === 'needs_reconnect') return `Needs connecting again: ${REASONS[c.reason ?? ''] ?? 'the access stopped working'}`;
  return c.kind === 'organisation' ? 'Not connected yet: an admin connects it' : 'Not connected';
}

export function Connections() {
  const [list, setList] = useState<Connection[] | null>(null);
  const { notice, busy, run } = useNotice();
  const [arrived] = useState<Notice>(arrival);

  const reload = async () => setList((await api.connections()).connections);
  useEffect(() => {
    void run(reload);
    // The outcome is shown once; a reload of the page does not repeat it.
    if (location.search) history.replaceState(null, '', '/connections');
  }, []);

  const connect = (c: Connection) =>
    run(async () => {
      const started = await api.connect(c.integration);
      location.assign(started.authorizationUrl);
    });
  const disconnect = (c: Connection) => {
    if (!confirm(`Disconnect ${c.integration}? The assistant stops using it as you.`)) return;
    void run(async () => {
      await api.disconnect(c.integration);
      await reload();
      return `${c.integration} is disconnected.`;
    });
  };

  return (
    <section class="connections" aria-labelledby="connections-title">
      <h1 id="connections-title">Connections</h1>
      <p class="hint">The services the assistant reaches as you. Connecting opens the service's own sign-in page; the service never sees your password.</p>
      <NoticeLine notice={notice ?? arrived} />
      {list && list.length === 0 && <p class="hint">Your organisation has no integration to connect.</p>}
      {list && list.length > 0 && (
        <table class="stack">
          <caption class="visually-hidden">Your connections</caption>
          <thead>
            <tr>
              <th scope="col">Integration</th>
              <th scope="col">Account at</th>
              <th scope="col">State</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {list.map((c) => (
              <tr key={c.integration} data-state={c.state}>
                <th scope="row">{c.integration}</th>
                <td data-label="Account at">{hostOf(c.issuer)}</td>
                <td data-label="State">{state(c)}</td>
                <td class="actions">
                  {c.kind === 'member' && c.state !== 'connected' && (
                    <button type="button" disabled={busy} onClick={() => void connect(c)} aria-label={`${c.state === 'needs_reconnect' ? 'Reconnect' : 'Connect'}: ${c.integration}`}>
                      {c.state === 'needs_reconnect' ? 'Reconnect' : 'Connect'}
                    </button>
                  )}
                  {c.kind === 'member' && c.state !== 'not_connected' && (
                    <button type="button" class="danger" disabled={busy} onClick={() => disconnect(c)} aria-label={`Disconnect: ${c.integration}`}>
                      Disconnect
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {list === null && !notice && <p class="hint">Loading…</p>}
      <AllowedTools />
    </section>
  );
}
