// Integrations (remote MCP servers): connect, test by listing the tools, see who holds a
// per-user credential (never the credential) and store one, disconnect (confirmed).
import { useEffect, useState } from 'preact/hooks';

import { type AdminMember, type Integration, admin, memberName } from '../../admin';
import { NoticeLine, useNotice } from './common';

export function Integrations({ me }: { me: string }) {
  const [list, setList] = useState<Integration[]>([]);
  const [name, setName] = useState('');
  const [url, setUrl] = useState('');
  const [auth, setAuth] = useState<Integration['auth']>('none');
  const [tools, setTools] = useState<{ of: string; names: string[] } | null>(null);
  const [holders, setHolders] = useState<{ of: string; members: AdminMember[] } | null>(null);
  const [credentialFor, setCredentialFor] = useState('');
  const [credentialUser, setCredentialUser] = useState(me);
  const [credential, setCredential] = useState('');
  const { notice, busy, run } = useNotice();

  const reload = async () => setList((await admin.integrations()).integrations);
  useEffect(() => void run(reload), []);

  const connect = () =>
    run(async () => {
      const i = await admin.connect(name.trim(), url.trim(), auth);
      await reload();
      setName('');
      setUrl('');
      return `${i.name} is connected.`;
    });
  const test = (i: Integration) =>
    run(async () => {
      const r = await admin.test(i.name);
      setTools({ of: i.name, names: r.tools.map((t) => t.name) });
      return `${i.name} answered with ${r.tools.length} tool(s).`;
    });
  const showHolders = (i: Integration) =>
    run(async () => {
      setHolders({ of: i.name, members: (await admin.holders(i.name)).members });
    });
  const storeCredential = () =>
    run(async () => {
      await admin.storeCredential(credentialFor, credentialUser.trim(), credential);
      setCredential('');
      return `The token for ${credentialFor} is stored, sealed; it is not shown again.`;
    });
  const perUser = list.filter((i) => i.auth === 'per_user');
  const disconnect = (i: Integration) => {
    if (!confirm(`Disconnect ${i.name}? The agent stops using its tools.`)) return;
    void run(async () => {
      await admin.disconnect(i.name);
      await reload();
      return `${i.name} is disconnected.`;
    });
  };

  return (
    <section aria-labelledby="integrations-title">
      <h2 id="integrations-title">Integrations</h2>
      <table>
        <caption class="visually-hidden">Connected MCP servers</caption>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">URL</th>
            <th scope="col">Credentials</th>
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
          {list.map((i) => (
            <tr key={i.name}>
              <th scope="row">{i.name}</th>
              <td class="url">{i.url}</td>
              <td>{i.auth === 'per_user' ? "Each member's own" : 'None'}</td>
              <td class="actions">
                <button type="button" disabled={busy} onClick={() => void test(i)} aria-label={`Test: ${i.name}`}>
                  Test
                </button>
                {i.auth === 'per_user' && (
                  <button type="button" disabled={busy} onClick={() => void showHolders(i)} aria-label={`Holders: ${i.name}`}>
                    Holders
                  </button>
                )}
                <button type="button" class="danger" disabled={busy} onClick={() => disconnect(i)} aria-label={`Disconnect: ${i.name}`}>
                  Disconnect
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {list.length === 0 && <p class="hint">No integration is connected.</p>}
      <NoticeLine notice={notice} />
      {tools && (
        <div>
          <h3>Tools of {tools.of}</h3>
          <ul>
            {tools.names.map((t) => (
              <li key={t}>{t}</li>
            ))}
          </ul>
        </div>
      )}
      {holders && (
        <div>
          <h3>Members holding a credential for {holders.of}</h3>
          {holders.members.length === 0 ? (
            <p class="hint">Nobody yet.</p>
          ) : (
            <ul>
              {holders.members.map((m) => (
                <li key={m.userId}>{memberName(m)}</li>
              ))}
            </ul>
          )}
        </div>
      )}
      {perUser.length > 0 && (
        <>
          <h3>Store a member's token</h3>
          <form
            onSubmit={(e) => {
              e.preventDefault();
              void storeCredential();
            }}
          >
            <div class="field">
              <label for="credential-for">Integration</label>
              <select id="credential-for" required value={credentialFor} onChange={(e) => setCredentialFor((e.target as HTMLSelectElement).value)}>
                <option value="">Choose…</option>
                {perUser.map((i) => (
                  <option key={i.name} value={i.name}>
                    {i.name}
                  </option>
                ))}
              </select>
            </div>
            <div class="field">
              <label for="credential-user">Member's user id (yours by default)</label>
              <input id="credential-user" required value={credentialUser} onInput={(e) => setCredentialUser((e.target as HTMLInputElement).value)} />
            </div>
            <div class="field">
              <label for="credential-token">Token</label>
              <input id="credential-token" type="password" autocomplete="off" required value={credential} onInput={(e) => setCredential((e.target as HTMLInputElement).value)} />
            </div>
            <button type="submit" disabled={busy}>
              Store token
            </button>
          </form>
        </>
      )}
      <h3>Connect an MCP server</h3>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void connect();
        }}
      >
        <div class="field">
          <label for="integration-name">Name</label>
          <input id="integration-name" required pattern={'[a-z][a-z0-9\\-]{0,23}'} value={name} onInput={(e) => setName((e.target as HTMLInputElement).value)} aria-describedby="integration-name-hint" />
          <p id="integration-name-hint" class="hint">
            1 to 24 of a-z, 0-9 and -, from a letter: it prefixes the server's tools.
          </p>
        </div>
        <div class="field">
          <label for="integration-url">MCP endpoint URL</label>
          <input id="integration-url" type="url" required value={url} onInput={(e) => setUrl((e.target as HTMLInputElement).value)} />
        </div>
        <div class="field">
          <label for="integration-auth">Credentials</label>
          <select id="integration-auth" value={auth} onChange={(e) => setAuth((e.target as HTMLSelectElement).value as Integration['auth'])}>
            <option value="none">None</option>
            <option value="per_user">Each member's own token</option>
          </select>
        </div>
        <button type="submit" disabled={busy}>
          Connect
        </button>
      </form>
    </section>
  );
}
