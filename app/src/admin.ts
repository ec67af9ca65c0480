// The admin API (/api/admin), as docs/openapi.json describes it: the calls the admin pages make
// and the parts of the answers they read.
import { call } from './api';

export interface AdminMember {
  userId: string;
  userName?: string | null;
  displayName?: string | null;
  role: 'admin' | 'viewer';
  createdAt: string;
  identityBound: boolean;
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

export interface Usage {
  month: string;
  queries: number;
  monthlyQueryQuota?: number | null;
  monthToDateUsd: number;
  costCapUsd?: number | null;
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
  'org.limits_changed',
  'org.memory_changed',
] as const;

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
  usage: () => call<Usage>('GET', `${ADMIN}/usage`),
  memory: () => call<{ enabled: boolean }>('GET', `${ADMIN}/memory`),
  setMemory: (enabled: boolean) => call<{ enabled: boolean }>('PUT', `${ADMIN}/memory`, { enabled }),
  setLimits: (monthlyQueryQuota: number | null, costCapUsd: number | null) =>
    call<Usage>('PUT', `${ADMIN}/usage/limits`, { monthlyQueryQuota, costCapUsd }),
  audit: (q: { before?: string; action?: string }) =>
    call<{ entries: AuditEntry[]; next?: string | null }>('GET', `${ADMIN}/audit${query(q)}`),
};

/** A member as a person reads them: the display name, else the userName, else the id. */
export function memberName(m: AdminMember): string {
  return m.displayName ?? m.userName ?? m.userId;
}
