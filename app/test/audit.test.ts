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

test('the organisation, named by its id in the entry, is named by the name the app knows', () => {
  const org = { id: 'org_default', name: 'Default organisation' };
  const r = readable({ at: '', actor: 'admin', actorId: 'usr_a', action: 'org.memory_changed', target: 'org_default', to: 'off' }, org);
  assert.deepEqual(r.target, { name: 'Default organisation', id: 'org_default' });
  // Another target keeps its id.
  const other = readable({ at: '', actor: 'admin', action: 'integration.connected', target: 'crm' }, org);
  assert.deepEqual(other.target, { name: 'crm' });
});

test('the figures of limits read as the Usage page writes them', () => {
  const r = readable({
    at: '',
    actor: 'command-line',
    action: 'org.changed',
    target: 'org_default',
    to: 'quota 1000 questions, cost cap $1234.50',
  });
  assert.equal(r.change, 'quota 1,000 questions, cost cap $1,234.50');
  const limits = readable({
    at: '',
    actor: 'admin',
    action: 'org.limits_changed',
    target: 'org_default',
    from: 'quota 25000 questions, no cost cap a month; each member unlimited',
    to: 'quota 100 questions, cap $12000.05 a month; each member 1500 questions and $2.50 a month',
  });
  assert.equal(
    limits.change,
    'quota 25,000 questions, no cost cap a month; each member unlimited → quota 100 questions, cap $12,000.05 a month; each member 1,500 questions and $2.50 a month',
  );
});

test('a change that is not a limit is left as written', () => {
  const r = readable({ at: '', actor: 'scim', action: 'user.updated', target: 'usr_b', from: 'bob 2024', to: 'bob2024@example.org' });
  assert.equal(r.change, 'bob 2024 → bob2024@example.org');
});
