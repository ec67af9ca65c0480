// An integration's tools as its test listed them: what each one's server says of it (its MCP
// annotations, in words), and whether it runs, asks the member or is blocked, changed one tool
// at a time (a rule, or back to the default its annotations give).
import { useState } from 'preact/hooks';

import { type AdminTool, type ToolHints, type ToolPolicy, admin } from '../../admin';
import { NoticeLine, useNotice } from './common';

const POLICIES: Record<ToolPolicy, string> = {
  allow: 'Runs',
  ask: 'Asks the member',
  block: 'Blocked',
};

/** What a server's hints say, in words. */
export function hintWords(h: ToolHints): string {
  const said: string[] = [];
  if (h.readOnly === true) said.push('only reads');
  if (h.readOnly === false) said.push('may change things');
  if (h.destructive === true) said.push('may delete or overwrite');
  if (h.idempotent === true) said.push('safe to repeat');
  if (h.openWorld === true) said.push('reaches outside systems');
  return said.length === 0 ? 'Says nothing of what it does' : said.join(', ');
}

export function ToolPolicies({ integration, tools: listed }: { integration: string; tools: AdminTool[] }) {
  const [tools, setTools] = useState(listed);
  const { notice, busy, run } = useNotice();
  const change = (tool: AdminTool, choice: string, mayAlways: boolean) =>
    run(async () => {
      let next: AdminTool;
      if (choice === 'default') {
        await admin.clearToolRule(integration, tool.name);
        next = { ...tool, rule: null, policy: tool.defaultPolicy };
      } else {
        const policy = choice as ToolPolicy;
        await admin.setToolRule(integration, tool.name, policy, mayAlways);
        next = { ...tool, rule: { tool: tool.name, policy, memberMayAlwaysAllow: mayAlways }, policy };
      }
      setTools((ts) => ts.map((t) => (t.name === tool.name ? next : t)));
      return `${tool.name}: ${POLICIES[next.policy].toLowerCase()}.`;
    });
  return (
    <div>
      <h3>Tools of {integration}</h3>
      <table class="stack">
        <caption class="visually-hidden">What each tool of {integration} may do without asking</caption>
        <thead>
          <tr>
            <th scope="col">Tool</th>
            <th scope="col">Its server says</th>
            <th scope="col">When the agent asks for it</th>
            <th scope="col">Members may always allow</th>
          </tr>
        </thead>
        <tbody>
          {tools.map((t) => {
            const mayAlways = t.rule?.memberMayAlwaysAllow ?? true;
            return (
              <tr key={t.name}>
                <th scope="row">{t.name}</th>
                <td data-label="Its server says">{hintWords(t.hints)}</td>
                <td data-label="When the agent asks for it">
                  <select
                    aria-label={`Policy: ${t.name}`}
                    disabled={busy}
                    value={t.rule ? t.rule.policy : 'default'}
                    onChange={(e) => void change(t, (e.target as HTMLSelectElement).value, mayAlways)}
                  >
                    <option value="default">Default: {POLICIES[t.defaultPolicy].toLowerCase()}</option>
                    <option value="allow">{POLICIES.allow}</option>
                    <option value="ask">{POLICIES.ask}</option>
                    <option value="block">{POLICIES.block}</option>
                  </select>
                </td>
                <td data-label="Members may always allow">
                  <input
                    type="checkbox"
                    aria-label={`Members may always allow: ${t.name}`}
                    disabled={busy}
                    checked={mayAlways}
                    onChange={(e) => void change(t, t.rule ? t.rule.policy : t.defaultPolicy, (e.target as HTMLInputElement).checked)}
                  />
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
      <NoticeLine notice={notice} />
    </div>
  );
}
