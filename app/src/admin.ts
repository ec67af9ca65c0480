// The admin API (/api/admin), as docs/openapi.json describes it: the calls the admin pages make,
// their answers' and requests' types named from the document's schemas (see wire.ts).
import { call } from './api';
import type { Caps } from './usage';
import type { DocumentStatus, Narrow, Schemas } from './wire';

export type Role = 'admin' | 'viewer';

/** A member; `caps` is the member's own monthly allowance (absent or null: the organisation's
 *  applies). */
export type AdminMember = Narrow<Schemas['MemberView'], { role: Role }>;

/** A group: `scim` when the identity provider pushed it (read-only here), `admin` when an admin
 *  made it. */
export type Group = Narrow<Schemas['GroupView'], { source: 'scim' | 'admin' }>;

/** Who may open a collection: every member, or the members of `groups` (ids; at most 20). */
export type Access = Narrow<Schemas['AccessView'], { kind: 'everyone' | 'groups' }>;

/** A collection of documents; `folder` when the local service mirrors it from a folder (its
 *  documents read-only here). */
export type Collection = Narrow<Schemas['CollectionView'], { access: Access; source: 'upload' | 'folder' }>;

/** The organisation's originals against its allowance, and the most one file may have. */
export type Storage = Schemas['StorageView'];

/** A document as an admin sees it: `reason` says why it `failed`. */
export type AdminDocument = Narrow<Schemas['DocumentView'], { status: DocumentStatus }>;

/** An upload announced: the document, and where to send its bytes. */
export type UploadStarted = Narrow<Schemas['UploadStarted'], { document: AdminDocument }>;

export type Sso = Schemas['SsoView'];

/** What the single sign-on form sends (`PUT /sso`). */
export type SsoSettings = Narrow<
  Schemas['SsoRequest'],
  { clientSecret?: string; userNameClaim?: string; emailDomains: string[]; justInTime: boolean }
>;

export type Scim = Schemas['ScimView'];

/** An integration; `oauth`, for the OAuth kinds: what discovery found, and the service's client
 *  there. */
export type Integration = Narrow<
  Schemas['IntegrationView'],
  {
    auth: 'none' | 'per_user' | 'oauth_member' | 'oauth_organisation';
    oauth?: Narrow<Schemas['OAuthView'], { registration: 'pre_registered' | 'metadata_document' | 'dynamic' }> | null;
  }
>;

/** What happens when the agent asks for a tool: it runs, it asks the member, or it is never
 *  offered. */
export type ToolPolicy = 'allow' | 'ask' | 'block';

/** What a tool's server says of it (MCP's annotations), as far as it says. */
export interface ToolHints {
  readOnly?: boolean;
  destructive?: boolean;
  idempotent?: boolean;
  openWorld?: boolean;
}

/** A tool as an admin checks it: its hints, the default they give, the admin's rule and the
 *  policy that holds. */
export type AdminTool = Omit<Schemas['ToolView'], 'hints' | 'defaultPolicy' | 'policy' | 'rule'> & {
  /** The document types it as an object of any fields: these are the ones it has. */
  hints: ToolHints;
  defaultPolicy: 'allow' | 'ask';
  policy: ToolPolicy;
  rule?: Narrow<Schemas['ToolRuleView'], { policy: ToolPolicy }> | null;
};

/** The organisation's limits, and each member's allowance unless set for the member; absent or
 *  null: unlimited. */
export type Limits = Schemas['LimitsRequest'];

/** `GET /usage`: one month of the organisation's usage against its limits: `activeMembers` asked
 *  anything in the month, `members` used the most (spend first; at most ten), `days` are only
 *  those with any usage, in order, `models` most dollars first. */
export type Usage = Schemas['UsageView'];

/** One member's month, against the allowance that applies to them now (absent: unlimited);
 *  `removed`: removed since, their usage still counts. */
export type MemberUsage = Schemas['MemberUsageView'];

/** An entry of the audit log; `actor` is `admin`, `command-line`, `scim` or `member`. */
export type AuditEntry = Schemas['AuditEntryView'];

/** The audit log's actions, for its filter. */
export const AUDIT_ACTIONS = [
  'member.added',
  'member.role_changed',
  'member.removed',
  'member.signed_out',
  'member.identity_bound',
  'member.data_stored',
  'user.provisioned',
  'user.updated',
  'user.deactivated',
  'user.deleted',
  'sso.configured',
  'scim_token.generated',
  'integration.connected',
  'integration.disconnected',
  'integration.tool_policy_changed',
  'account.connected',
  'account.disconnected',
  'member.caps_changed',
  'org.limits_changed',
  'org.memory_changed',
  'org.changed',
  'group.created',
  'group.renamed',
  'group.deleted',
  'group.member_added',
  'group.member_removed',
  'collection.created',
  'collection.changed',
  'collection.deleted',
  'document.added',
  'document.replaced',
  'document.deleted',
] as const;

/** Who made a change, for the audit export's filter: the `actor` of an entry. */
export const AUDIT_ACTORS = [
  ['admin', 'An admin'],
  ['scim', 'The identity provider (SCIM)'],
  ['member', 'The member themselves'],
  ['command-line', 'The command line'],
] as const;

export interface AuditExport {
  format: 'csv' | 'jsonl';
  /** `YYYY-MM-DD`, both days included; empty: no bound. */
  from?: string;
  to?: string;
  action?: string;
  actor?: string;
}

const ADMIN = '/api/admin';

function query(params: Record<string, string | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v) q.set(k, v);
  const text = q.toString();
  return text ? `?${text}` : '';
}

const member = (userId: string) => `${ADMIN}/members/${encodeURIComponent(userId)}`;
const group = (groupId: string) => `${ADMIN}/groups/${encodeURIComponent(groupId)}`;
const groupMember = (groupId: string, userId: string) => `${group(groupId)}/members/${encodeURIComponent(userId)}`;
const collection = (id: string) => `${ADMIN}/collections/${encodeURIComponent(id)}`;
const documentPath = (collectionId: string, id: string) => `${collection(collectionId)}/documents/${encodeURIComponent(id)}`;
const integration = (name: string) => `${ADMIN}/integrations/${encodeURIComponent(name)}`;

export const admin = {
  members: (q: { q?: string; after?: string }) =>
    call<Narrow<Schemas['MemberList'], { members: AdminMember[] }>>('GET', `${ADMIN}/members${query(q)}`),
  invite: (userName: string, role: Role) =>
    call<AdminMember>('POST', `${ADMIN}/members`, { userName, role } satisfies Schemas['InviteRequest']),
  setRole: (userId: string, role: Role) => call<AdminMember>('PATCH', member(userId), { role } satisfies Schemas['RoleRequest']),
  remove: (userId: string) => call<Schemas['Removed']>('DELETE', member(userId)),
  groups: () => call<Narrow<Schemas['GroupList'], { groups: Group[] }>>('GET', `${ADMIN}/groups`),
  createGroup: (displayName: string) =>
    call<Group>('POST', `${ADMIN}/groups`, { displayName } satisfies Schemas['GroupRequest']),
  renameGroup: (groupId: string, displayName: string) =>
    call<Group>('PATCH', group(groupId), { displayName } satisfies Schemas['GroupRequest']),
  deleteGroup: (groupId: string) => call<Schemas['Done']>('DELETE', group(groupId)),
  groupMembers: (groupId: string, after?: string) =>
    call<Narrow<Schemas['MemberList'], { members: AdminMember[] }>>('GET', `${group(groupId)}/members${query({ after })}`),
  addToGroup: (groupId: string, userId: string) => call<Schemas['GroupMemberAdded']>('PUT', groupMember(groupId, userId)),
  removeFromGroup: (groupId: string, userId: string) =>
    call<Schemas['GroupMemberRemoved']>('DELETE', groupMember(groupId, userId)),
  collections: () =>
    call<Narrow<Schemas['CollectionList'], { collections: Collection[] }>>('GET', `${ADMIN}/collections`),
  createCollection: (name: string, description: string, access: Access) =>
    call<Collection>('POST', `${ADMIN}/collections`, { name, description, access } satisfies Schemas['CollectionRequest']),
  changeCollection: (id: string, change: { name?: string; description?: string; access?: Access }) =>
    call<Collection>('PATCH', collection(id), change satisfies Schemas['CollectionPatch']),
  deleteCollection: (id: string) => call<Schemas['Done']>('DELETE', collection(id)),
  documents: (collectionId: string) =>
    call<Narrow<Schemas['DocumentList'], { documents: AdminDocument[] }>>('GET', `${collection(collectionId)}/documents`),
  upload: (collectionId: string, name: string, bytes: number) =>
    call<UploadStarted>('POST', `${collection(collectionId)}/documents`, { name, bytes } satisfies Schemas['UploadRequest']),
  replace: (collectionId: string, id: string, name: string, bytes: number) =>
    call<UploadStarted>('PUT', documentPath(collectionId, id), { name, bytes } satisfies Schemas['UploadRequest']),
  deleteDocument: (collectionId: string, id: string) => call<Schemas['Done']>('DELETE', documentPath(collectionId, id)),
  sso: () => call<Sso>('GET', `${ADMIN}/sso`),
  setSso: (s: SsoSettings) => call<Sso>('PUT', `${ADMIN}/sso`, s),
  enableSso: (enabled: boolean) => call<Sso>('PUT', `${ADMIN}/sso/enabled`, { enabled } satisfies Schemas['SsoEnabledRequest']),
  testSso: (issuer: string) =>
    call<Schemas['SsoTested']>('POST', `${ADMIN}/sso/test`, { issuer } satisfies Schemas['SsoTestRequest']),
  scim: () => call<Scim>('GET', `${ADMIN}/scim`),
  newScimToken: () => call<Schemas['ScimToken']>('POST', `${ADMIN}/scim/token`),
  integrations: () =>
    call<Narrow<Schemas['IntegrationList'], { integrations: Integration[] }>>('GET', `${ADMIN}/integrations`),
  connect: (name: string, url: string, auth: Integration['auth'], client?: { clientId: string; clientSecret?: string }) =>
    call<Integration>('PUT', integration(name), { url, auth, ...client } satisfies Schemas['IntegrationRequest']),
  connectOrganisation: (name: string) => call<Schemas['ConnectStarted']>('POST', `${integration(name)}/connect`),
  disconnectOrganisation: (name: string) => call<Schemas['Done']>('DELETE', `${integration(name)}/connection`),
  disconnect: (name: string) => call<Schemas['Done']>('DELETE', integration(name)),
  test: (name: string) => call<{ tools: AdminTool[] }>('POST', `${integration(name)}/test`),
  setToolRule: (name: string, tool: string, policy: ToolPolicy, memberMayAlwaysAllow: boolean) =>
    call<Schemas['ToolRuleView']>('PUT', `${integration(name)}/tools/${encodeURIComponent(tool)}`, {
      policy,
      memberMayAlwaysAllow,
    } satisfies Schemas['ToolRuleRequest']),
  clearToolRule: (name: string, tool: string) => call<Schemas['Done']>('DELETE', `${integration(name)}/tools/${encodeURIComponent(tool)}`),
  storeCredential: (name: string, userId: string, token: string) =>
    call<Schemas['Done']>(
      'PUT',
      `${integration(name)}/credentials/${encodeURIComponent(userId)}`,
      { token } satisfies Schemas['CredentialRequest'],
    ),
  holders: (name: string) =>
    call<Narrow<Schemas['HolderList'], { members: AdminMember[] }>>('GET', `${integration(name)}/credentials`),
  usage: (month?: string) => call<Usage>('GET', `${ADMIN}/usage${query({ month })}`),
  memory: () => call<Schemas['MemorySetting']>('GET', `${ADMIN}/memory`),
  setMemory: (enabled: boolean) =>
    call<Schemas['MemorySetting']>('PUT', `${ADMIN}/memory`, { enabled } satisfies Schemas['MemorySetting']),
  setLimits: (limits: Limits) => call<Usage>('PUT', `${ADMIN}/usage/limits`, limits),
  setCaps: (userId: string, caps: Caps) =>
    call<AdminMember>('PUT', `${member(userId)}/caps`, caps satisfies Schemas['MemberCapsRequest']),
  clearCaps: (userId: string) => call<AdminMember>('DELETE', `${member(userId)}/caps`),
  audit: (q: { before?: string; action?: string }) => call<Schemas['AuditList']>('GET', `${ADMIN}/audit${query(q)}`),
};

/** Where to download a month's usage as CSV: a row per member per day, or per member per model. */
export function usageExportUrl(month: string, by: 'day' | 'model'): string {
  return `${ADMIN}/usage/export${query({ month, by: by === 'model' ? 'model' : undefined })}`;
}

/** Where to download the audit log, of the entries `filter` keeps (empty parameters left out). */
export function auditExportUrl(filter: AuditExport): string {
  const { format, from, to, action, actor } = filter;
  return `${ADMIN}/audit/export${query({ format, from, to, action, actor })}`;
}

/** A member as a person reads them: the display name, else the userName, else the id. */
export function memberName(m: { userId: string; userName?: string | null; displayName?: string | null }): string {
  return m.displayName ?? m.userName ?? m.userId;
}
