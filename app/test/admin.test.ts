// Where the admin's downloads are: the month's usage, and the audit log of the entries asked for.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { auditExportUrl, usageExportUrl } from '../src/admin';

test("the month's usage downloads per member per day, or per member per model", () => {
  assert.equal(usageExportUrl('2026-11', 'day'), '/api/admin/usage/export?month=2026-11');
  assert.equal(usageExportUrl('2026-11', 'model'), '/api/admin/usage/export?month=2026-11&by=model');
});

test('the audit download carries only the parameters set', () => {
  assert.equal(auditExportUrl({ format: 'csv' }), '/api/admin/audit/export?format=csv');
  assert.equal(auditExportUrl({ format: 'jsonl', from: '', to: '2026-11-30', action: '', actor: '' }), '/api/admin/audit/export?format=jsonl&to=2026-11-30');
  assert.equal(
    auditExportUrl({ format: 'csv', from: '2026-11-01', to: '2026-11-30', action: 'member.role_changed', actor: 'command-line' }),
    '/api/admin/audit/export?format=csv&from=2026-11-01&to=2026-11-30&action=member.role_changed&actor=command-line',
  );
});
