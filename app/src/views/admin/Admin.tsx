// The admin area, for the organisation's admins: one page per concern under /admin/<section>,
// reached from the sidebar; each section has a file of its own. The service decides who is an
// admin: a viewer who comes here is told so.
import type { Account } from '../../wire';
import { AuditPage } from './Audit';
import { Documents } from './Documents';
import { Integrations } from './Integrations';
import { Groups } from './Groups';
import { Members } from './Members';
import { MemorySetting } from './MemorySetting';
import { ScimToken, SingleSignOn } from './SignOn';
import { UsagePage } from './Usage';

export const SECTIONS = [
  ['members', 'Members'],
  ['groups', 'Groups'],
  ['documents', 'Documents'],
  ['sso', 'Single sign-on'],
  ['scim', 'SCIM'],
  ['integrations', 'Integrations'],
  ['usage', 'Usage'],
  ['audit', 'Audit log'],
] as const;

export type Section = (typeof SECTIONS)[number][0];

/** The section's name, as its link and the tab's title say it. */
export function sectionName(section: Section): string {
  return SECTIONS.find(([id]) => id === section)![1];
}

export function sectionFromPath(path: string): Section | null {
  const m = path.match(/^\/admin(?:\/([a-z]+))?\/?$/);
  if (!m) return null;
  const found = SECTIONS.find(([id]) => id === (m[1] ?? 'members'));
  return found ? found[0] : null;
}

export function Admin(props: { account: Account; section: Section; go: (path: string) => void }) {
  const { account, section } = props;
  if (account.org.role !== 'admin') {
    return (
      <main class="admin">
        <h1>Admin</h1>
        <p role="alert">Only an admin of {account.org.name} can see this page.</p>
        <a href="/">Back to the chat</a>
      </main>
    );
  }
  return (
    <div class="layout admin-layout">
      <nav class="sidebar" aria-label="Admin">
        <a
          href="/"
          onClick={(e) => {
            e.preventDefault();
            props.go('/');
          }}
        >
          ← Back to the chat
        </a>
        <ul class="sections">
          {SECTIONS.map(([id, label]) => (
            <li key={id}>
              <a
                href={`/admin/${id}`}
                aria-current={id === section ? 'page' : undefined}
                onClick={(e) => {
                  e.preventDefault();
                  props.go(`/admin/${id}`);
                }}
              >
                {label}
              </a>
            </li>
          ))}
        </ul>
      </nav>
      <main class="admin">
        <h1>Admin of {account.org.name}</h1>
        {section === 'members' && <Members me={account.user.id} />}
        {section === 'groups' && <Groups />}
        {section === 'documents' && <Documents />}
        {section === 'sso' && <SingleSignOn />}
        {section === 'scim' && <ScimToken />}
        {section === 'integrations' && <Integrations me={account.user.id} />}
        {section === 'usage' && (
          <>
            <UsagePage />
            <MemorySetting />
          </>
        )}
        {section === 'audit' && <AuditPage org={account.org} />}
      </main>
    </div>
  );
}
