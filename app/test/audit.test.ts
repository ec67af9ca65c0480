// How audit entries read.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { readable } from '../src/audit';

test('a role change names both people with their ids and says from what to what', () => {
  const r = readable({
    at: '2026-11-26T10:00:00Z',
    actor: 'admin',
    actorId: 'usr_a',
    actorName: 'ann@example.com',
    action: 'member.role_changed',
    target: 'usr_b',
    targetName: 'bob@example.com',
    from: 'viewer',
    to: 'admin',
  });
  assert.deepEqual(r, {
    what: 'Changed a role',
    change: 'viewer → admin',
    target: { name: 'bob@example.com', id: 'usr_b' },
    by: { name: 'ann@example.com', id: 'usr_a' },
  });
});

test('the command line and the identity provider are named as such, not as an admin', () => {
  const cli = readable({ at: '', actor: 'command-line', action: 'member.added', target: 'usr_c', to: 'viewer' });
  assert.deepEqual(cli.by, { name: 'Command line' });
  assert.equal(cli.change, 'viewer');
  const scim = readable({ at: '', actor: 'scim', action: 'user.deleted', target: 'usr_d', targetName: 'dee@example.com' });
  assert.equal(scim.by.name, 'Identity provider (SCIM)');
  assert.equal(scim.what, 'Deleted a user');
});

test('an entry written before names were kept shows the ids it has', () => {
  const r = readable({ at: '', actor: 'admin', actorId: 'usr_a', action: 'member.removed', target: 'usr_b' });
  assert.deepEqual(r.by, { name: 'usr_a', id: undefined });
  assert.deepEqual(r.target, { name: 'usr_b' });
});
