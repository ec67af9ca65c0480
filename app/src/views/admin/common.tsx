// What the admin pages share: a section's notice (done, or failed in words), a read-only field
// with a copy button, and running an action with its outcome shown.
import { useState } from 'preact/hooks';

import { ApiFailure, explain } from '../../api';

export type Notice = { kind: 'done' | 'failed'; text: string } | null;

export function describe(e: unknown): string {
  return e instanceof ApiFailure ? explain(e) : String(e);
}

/** The outcome of the section's last action: announced politely when done, as an alert when not. */
export function NoticeLine({ notice }: { notice: Notice }) {
  if (!notice) return null;
  return notice.kind === 'done' ? (
    <p role="status" class="done">
      {notice.text}
    </p>
  ) : (
    <p role="alert" class="problem">
      {notice.text}
    </p>
  );
}

/** A section's notice, and `run` to perform an action that sets it. */
export function useNotice() {
  const [notice, setNotice] = useState<Notice>(null);
  const [busy, setBusy] = useState(false);
  const run = async (action: () => Promise<string | void>) => {
    setBusy(true);
    setNotice(null);
    try {
      const done = await action();
      if (done) setNotice({ kind: 'done', text: done });
    } catch (e) {
      setNotice({ kind: 'failed', text: describe(e) });
    } finally {
      setBusy(false);
    }
  };
  return { notice, setNotice, busy, run };
}

/** A value to copy: a read-only field with its label and a Copy button. */
export function CopyField({ id, label, value }: { id: string; label: string; value: string }) {
  const [copied, setCopied] = useState(false);
  return (
    <div class="copyfield">
      <label for={id}>{label}</label>
      <div>
        <input id={id} readOnly value={value} onFocus={(e) => (e.target as HTMLInputElement).select()} />
        <button
          type="button"
          aria-label={`${copied ? 'Copied' : 'Copy'}: ${label}`}
          onClick={() => {
            void navigator.clipboard?.writeText(value).then(() => setCopied(true), () => setCopied(false));
          }}
        >
          {copied ? 'Copied' : 'Copy'}
        </button>
      </div>
    </div>
  );
}

export function when(iso: string | null | undefined): string {
  return iso ? new Date(iso).toLocaleString() : '';
}
