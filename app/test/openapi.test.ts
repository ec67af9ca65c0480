// The app's wire types derive from src/openapi.d.ts: it must be what docs/openapi.json gives
// today, or a field the service renamed would pass the type check against the old schemas.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
// @ts-expect-error: a build script in plain JavaScript, without types.
import { generate, generated } from '../openapi.mjs';

test('src/openapi.d.ts is what docs/openapi.json generates', async () => {
  // This test runs from app/.test-build/.
  const app = new URL('..', import.meta.url);
  const fresh: string = await generate(app);
  assert.ok(
    readFileSync(generated(app), 'utf8') === fresh,
    "src/openapi.d.ts is not what docs/openapi.json's schemas give: run 'npm run openapi' in app/ and fix what the type check then finds",
  );
});
