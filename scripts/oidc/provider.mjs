// A real OpenID provider for the sign-in tests: panva's oidc-provider on 127.0.0.1, with the
// authorization code flow, PKCE (S256, required), client_secret_basic, RS256 ID tokens that
// carry every claim of the account (conformIdTokenClaims off), and a login page that a test
// (or a browser) fills in.
//
//   node scripts/oidc/provider.mjs --port 0 --config provider.json
//
// prints "ready http://127.0.0.1:<port>" (the issuer) once listening, and runs until SIGTERM or
// SIGINT. The config: {"clients": [{"client_id", "client_secret", "redirect_uris": [...]}],
// "accounts": {"<login>": {"sub": "...", <any claims: email, preferred_username, upn, name>}}}.
//
// Sign-in: the authorization request leads to /interaction/<uid>, a form asking for the login
// (POST /interaction/<uid>/login); GET /interaction/<uid>?login=<login> does the same in one
// step for HTTP clients. Either signs the account in and grants the requested scopes, then sends
// the browser back to the client with ?code=...&state=....
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

// oidc-provider warns that Node 20 is not its preferred runtime and that its in-memory store
// is for development: both true and intended here; anything else it says still shows.
const warn = console.warn;
console.warn = (...a) => (String(a[0]).startsWith('oidc-provider WARNING') ? undefined : warn(...a));
const { Provider } = await import('oidc-provider');

const { values: args } = parseArgs({
  options: { port: { type: 'string', default: '0' }, config: { type: 'string' } },
});
if (!args.config) {
  console.error('usage: provider.mjs --port <port> --config <file.json>');
  process.exit(2);
}
const config = JSON.parse(readFileSync(args.config, 'utf8'));
const accounts = config.accounts ?? {};
const bySub = new Map(Object.values(accounts).map((claims) => [claims.sub, claims]));
// Every claim any account carries is released with the profile scope, so that non-standard
// ones (Entra's upn) reach the ID token.
const extraClaims = [...new Set(Object.values(accounts).flatMap((c) => Object.keys(c)))]
  .filter((c) => !['sub', 'email', 'email_verified'].includes(c));

const server = createServer();
await new Promise((resolve) => server.listen(Number(args.port), '127.0.0.1', resolve));
// The issuer must be exactly what the service is configured with, port included: listen
// first, then build the provider on the real port.
const issuer = `http://127.0.0.1:${server.address().port}`;

const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const signingKey = { ...privateKey.export({ format: 'jwk' }), kid: 'test-key', use: 'sig', alg: 'RS256' };

const provider = new Provider(issuer, {
  clients: (config.clients ?? []).map((c) => ({
    ...c,
    token_endpoint_auth_method: 'client_secret_basic',
    grant_types: ['authorization_code'],
    response_types: ['code'],
    id_token_signed_response_alg: 'RS256',
  })),
  jwks: { keys: [signingKey] },
  cookies: { keys: [randomBytes(32).toString('base64url')] },
  pkce: { required: () => true }, // S256 is the only method oidc-provider 9 knows
  scopes: ['openid', 'email', 'profile'],
  claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: extraClaims },
  conformIdTokenClaims: false,
  async findAccount(ctx, sub) {
    const claims = bySub.get(sub);
    return claims && { accountId: sub, async claims() { return { ...claims }; } };
  },
  interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
  features: { devInteractions: { enabled: false } },
  ttl: { AccessToken: 600, AuthorizationCode: 60, IdToken: 600, Interaction: 600, Session: 600, Grant: 600 },
  renderError(ctx, out) {
    ctx.type = 'json';
    ctx.body = out;
  },
});

const escape = (s) => String(s).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
function form(uid, error) {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Test provider: sign in</title></head>
<body><main><h1>Sign in</h1>${error ? `<p role="alert">${escape(error)}</p>` : ''}
<form method="post" action="/interaction/${escape(uid)}/login">
<label for="login">Login</label> <input id="login" name="login" autocomplete="username" autofocus>
<button type="submit">Sign in</button></form></main></body></html>`;
}

async function readForm(req) {
  let body = '';
  for await (const chunk of req) {
    body += chunk;
    if (body.length > 4096) break;
  }
  return new URLSearchParams(body);
}

// Signs `login` in for the interaction and grants what the client asked for, in one round.
async function finish(req, res, details, login) {
  const claims = accounts[login];
  const grant = new provider.Grant({ accountId: claims.sub, clientId: details.params.client_id });
  grant.addOIDCScope(details.params.scope);
  const grantId = await grant.save();
  await provider.interactionFinished(
    req,
    res,
    { login: { accountId: claims.sub }, consent: { grantId } },
    { mergeWithLastSubmission: false },
  );
}

async function interaction(req, res, url, posted) {
  const details = await provider.interactionDetails(req, res);
  const login = posted ? (await readForm(req)).get('login') : url.searchParams.get('login');
  const send = (status, html) => {
    res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
    res.end(html);
  };
  if (login === null) return send(200, form(details.uid));
  if (!Object.hasOwn(accounts, login)) return send(400, form(details.uid, `No account ${login}.`));
  return finish(req, res, details, login);
}

const handle = provider.callback();
server.on('request', (req, res) => {
  const url = new URL(req.url, issuer);
  const m = url.pathname.match(/^\/interaction\/([\w-]+)(\/login)?$/);
  if (!m) return handle(req, res);
  const posted = m[2] !== undefined;
  if (posted !== (req.method === 'POST')) {
    res.writeHead(405).end();
    return;
  }
  interaction(req, res, url, posted).catch((e) => {
    res.writeHead(400, { 'content-type': 'text/plain' });
    res.end(String(e?.message ?? e));
  });
});

const stop = () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
console.log(`ready ${issuer}`);
