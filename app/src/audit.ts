// How an audit entry reads: who, did what, to whom, from what to what. People are named as
// they were when the entry was written, with their id beside the name (the id is what other
// records and the identity provider use); the organisation by the name the app knows it by; the
// figures of limits as the Usage page writes them ("1,000", "$1,234.50").
import type { AuditEntry } from './admin';
import { count } from './usage';

/** What each action says, in words. */
export const ACTIONS: Record<string, string> = {
  'member.added': 'Added a member',
  'member.role_changed': 'Changed a role',
  'member.removed': 'Removed a member',
  'member.signed_out': 'Signed out',
  'member.identity_bound': 'Bound a sign-in identity',
  'member.data_stored': 'Stored a credential for a member',
  'user.provisioned': 'Provisioned a user',
  'user.updated': 'Updated a user',
  'user.deactivated': 'Deactivated a user',
  'user.deleted': 'Deleted a user',
  'sso.configured': 'Configured single sign-on',
  'scim_token.generated': 'Generated the SCIM token',
  'integration.connected': 'Added an integration',
  'integration.disconnected': 'Removed an integration',
  'integration.tool_policy_changed': 'Changed when a tool of an integration may run',
  'account.connected': 'Connected an account',
  'account.disconnected': 'Disconnected an account',
  'member.caps_changed': "Set a member's allowance",
  'org.limits_changed': 'Set the usage limits',
  'org.memory_changed': 'Switched memory on or off',
  'org.changed': "Changed the organisation's plan, status or limits",
  'group.created': 'Created a group',
  'group.renamed': 'Renamed a group',
  'group.deleted': 'Deleted a group',
  'group.member_added': 'Added a member to a group',
  'group.member_removed': 'Removed a member from a group',
  'collection.created': 'Created a collection',
  'collection.changed': 'Changed a collection',
  'collection.deleted': 'Deleted a collection',
  'document.added': 'Added a document',
  'document.replaced': 'Replaced a document',
  'document.deleted': 'Deleted a document',
};

/** A person, or the organisation's integration or settings, as a name and an id. */
export interface Named {
  name: string;
  id?: string;
}

export interface ReadableEntry {
  what: string;
  /** "viewer → admin", "quota 100 questions, …"; empty when nothing changed hands. */
  change: string;
  target: Named;
  by: Named;
}

/** Who acted, in words: a member by name (and id), the command line, the identity provider. */
function actor(e: AuditEntry): Named {
  switch (e.actor) {
    case 'command-line':
      return { name: 'Command line' };
    case 'scim':
      return { name: 'Identity provider (SCIM)' };
    default:
      if (e.actorId) return { name: e.actorName ?? e.actorId, id: e.actorName ? e.actorId : undefined };
      return { name: e.actor === 'member' ? 'The member' : 'An admin' };
  }
}

/** The actions whose change is limits in words, written by the service with bare figures
 *  ("quota 1000 questions, cost cap $1234.50"). */
const LIMITS = new Set(['org.limits_changed', 'org.changed', 'member.caps_changed']);

/** Groups the thousands of each whole figure in `text` (a dollar amount's cents untouched). */
function grouped(text: string): string {
  return text.replace(/(?<![\w.,])\d{4,}(?!\w)/g, (n) => count(Number(n)));
}

/** `org` is the organisation whose log this is: an entry about it names it by id only. */
export function readable(e: AuditEntry, org?: { id: string; name: string }): ReadableEntry {
  const words = (text: string) => (LIMITS.has(e.action) ? grouped(text) : text);
  const change = e.from && e.to ? `${words(e.from)} → ${words(e.to)}` : words(e.to ?? '');
  const target: Named = e.targetName
    ? { name: e.targetName, id: e.target }
    : org && e.target === org.id
      ? { name: org.name, id: org.id }
      : { name: e.target };
  return { what: ACTIONS[e.action] ?? e.action, change, target, by: actor(e) };
}
