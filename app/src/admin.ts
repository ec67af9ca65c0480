// The admin API (/api/admin), as docs/openapi.json describes it: the calls the admin pages make
// and the parts of the answers they read.
import { call } from './api';
import type { Caps, DayUsage, ModelUsage } from './usage';

export interface AdminMember {
  userId: string;
  userName?: string | null;
  displayName?: string | null;
  role: 'admin' | 'viewer';
  createdAt: string;
  identityBound: boolean;
  /** The member's own monthly allowance; absent or null: the organisation's applies. */
  caps?: Caps | null;
}

export interface Sso {
  configured: boolean;
  issuer?: string | null;
  clientId?: string | null;
  clientSecretSet: boolean;
  userNameClaim?: string | null;
  emailDomains: string[];
  enabled: boolean;
  justInTime: boolean;
  updatedAt?: string | null;
  callbackUrl: string;
}

export interface SsoSettings {
  issuer: string;
  clientId: string;
  clientSecret?: string;
  userNameClaim?: string;
  emailDomains: string[];
  justInTime: boolean;
}

export interface Scim {
  tokenExists: boolean;
  createdAt?: string | null;
  baseUrl: string;
  available: boolean;
}

export interface Integration {
  name: string;
  url: string;
  auth: 'none' | 'per_user' | 'oauth_member' | 'oauth_organisation';
  createdAt: string;
  /** For the OAuth kinds: what discovery found, and the service's client there. */
  oauth?: {
    issuer: string;
    authorizationEndpoint: string;
    scopes: string[];
    registration: 'pre_registered' | 'metadata_document' | 'dynamic';
    clientId: string;
    redirectUri: string;
    revocation: boolean;
  };
}

/** The organisation's limits, and each member's allowance unless set for the member; absent or
 *  null: unlimited. */
export interface Limits {
  monthlyQueryQuota?: number | null;
  costCapUsd?: number | null;
  memberQuestionCap?: number | null;
  memberCapUsd?: number | null;
}

/** `GET /usage`: one month of the organisation's usage against its limits. */
export interface Usage extends Limits {
  month: string;
  queries: number;
  monthToDateUsd: number;
  inputTokens: number;
  outputTokens: number;
  /** How many members asked anything in the month. */
  activeMembers: number;
  /** The members who used the most, spend first; at most ten. */
  members: MemberUsage[];
  /** Only the days with any usage, in order. */
  days: DayUsage[];
  /** Most dollars first. */
  models: ModelUsage[];
}

/** One member's month, against the allowance that applies to them now (absent: unlimited). */
export interface MemberUsage extends Caps {
  userId: string;
  userName?: string | null;
  displayName?: string | null;
  /** Removed since; their usage still counts. */
  removed: boolean;
  questions: number;
  usd: number;
  inputTokens: number;
  outputTokens: number;
}

export interface AuditEntry {
  at: string;
  /** `admin`, `command-line`, `scim` or `member`. */
  actor: string;
  actorId?: string | null;
  actorName?: string;
  action: string;
  target: string;
  targetName?: string;
  from?: string;
  to?: string;
}

/** The audit log's actions, for its filter. */
export const AUDIT_ACTIONS = [
  'member.added',
  'member.role_changed',
  'member.removed',
  'member.signed_out',
  'member.identity_bound',
  'user.provisioned',
  'user.updated',
  'user.deactivated',
  'user.deleted',
  'sso.configured',
  'scim_token.generated',
  'integration.connected',
  'integration.disconnected',
  'account.connected',
  'account.disconnected',
  'member.caps_changed',
  'org.limits_changed',
  'org.memory_changed',
  'org.changed',
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
const integration = (name: string) => `${ADMIN}/integrations/${encodeURIComponent(name)}`;

export const admin = {
  members: (q: { q?: string; after?: string }) =>
    call<{ members: AdminMember[]; next?: string | null }>('GET', `${ADMIN}/members${query(q)}`),
  invite: (userName: string, role: 'admin' | 'viewer') => call<AdminMember>('POST', `${ADMIN}/members`, { userName, role }),
  setRole: (userId: string, role: 'admin' | 'viewer') => call<AdminMember>('PATCH', member(userId), { role }),
  remove: (userId: string) => call<{ ok: boolean; cancelledTurns: number }>('DELETE', member(userId)),
  sso: () => call<Sso>('GET', `${ADMIN}/sso`),
  setSso: (s: SsoSettings) => call<Sso>('PUT', `${ADMIN}/sso`, s),
  enableSso: (enabled: boolean) => call<Sso>('PUT', `${ADMIN}/sso/enabled`, { enabled }),
  testSso: (issuer: string) => call<{ ok: boolean; issuer: string }>('POST', `${ADMIN}/sso/test`, { issuer }),
  scim: () => call<Scim>('GET', `${ADMIN}/scim`),
  newScimToken: () => call<{ token: string; createdAt: string; baseUrl: string }>('POST', `${ADMIN}/scim/token`),
  integrations: () => call<{ integrations: Integration[] }>('GET', `${ADMIN}/integrations`),
  connect: (name: string, url: string, auth: Integration['auth'], client?: { clientId: string; clientSecret?: string }) =>
    call<Integration>('PUT', integration(name), { url, auth, ...client }),
  connectOrganisation: (name: string) => call<{ authorizationUrl: string }>('POST', `${integration(name)}/connect`),
  disconnectOrganisation: (name: string) => call<{ ok: boolean }>('DELETE', `${integration(name)}/connection`),
  disconnect: (name: string) => call<{ ok: boolean }>('DELETE', integration(name)),
  test: (name: string) =>
    call<{ tools: { name: string; description: string }[] }>('POST', `${integration(name)}/test`),
  storeCredential: (name: string, userId: string, token: string) =>
    call<{ ok: boolean }>('PUT', `${integration(name)}/credentials/${encodeURIComponent(userId)}`, { token }),
  holders: (name: string) => call<{ members: AdminMember[] }>('GET', `${integration(name)}/credentials`),
  usage: (month?: string) => call<Usage>('GET', `${ADMIN}/usage${query({ month })}`),
  memory: () => call<{ enabled: boolean }>('GET', `${ADMIN}/memory`),
  setMemory: (enabled: boolean) => call<{ enabled: boolean }>('PUT', `${ADMIN}/memory`, { enabled }),
  setLimits: (limits: Limits) => call<Usage>('PUT', `${ADMIN}/usage/limits`, limits),
  setCaps: (userId: string, caps: Caps) => call<AdminMember>('PUT', `${member(userId)}/caps`, caps),
  clearCaps: (userId: string) => call<AdminMember>('DELETE', `${member(userId)}/caps`),
  audit: (q: { before?: string; action?: string }) =>
    call<{ entries: AuditEntry[]; next?: string | null }>('GET', `${ADMIN}/audit${query(q)}`),
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
