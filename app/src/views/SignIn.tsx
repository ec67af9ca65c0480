// The sign-in page: a work e-mail leads to the organisation's identity provider.
import { useState } from 'preact/hooks';

export function SignIn({ notice }: { notice?: string }) {
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
