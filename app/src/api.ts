// Calls to the service's public API, same origin, with the session cookie. Failures become an
// ApiFailure a person can read: the status, the service's code and message, and what to do.

import { rateLimitWords, waitWords } from './limits';
import type { Account, Connection, Decision, ErrorBody, MemoryPage, Narrow, PassageWindow, ReaderDocument, Schemas, SearchHit, TranscriptPage } from './wire';

export class ApiFailure extends Error {
  constructor(
    /** 0 when the network failed before any answer. */
    readonly status: number,
    readonly code: string,
    message: string,
    /** Seconds to wait, from `Retry-After` (429). */
    readonly retryAfter?: number,
    readonly body?: ErrorBody,
  ) {
    super(message);
  }

  /** The network or the service failed: trying again later may work. */
  get transient(): boolean {
    return this.status === 0 || this.status >= 500;
  }
}

/** What to tell a person about `f`. */
export function explain(f: ApiFailure): string {
  switch (f.code) {
    case 'network':
      return 'The service cannot be reached. Retrying…';
    case 'rate_limited':
      return f.retryAfter === undefined ? 'Too many requests for now: wait a little and try again.' : rateLimitWords(f.retryAfter, false);
    case 'payload_too_large':
      return 'This is too long to send: keep a message under 256 KB (about 250,000 characters).';
    case 'quota_exhausted':
      return `Your organisation has used this month's questions. They renew in ${days(f.retryAfter)}.`;
    case 'cost_cap_reached': {
      const spent = f.body?.monthToDateUsd?.toFixed(2) ?? '?';
      const cap = f.body?.capUsd?.toFixed(2) ?? '?';
      return `Your organisation reached its monthly cost cap ($${spent} of $${cap}). It renews in ${days(f.retryAfter)}.`;
    }
    case 'member_cap_reached':
      return memberCapWords(f);
    case 'provider_unavailable':
      return 'The AI provider cannot be reached right now. Try again in a moment.';
    case 'unauthenticated':
      return 'Your sign-in has ended. Sign in again.';
    case 'admin_only':
      return 'Only an admin of the organisation can do this.';
    case 'last_admin':
      return 'The organisation needs an admin: promote another member before demoting or removing this one.';
    case 'identity_provider_unavailable':
      return "The identity provider's discovery document could not be fetched from that issuer.";
    case 'user_name_taken':
      return 'Another member already has this userName.';
    case 'group_name_taken':
      return 'Another group already has this name (in any letter case), or it is a role: admin and viewer are not group names.';
    case 'group_pushed_by_scim':
      return 'The identity provider pushed this group: change it there, and it pushes the change here.';
    case 'too_many_groups':
      return 'This member is in as many groups as a member may be: take them out of one first.';
    case 'collection_synced_from_folder':
      return 'This collection mirrors a folder: its documents change when the folder does, not here.';
    case 'unknown_group':
      return 'A group chosen is no longer one of the organisation: reload the page and choose again.';
    case 'too_many_collections':
      return 'The organisation has as many collections as it may: delete one first.';
    case 'integration_unavailable':
      return 'The integration could not be reached, or it did not list its tools.';
    default:
      return f.message;
  }
}

/** Which of the member's own limits was reached, with their figures, and when it renews. */
function memberCapWords(f: ApiFailure): string {
  const b = f.body;
  const questions = b?.memberQuestionCap != null && (b.memberMonthToDateQuestions ?? 0) >= b.memberQuestionCap;
  const reached = questions
    ? `all ${b?.memberQuestionCap} of your questions for this month`
    : `your spending allowance for this month ($${b?.memberMonthToDateUsd?.toFixed(2) ?? '?'} of $${b?.memberCapUsd?.toFixed(2) ?? '?'})`;
  return `You have used ${reached}. It renews in ${days(f.retryAfter)}; your conversations stay readable meanwhile.`;
}

function days(secs?: number): string {
  if (secs === undefined) return 'a while';
  if (secs < 86_400) return waitWords(secs);
  const n = Math.ceil(secs / 86_400);
  return n === 1 ? '1 day' : `${n} days`;
}

export async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
  let resp: Response;
  try {
    resp = await fetch(path, {
      method,
      credentials: 'same-origin',
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch {
    throw new ApiFailure(0, 'network', 'network unreachable');
  }
  const text = await resp.text();
  const json = text ? safeJson(text) : null;
  if (!resp.ok) {
    const err = (json as ErrorBody | null)?.error;
    const retry = Number(resp.headers.get('retry-after'));
    throw new ApiFailure(
      resp.status,
      err?.code ?? `http_${resp.status}`,
      err?.message ?? resp.statusText,
      Number.isFinite(retry) && retry > 0 ? retry : undefined,
      (json as ErrorBody | null) ?? undefined,
    );
  }
  return json as T;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

const SESSIONS = '/api/managed-agents';

/** Where a member reads a document (the original is `${…}/original`). */
export function documentUrl(collectionId: string, documentId: string): string {
  return `/api/documents/${encodeURIComponent(collectionId)}/${encodeURIComponent(documentId)}`;
}

export const api = {
  me: () => call<Account>('GET', '/api/auth/me'),
  connections: () => call<Narrow<Schemas['ConnectionList'], { connections: Connection[] }>>('GET', '/api/integrations'),
  connect: (name: string) =>
    call<Schemas['ConnectStarted']>('POST', `/api/integrations/${encodeURIComponent(name)}/connect`),
  disconnect: (name: string) => call<Schemas['Done']>('DELETE', `/api/integrations/${encodeURIComponent(name)}/connection`),
  allowedTools: () => call<Schemas['AllowedToolList']>('GET', '/api/integrations/allowed-tools'),
  forgetAllowedTool: (integration: string, tool: string) =>
    call<Schemas['Done']>('DELETE', `/api/integrations/${encodeURIComponent(integration)}/allowed-tools/${encodeURIComponent(tool)}`),
  memory: () => call<MemoryPage>('GET', '/api/memory'),
  switchMemory: (enabled: boolean) => call<MemoryPage>('PUT', '/api/memory', { enabled } satisfies Schemas['MemorySwitch']),
  forgetNote: (id: string) => call<Schemas['Forgotten']>('DELETE', `/api/memory/notes/${encodeURIComponent(id)}`),
  forgetAllNotes: () => call<Schemas['Forgotten']>('DELETE', '/api/memory/notes'),
  logout: () => call<Schemas['Done']>('POST', '/api/auth/logout'),
  switchOrg: (orgId: string) =>
    call<Schemas['SwitchedOrg']>('POST', '/api/auth/switch-org', { orgId } satisfies Schemas['SwitchOrgRequest']),
  search: (q: string, limit = 20) =>
    call<Narrow<Schemas['SearchResults'], { results: SearchHit[] }>>('GET', `/api/search?${new URLSearchParams({ q, limit: String(limit) })}`),
  document: (collectionId: string, documentId: string) => call<ReaderDocument>('GET', documentUrl(collectionId, documentId)),
  passages: (collectionId: string, documentId: string, from: number, limit: number) =>
    call<PassageWindow>(
      'GET',
      `${documentUrl(collectionId, documentId)}/passages?${new URLSearchParams({ from: String(from), limit: String(limit) })}`,
    ),
  sessions: () => call<Schemas['SessionList']>('GET', `${SESSIONS}/sessions`),
  find: (q: string) => call<Schemas['FoundView']>('GET', `${SESSIONS}/find?${new URLSearchParams({ q })}`),
  rename: (sessionId: string, title: string) =>
    call<Schemas['Renamed']>('POST', `${SESSIONS}/rename`, { sessionId, title } satisfies Schemas['RenameRequest']),
  create: (text: string) =>
    call<Schemas['CreatedSessionView']>('POST', `${SESSIONS}/session`, { text } satisfies Schemas['CreateSessionRequest']),
  message: (sessionId: string, text: string) =>
    call<Schemas['Done']>('POST', `${SESSIONS}/message`, { sessionId, text } satisfies Schemas['MessageRequest']),
  approve: (sessionId: string, toolUseId: string, decision: Decision) =>
    call<Schemas['Answered']>('POST', `${SESSIONS}/approve`, { sessionId, toolUseId, decision } satisfies Schemas['ApproveRequest']),
  cancel: (sessionId: string) =>
    call<Schemas['Cancelled']>('POST', `${SESSIONS}/cancel`, { sessionId } satisfies Schemas['CancelRequest']),
  remove: (sessionId: string) =>
    call<Schemas['Done']>('DELETE', `${SESSIONS}/session?sessionId=${encodeURIComponent(sessionId)}`),
  transcript: (sessionId: string, since: string | null) => {
    const q = new URLSearchParams({ sessionId });
    if (since) q.set('sinceEventId', since);
    return call<TranscriptPage>('GET', `${SESSIONS}/transcript?${q}`);
  },
};
