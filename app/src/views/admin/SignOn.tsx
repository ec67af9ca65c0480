// Single sign-on and SCIM: the OpenID provider's settings (the client secret write-only), a dry
// test of an issuer, switching sign-on on and off (off confirmed), and the SCIM token, shown
// once in a read-only field to copy, its regeneration confirmed.
import { useEffect, useState } from 'preact/hooks';

import { type Scim, type Sso, admin } from '../../admin';
import { CopyField, NoticeLine, useNotice, when } from './common';

export function SingleSignOn() {
  const [sso, setSso] = useState<Sso | null>(null);
  const [issuer, setIssuer] = useState('');
  const [clientId, setClientId] = useState('');
  const [secret, setSecret] = useState('');
  const [claim, setClaim] = useState('');
  const [domains, setDomains] = useState('');
  const [justInTime, setJustInTime] = useState(false);
  // The issuer whose Test failed last: saving it anyway is allowed, and warned about.
  const [failedIssuer, setFailedIssuer] = useState<string | null>(null);
  const { notice, setNotice, busy, run } = useNotice();

  const show = (s: Sso) => {
    setSso(s);
    setIssuer(s.issuer ?? '');
    setClientId(s.clientId ?? '');
    setSecret('');
    setClaim(s.userNameClaim ?? '');
    setDomains(s.emailDomains.join(', '));
    setJustInTime(s.justInTime);
  };
  useEffect(() => void run(async () => show(await admin.sso())), []);

  const save = () =>
    run(async () => {
      const saved = await admin.setSso({
          issuer,
          clientId,
          clientSecret: secret || undefined,
          userNameClaim: claim || undefined,
          emailDomains: domains.split(/[\s,]+/).filter(Boolean),
          justInTime,
        });
      show(saved);
      const state = saved.enabled
        ? 'Single sign-on is saved, and on.'
        : 'Single sign-on is saved, and off: members sign in with it once you turn it on.';
      if (failedIssuer !== null && failedIssuer === issuer.trim()) {
        setNotice({ kind: 'failed', text: `${state} Warning: this issuer failed its test just now, so signing in through it will fail until it answers.` });
        return;
      }
      return state;
    });
  const test = () =>
    run(async () => {
      try {
        const r = await admin.testSso(issuer);
        setFailedIssuer(null);
        return `${r.issuer} answered with its discovery document and keys.`;
      } catch (e) {
        setFailedIssuer(issuer.trim());
        throw e;
      }
    });
  const toggle = (on: boolean) => {
    if (!on && !confirm('Turn single sign-on off? Members cannot sign in with it, and SCIM stops, until it is on again.')) return;
    void run(async () => {
      show(await admin.enableSso(on));
      return on ? 'Single sign-on is on.' : 'Single sign-on is off.';
    });
  };

  const field = (id: string, label: string, value: string, set: (v: string) => void, extra = {}) => (
    <div class="field">
      <label for={id}>{label}</label>
      <input id={id} value={value} onInput={(e) => set((e.target as HTMLInputElement).value)} {...extra} />
    </div>
  );
  return (
    <section aria-labelledby="sso-title">
      <h2 id="sso-title">Single sign-on</h2>
      {sso === null && !notice && <p class="hint">Loading…</p>}
      {sso && (
        <p>
          {!sso.configured
            ? 'Not configured yet.'
            : `Single sign-on is ${sso.enabled ? 'on' : 'off'}${sso.updatedAt ? `, last changed ${when(sso.updatedAt)}` : ''}.`}
        </p>
      )}
      {sso && <CopyField id="callback-url" label="Redirect URI to register at the provider" value={sso.callbackUrl} />}
      {sso?.configured && (
        <p class="hint">
          Each organisation has its own redirect URI. If your provider still has /api/auth/callback registered from
          before, register this one there: the shared address signs nobody in.
        </p>
      )}
      {/* The form waits for the stored settings: typed before they arrive, it would be overwritten. */}
      {sso && <form
        onSubmit={(e) => {
          e.preventDefault();
          void save();
        }}
      >
        {field('sso-issuer', 'Issuer URL', issuer, setIssuer, { type: 'url', required: true })}
        {field('sso-client', 'Client ID', clientId, setClientId, { required: true })}
        {field('sso-secret', 'Client secret', secret, setSecret, {
          type: 'password',
          autocomplete: 'off',
          'aria-describedby': 'sso-secret-hint',
        })}
        <p id="sso-secret-hint" class="hint">
          {sso?.clientSecretSet ? 'A secret is stored; it is never shown. Leave empty to keep it.' : 'Required.'}
        </p>
        {field('sso-claim', 'userName claim (default email)', claim, setClaim)}
        {field('sso-domains', 'E-mail domains (comma-separated)', domains, setDomains)}
        <div class="field check">
          <input id="sso-jit" type="checkbox" checked={justInTime} onChange={(e) => setJustInTime((e.target as HTMLInputElement).checked)} />
          <label for="sso-jit">Let people the provider vouches for join as viewers</label>
        </div>
        <div class="row">
          <button type="submit" disabled={busy}>
            Save
          </button>
          <button type="button" disabled={busy || !issuer} onClick={() => void test()}>
            Test issuer
          </button>
          {sso?.configured && (
            <button type="button" class={sso.enabled ? 'danger' : ''} disabled={busy} onClick={() => toggle(!sso.enabled)}>
              {sso.enabled ? 'Turn off' : 'Turn on'}
            </button>
          )}
        </div>
      </form>}
      <NoticeLine notice={notice} />
    </section>
  );
}

export function ScimToken() {
  const [scim, setScim] = useState<Scim | null>(null);
  const [token, setToken] = useState<string | null>(null);
  const { notice, busy, run } = useNotice();
  useEffect(() => void run(async () => setScim(await admin.scim())), []);

  const generate = () => {
    if (scim?.tokenExists && !confirm('Generate a new SCIM token? The current token stops working at once.')) return;
    void run(async () => {
      const made = await admin.newScimToken();
      setToken(made.token);
      setScim(await admin.scim());
      return 'A new token was generated. Copy it now: it is not shown again.';
    });
  };
  return (
    <section aria-labelledby="scim-title">
      <h2 id="scim-title">SCIM provisioning</h2>
      {scim && (
        <>
          <CopyField id="scim-base" label="SCIM base URL" value={scim.baseUrl} />
          <p>
            {scim.tokenExists ? `A token was generated ${when(scim.createdAt)}.` : 'No token yet.'}{' '}
            {!scim.available && 'SCIM answers once the organisation is on the Business plan with single sign-on on.'}
          </p>
        </>
      )}
      {token && <CopyField id="scim-token" label="SCIM token (shown once)" value={token} />}
      <button type="button" disabled={busy || !scim} onClick={generate}>
        {scim?.tokenExists ? 'Regenerate token' : 'Generate token'}
      </button>
      <NoticeLine notice={notice} />
    </section>
  );
}
