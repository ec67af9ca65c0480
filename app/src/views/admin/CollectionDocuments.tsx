// A collection's documents, opened from the Documents page: files dropped or chosen, each with
// its progress while it is sent and then its status as it changes (the list read again every
// 2 s while any is on its way), why one failed, its size and passages; replaced by another
// file, or deleted after a confirmation. A collection mirrored from a folder is read-only here.
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiFailure } from '../../api';
import { type AdminDocument, type Collection, type Storage, admin } from '../../admin';
import { bytesWords, pollDelay, refusalOf, statusWords, uploadFailureWords } from '../../documents';
import { sendFile } from '../../upload';
import { NoticeLine, useNotice, when } from './common';

/** The files an admin may choose: the formats the service reads. */
const ACCEPT = '.md,.markdown,.txt,.text,.html,.htm,.pdf,.docx';

/** A file on its way: announced, then sent with its progress, or refused with the reason. */
interface Upload {
  key: number;
  name: string;
  /** The document it replaces, by name. */
  replacing?: string;
  loaded: number;
  total: number;
  failed?: string;
}

let uploadKeys = 0;

/** A collection's documents, and files to add to it or to replace its documents with. */
export function CollectionDocuments(props: { collection: Collection; storage: Storage; storageChanged: () => void; close: () => void }) {
  const { collection, storage } = props;
  const readOnly = collection.source === 'folder';
  const [documents, setDocuments] = useState<AdminDocument[] | null>(null);
  const [failures, setFailures] = useState(0);
  const [uploads, setUploads] = useState<Upload[]>([]);
  const [dragging, setDragging] = useState(false);
  const [heard, setHeard] = useState('');
  const { notice, busy, run } = useNotice();
  const heading = useRef<HTMLHeadingElement>(null);
  const replaceInput = useRef<HTMLInputElement>(null);
  const replacing = useRef<AdminDocument | null>(null);
  // Files are sent one after the other, in the order chosen.
  const queue = useRef<Promise<void>>(Promise.resolve());
  const live = useRef(true);
  const reads = useRef(0);
  const known = useRef(new Map<string, AdminDocument>());

  // The list as now stored; a status that became final is announced. A read overtaken by a later
  // one is dropped.
  const refresh = async () => {
    const read = ++reads.current;
    try {
      const { documents: found } = await admin.documents(collection.id);
      if (!live.current || read !== reads.current) return;
      const said: string[] = [];
      for (const d of found) {
        const before = known.current.get(d.id);
        if (!before || (before.status === d.status && before.generation === d.generation)) continue;
        if (d.status === 'indexed') said.push(`${d.name} is indexed: ${passagesWords(d.passages)}.`);
        if (d.status === 'failed') said.push(`${d.name} failed: ${d.reason ?? 'no reason was given'}.`);
      }
      known.current = new Map(found.map((d) => [d.id, d]));
      if (said.length) setHeard(said.join(' '));
      setDocuments(found);
      setFailures(0);
    } catch (e) {
      if (!live.current || read !== reads.current) return;
      setFailures((n) => n + 1);
      throw e;
    }
  };
  useEffect(() => {
    heading.current?.focus();
    void run(refresh);
    return () => {
      live.current = false;
    };
  }, []);
  // Read again every 2 s while a document is on its way (queued, or being uploaded), and not
  // otherwise.
  useEffect(() => {
    if (documents === null) return;
    const delay = pollDelay(documents, Date.now(), failures);
    if (delay === null) return;
    const timer = window.setTimeout(() => void refresh().catch(() => undefined), delay);
    return () => clearTimeout(timer);
  }, [documents, failures]);

  const change = (key: number, to: Partial<Upload>) => setUploads((all) => all.map((u) => (u.key === key ? { ...u, ...to } : u)));
  const send = async (file: File, key: number, replaced: AdminDocument | null) => {
    let announced: AdminDocument | null = null;
    try {
      const started = replaced
        ? await admin.replace(collection.id, replaced.id, file.name, file.size)
        : await admin.upload(collection.id, file.name, file.size);
      announced = started.document;
      // Known as uploading: its status once indexed (or failed) is announced.
      known.current.set(announced.id, announced);
      props.storageChanged();
      setDocuments((all) => [...(all ?? []).filter((d) => d.id !== started.document.id), started.document]);
      await sendFile(started.upload, file, (loaded, total) => change(key, { loaded, total }));
      setUploads((all) => all.filter((u) => u.key !== key));
    } catch (e) {
      // A new document whose bytes never arrived is taken back (a replaced one keeps waiting for
      // its file: it is uploaded again).
      if (announced && !replaced) await admin.deleteDocument(collection.id, announced.id).catch(() => undefined);
      const f = e instanceof ApiFailure ? e : new ApiFailure(0, 'network', String(e));
      change(key, { failed: uploadFailureWords(f, file.name, storage) });
      props.storageChanged();
    }
    await refresh().catch(() => undefined);
  };
  const add = (files: File[], replaced: AdminDocument | null = null) => {
    for (const file of files) {
      const key = ++uploadKeys;
      const refused = refusalOf(file, storage.maxFileBytes);
      setUploads((all) => [
        ...all,
        { key, name: file.name, replacing: replaced?.name, loaded: 0, total: file.size, failed: refused ?? undefined },
      ]);
      if (refused) continue;
      queue.current = queue.current.then(() => (live.current ? send(file, key, replaced) : undefined));
    }
  };
  const remove = (d: AdminDocument) => {
    if (!confirm(`Delete ${d.name}? It stops being found at once, and its original is removed.`)) return;
    void run(async () => {
      await admin.deleteDocument(collection.id, d.id);
      props.storageChanged();
      await refresh();
      return `${d.name} was deleted.`;
    });
  };
  const replace = (d: AdminDocument) => {
    replacing.current = d;
    replaceInput.current?.click();
  };

  const shown = documents ?? [];
  return (
    <section id="collection-documents" aria-labelledby="collection-documents-title" class="collection-documents">
      <div class="row">
        <h3 id="collection-documents-title" ref={heading} tabIndex={-1}>
          Documents of {collection.name}
        </h3>
        <button type="button" onClick={props.close} aria-label={`Close the documents of ${collection.name}`}>
          Close
        </button>
      </div>
      {readOnly ? (
        <p class="hint">This collection mirrors a folder: its documents change when the folder does, not here.</p>
      ) : (
        <div
          class={`dropzone${dragging ? ' dragging' : ''}`}
          onDragEnter={(e) => {
            e.preventDefault();
            setDragging(true);
          }}
          onDragOver={(e) => {
            e.preventDefault();
            if (e.dataTransfer) e.dataTransfer.dropEffect = 'copy';
          }}
          onDragLeave={(e) => {
            if (!(e.currentTarget as HTMLElement).contains(e.relatedTarget as Node | null)) setDragging(false);
          }}
          onDrop={(e) => {
            e.preventDefault();
            setDragging(false);
            add([...(e.dataTransfer?.files ?? [])]);
          }}
        >
          <p>Drop files here to add them to {collection.name}, or choose them.</p>
          <div class="field">
            <label for="upload-files">Files to upload</label>
            <input
              id="upload-files"
              type="file"
              multiple
              accept={ACCEPT}
              aria-describedby="upload-hint"
              onChange={(e) => {
                const input = e.target as HTMLInputElement;
                add([...(input.files ?? [])]);
                input.value = '';
              }}
            />
          </div>
          <p id="upload-hint" class="hint">
            Markdown, text, HTML, PDF or DOCX, up to {bytesWords(storage.maxFileBytes)} each.
          </p>
          <input
            type="file"
            hidden
            accept={ACCEPT}
            ref={replaceInput}
            onChange={(e) => {
              const input = e.target as HTMLInputElement;
              const d = replacing.current;
              replacing.current = null;
              if (d && input.files?.[0]) add([input.files[0]], d);
              input.value = '';
            }}
          />
        </div>
      )}
      {uploads.length > 0 && (
        <ul class="uploads" aria-label="Files being sent">
          {uploads.map((u) => (
            <li key={u.key} class={u.failed ? 'failed' : ''}>
              {u.failed ? (
                <>
                  <span class="problem" role="alert">
                    {u.failed}
                  </span>
                  <button type="button" class="quiet" onClick={() => setUploads((all) => all.filter((x) => x.key !== u.key))} aria-label={`Dismiss: ${u.name}`}>
                    Dismiss
                  </button>
                </>
              ) : (
                <>
                  <label for={`upload-${u.key}`}>{u.replacing ? `${u.name} (replacing ${u.replacing})` : u.name}</label>
                  <progress id={`upload-${u.key}`} max={Math.max(u.total, 1)} value={u.loaded} />
                  <span class="hint">{u.total ? `${Math.floor((100 * u.loaded) / u.total)}%` : ''}</span>
                </>
              )}
            </li>
          ))}
        </ul>
      )}
      <div class="visually-hidden" aria-live="polite">
        {heard}
      </div>
      {documents !== null && documents.length === 0 && <p class="hint">No documents in this collection yet.</p>}
      {shown.length > 0 && (
        <table class="stack documents">
          <caption class="visually-hidden">Documents of {collection.name}</caption>
          <thead>
            <tr>
              <th scope="col">Document</th>
              <th scope="col">Status</th>
              <th scope="col">Size</th>
              <th scope="col">Passages</th>
              <th scope="col">Changed</th>
              {!readOnly && <th scope="col">Actions</th>}
            </tr>
          </thead>
          <tbody>
            {shown.map((d) => (
              <tr key={d.id}>
                <th scope="row">{d.name}</th>
                <td data-label="Status" data-status={d.status}>
                  <span class={`status ${d.status}`}>{statusWords(d.status, d.indexing)}</span>
                  {d.status === 'failed' && d.reason && <span class="reason">{d.reason}</span>}
                </td>
                <td data-label="Size">{bytesWords(d.bytes)}</td>
                <td data-label="Passages">{d.status === 'indexed' ? d.passages : '–'}</td>
                <td data-label="Changed">{when(d.updatedAt)}</td>
                {!readOnly && (
                  <td class="actions">
                    <button type="button" disabled={busy} onClick={() => replace(d)} aria-label={`Replace: ${d.name}`}>
                      Replace
                    </button>
                    <button type="button" class="danger" disabled={busy} onClick={() => remove(d)} aria-label={`Delete: ${d.name}`}>
                      Delete
                    </button>
                  </td>
                )}
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <NoticeLine notice={notice} />
    </section>
  );
}

function passagesWords(n: number): string {
  return n === 1 ? '1 passage' : `${n} passages`;
}
