// Integrations (remote MCP servers): connect (an OAuth-protected one by its URL alone, showing
// what discovery found and the redirect URI), test by listing the tools (and set whether each
// runs, asks the member or is blocked), see who holds a
// per-user credential (never the credential) and store one, connect the organisation's own
// account to an OAuth one, disconnect (confirmed).
import { useEffect, useState } from 'preact/hooks';

import { type AdminMember, type AdminTool, type Integration, admin, memberName } from '../../admin';
import { hostOf } from '../../url';
import { NoticeLine, type Notice, useNotice } from './common';
import { ToolPolicies } from './ToolPolicies';

function isOAuth(auth: Integration['auth']): boolean {
  return auth === 'oauth_member' || auth === 'oauth_organisation';
}

const REGISTRATIONS: Record<string, string> = {
  dynamic: 'registered dynamically',
  pre_registered: 'a client registered by hand',
  metadata_document: 'a client metadata document',
};

/** Whose credentials an integration uses, and for OAuth where and how the client is registered. */
function credentials(i: Integration): string {
  if (i.auth === 'per_user') return "Each member's own token";
  if (!i.oauth) return 'None';
  const at = hostOf(i.oauth.issuer);
  const whose = i.auth === 'oauth_member' ? "Each member's own account" : "The organisation's account";
  return `${whose} at ${at} (${REGISTRATIONS[i.oauth.registration] ?? i.oauth.registration})`;
}

/** How the organisation's connect went, from the URL the callback sent the browser to. */
function arrival(): Notice {
  const connected = new URLSearchParams(location.search).get('connected');
  return connected && /^[a-z][a-z0-9-]{0,23}$/.test(connected) ? { kind: 'done', text: `The organisation's account is connected to ${connected}.` } : null;
}

export function Integrations({ me }: { me: string }) {
  // `null` until first read: the empty list is said only once it is known to be empty.
  const [list, setList] = useState<Integration[] | null>(null);
  const [name, setName] = useState('');
  const [url, setUrl] = useState('');
  const [auth, setAuth] = useState<Integration['auth']>('none');
  const [clientId, setClientId] = useState('');
  const [clientSecret, setClientSecret] = useState('');
  const [arrived] = useState(arrival);
  const [tools, setTools] = useState<{ of: string; tools: AdminTool[] } | null>(null);
  const [holders, setHolders] = useState<{ of: string; members: AdminMember[] } | null>(null);
  const [credentialFor, setCredentialFor] = useState('');
  const [credentialUser, setCredentialUser] = useState(me);
  const [credential, setCredential] = useState('');
  const { notice, busy, run } = useNotice();

  const reload = async () => setList((await admin.integrations()).integrations);
  useEffect(() => void run(reload), []);

  const connect = () =>
    run(async () => {
      const client = isOAuth(auth) && clientId.trim() ? { clientId: clientId.trim(), clientSecret: clientSecret || undefined } : undefined;
      const i = await admin.connect(name.trim(), url.trim(), auth, client);
      await reload();
      setName('');
      setUrl('');
      setClientId('');
      setClientSecret('');
      return `${i.name} is connected.`;
    });
  const test = (i: Integration) =>
    run(async () => {
      const r = await admin.test(i.name);
      setTools({ of: i.name, tools: r.tools });
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
  const shown = list ?? [];
  const perUser = shown.filter((i) => i.auth === 'per_user');
  const oauth = shown.filter((i) => i.oauth);
  const connectAccount = (i: Integration) =>
    run(async () => {
      const started = await admin.connectOrganisation(i.name);
      location.assign(started.authorizationUrl);
    });
  const disconnectAccount = (i: Integration) => {
    if (!confirm(`Disconnect the organisation's account from ${i.name}? Members' questions stop using it.`)) return;
    void run(async () => {
      await admin.disconnectOrganisation(i.name);
      return `The organisation's account is disconnected from ${i.name}.`;
    });
  };
  const disconnect = (i: Integration) => {
    if (!confirm(`Disconnect ${i.name}? The agent stops using its tools.`)) return;
    void run(async () => {
      await admin.disconnect(i.name);
      // Its tools and their rules went with it.
      setTools((t) => (t?.of === i.name ? null : t));
      await reload();
      return `${i.name} is disconnected.`;
    });
  };

  return (
    <section aria-labelledby="integrations-title">
      <h2 id="integrations-title">Integrations</h2>
      <table class="stack">
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
          {shown.map((i) => (
            <tr key={i.name}>
              <th scope="row">{i.name}</th>
              <td class="url" data-label="URL">{i.url}</td>
              <td data-label="Credentials">{credentials(i)}</td>
              <td class="actions">
                <button type="button" disabled={busy} onClick={() => void test(i)} aria-label={`Test: ${i.name}`}>
                  Test
                </button>
                {i.auth === 'per_user' && (
                  <button type="button" disabled={busy} onClick={() => void showHolders(i)} aria-label={`Holders: ${i.name}`}>
                    Holders
                  </button>
                )}
                {i.auth === 'oauth_organisation' && (
                  <>
                    <button type="button" disabled={busy} onClick={() => void connectAccount(i)} aria-label={`Connect the organisation's account: ${i.name}`}>
                      Connect account
                    </button>
                    <button type="button" disabled={busy} onClick={() => disconnectAccount(i)} aria-label={`Disconnect the organisation's account: ${i.name}`}>
                      Disconnect account
                    </button>
                  </>
                )}
                <button type="button" class="danger" disabled={busy} onClick={() => disconnect(i)} aria-label={`Disconnect: ${i.name}`}>
                  Disconnect
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {list === null && !notice && <p class="hint">Loading…</p>}
      {list?.length === 0 && <p class="hint">No integration is connected.</p>}
      <NoticeLine notice={notice ?? arrived} />
      {oauth.length > 0 && (
        <div>
          <h3>Redirect URIs</h3>
          <p class="hint">Register these at the authorization server when you register a client there by hand.</p>
          <dl>
            {oauth.map((i) => (
              <div key={i.name}>
                <dt>{i.name}</dt>
                <dd>
                  <code>{i.oauth!.redirectUri}</code>
                </dd>
              </div>
            ))}
          </dl>
        </div>
      )}
      {tools && <ToolPolicies key={tools.of + tools.tools.length} integration={tools.of} tools={tools.tools} />}
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
            <option value="oauth_member">Each member's own account (OAuth)</option>
            <option value="oauth_organisation">The organisation's account (OAuth)</option>
          </select>
        </div>
        {isOAuth(auth) && (
          <>
            <p class="hint">The server's sign-in is found from its URL, and the service registers itself there. Only if you registered a client by hand, enter it:</p>
            <div class="field">
              <label for="integration-client-id">Client id (optional)</label>
              <input id="integration-client-id" autocomplete="off" value={clientId} onInput={(e) => setClientId((e.target as HTMLInputElement).value)} />
            </div>
            <div class="field">
              <label for="integration-client-secret">Client secret (optional)</label>
              <input id="integration-client-secret" type="password" autocomplete="off" value={clientSecret} onInput={(e) => setClientSecret((e.target as HTMLInputElement).value)} />
            </div>
          </>
        )}
        <button type="submit" disabled={busy}>
          Connect
        </button>
      </form>
    </section>
  );
}
