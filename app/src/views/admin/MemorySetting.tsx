// The organisation's switch for the assistant's memory, on the admin Usage page. An admin sets
// it for everyone; no admin sees what the assistant remembers about a member.
import { useEffect, useState } from 'preact/hooks';

import { admin } from '../../admin';
import { NoticeLine, useNotice } from './common';

export function MemorySetting() {
  const [enabled, setEnabled] = useState<boolean | null>(null);
  const { notice, busy, run } = useNotice();
  useEffect(() => void run(async () => setEnabled((await admin.memory()).enabled)), []);
  const toggle = (on: boolean) =>
    run(async () => {
      setEnabled(on);
      const stored = await admin.setMemory(on).catch(async (e) => {
        setEnabled((await admin.memory()).enabled);
        throw e;
      });
      setEnabled(stored.enabled);
      return on ? 'Memory is on for the organisation.' : 'Memory is off for the organisation: nothing is saved or used.';
    });
  return (
    <section aria-labelledby="memory-setting-title">
      <h2 id="memory-setting-title">Memory</h2>
      <p class="hint" id="memory-setting-hint">
        The assistant keeps short notes about each member from what they tell it, and each member sees and erases their
        own. Admins do not see them.
      </p>
      {enabled !== null && (
        <div class="field switch">
          <input id="org-memory" type="checkbox" checked={enabled} disabled={busy} aria-describedby="memory-setting-hint" onChange={(e) => void toggle((e.target as HTMLInputElement).checked)} />
          <label for="org-memory">Let the assistant remember things about members</label>
        </div>
      )}
      <NoticeLine notice={notice} />
    </section>
  );
}
