// The sign-in page: a work e-mail leads to the organisation's identity provider. A sign-in
// that failed comes back here as /?signin=<code>; only the service's own codes are shown.
import { useState } from 'preact/hooks';

const FAILURES: Record<string, string> = {
  sso_unavailable: 'No single sign-on is set up for this e-mail address. Check it, or ask your administrator.',
  not_provisioned: 'You are not a member of this organisation yet. Ask its administrator for access.',
  sign_in_failed: 'The sign-in could not be completed. Please try again.',
  link_expired: 'This sign-in link was already used or has expired. Ask for a new one.',
  destination_refused:
    "Your organisation's sign-in is set up at an address this service does not connect to. Ask your administrator.",
  email_unverified:
    'Your identity provider has not verified your e-mail address. Verify it there, then sign in again.',
  identity_provider_unavailable: "Your organisation's sign-in service cannot be reached. Try again in a moment.",
};

/** What to say about the failed sign-in the address names, if any; the address is cleaned. */
function failure(): string | undefined {
  const params = new URLSearchParams(location.search);
  const code = params.get('signin');
  if (code === null) return undefined;
  history.replaceState(null, '', location.pathname);
  if (code === 'redirect_uri_changed') return callbackMoved(params.get('org'));
  return FAILURES[code] ?? 'The sign-in could not be completed. Please try again.';
}

/** The organisation's identity provider still sends people to the shared callback of old. */
function callbackMoved(org: string | null): string {
  const uri = org !== null && /^[A-Za-z0-9_-]{1,64}$/.test(org) ? `${location.origin}/api/auth/callback/${org}` : undefined;
  const register = uri ? `register ${uri}` : 'register the redirect URI shown on the admin single sign-on page';
  return `Your organisation's identity provider sends people back to an address this service no longer uses. Ask your administrator to ${register} as the redirect URI at the provider.`;
}

export function SignIn() {
  const [notice] = useState(failure);
  const [email, setEmail] = useState('');
  const returnTo = location.pathname.startsWith('/api/') ? '/' : location.pathname + location.search;
  const href = `/api/auth/login?${new URLSearchParams({ email: email.trim(), returnTo })}`;
  return (
    <main class="signin">
      <h1>Sign in</h1>
      {notice && <p role="alert">{notice}</p>}
      <form
        onSubmit={(e) => {
          e.preventDefault();
          if (email.includes('@')) location.assign(href);
        }}
      >
        <label for="email">Work e-mail</label>
        <input
          id="email"
          type="email"
          autocomplete="email"
          required
          value={email}
          onInput={(e) => setEmail((e.target as HTMLInputElement).value)}
        />
        <button type="submit">Continue with single sign-on</button>
      </form>
      <p class="hint">Running the service locally? Open the sign-in link it printed at start.</p>
    </main>
  );
}
