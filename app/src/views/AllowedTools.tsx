// The tools the member chose to "always allow" from a call that asked them: listed on the
// Connections page, each to take back (the next call of it asks again).
import { useEffect, useState } from 'preact/hooks';

import { api } from '../api';
import type { AllowedTool } from '../wire';
import { NoticeLine, useNotice } from './admin/common';

export function AllowedTools() {
  const [tools, setTools] = useState<AllowedTool[] | null>(null);
  const { notice, busy, run } = useNotice();
  const reload = async () => setTools((await api.allowedTools()).tools);
  useEffect(() => void run(reload), []);
  const takeBack = (t: AllowedTool) =>
    run(async () => {
      await api.forgetAllowedTool(t.integration, t.tool);
      await reload();
      return `${t.tool} asks you again.`;
    });
  return (
    <section aria-labelledby="allowed-title">
      <h2 id="allowed-title">Tools you always allow</h2>
      <p class="hint">The assistant asks you before it uses a tool that may change something, unless you chose "Always allow" for it.</p>
      <NoticeLine notice={notice} />
      {tools && tools.length === 0 && <p class="hint">None: the assistant asks you each time.</p>}
      {tools && tools.length > 0 && (
        <ul class="allowed-tools">
          {tools.map((t) => (
            <li key={`${t.integration}/${t.tool}`}>
              <span>
                {t.tool} <span class="hint">({t.integration})</span>
              </span>{' '}
              <button type="button" class="quiet" disabled={busy} onClick={() => void takeBack(t)} aria-label={`Ask again: ${t.tool}`}>
                Ask again
              </button>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
