// The service's JSON, as docs/openapi.json describes it: only the parts the app reads.

export interface TextPayload {
  text: string;
}

export type EventBody =
  | { type: 'user_message'; payload: TextPayload }
  | { type: 'agent_message'; payload: TextPayload }
  | { type: 'tool_use'; payload: { tool: string; input: unknown } }
  | { type: 'tool_result'; payload: { tool: string; output: unknown } }
  | { type: 'status_idle'; payload: Record<string, never> }
  | { type: 'status_terminated'; payload: { reason: string } }
  | { type: 'error'; payload: { code: string; message: string } };

export type WireEvent = EventBody & { id: string; occurredAt: string };

export interface TranscriptPage {
  title: string;
  workflowRunId: string | null;
  events: WireEvent[];
  hasMore: boolean;
  backfillFailed?: boolean;
  /** The answer being written now, while the turn waits on it (beside the interface's fields). */
  draft?: { text: string; updatedAt: string };
}

export interface SessionSummary {
  id: string;
  title: string;
  updatedAt: string;
}

export interface OrgView {
  id: string;
  name: string;
  role: 'admin' | 'viewer';
}

export interface Account {
  user: { id: string; userName?: string | null; displayName?: string | null };
  org: OrgView;
  orgs: OrgView[];
}

/** The service's error body: `{"error": {"code", "message"}}`, with the limits' extras. */
export interface ErrorBody {
  error: { code: string; message: string };
  retryAfterSeconds?: number;
  monthToDateUsd?: number;
  capUsd?: number;
  /** With `member_cap_reached`: the member's own month against their allowance. */
  memberMonthToDateUsd?: number;
  memberCapUsd?: number;
  memberMonthToDateQuestions?: number;
  memberQuestionCap?: number;
}

/** One OAuth integration of the organisation as the member sees it (never a token). */
/** One note the assistant keeps about the member. */
export interface Note {
  id: string;
  text: string;
  savedAt: string;
  sessionId?: string;
}

/** `GET /api/memory`. */
export interface MemoryPage {
  enabled: boolean;
  organisationEnabled: boolean;
  notes: Note[];
  maxNotes: number;
  maxNoteChars: number;
}

export interface Connection {
  integration: string;
  kind: 'member' | 'organisation';
  issuer: string;
  state: 'not_connected' | 'connected' | 'needs_reconnect';
  reason?: string;
  connectedBy?: string;
  connectedAt?: string;
  scope?: string;
}
