// The organisation's documents: collections, each open to every member or to chosen groups
// (created, changed, deleted after a confirmation), the storage they use against the allowance,
// and, opened, a collection's documents: files dropped or chosen, each with its progress while it
// is sent and then its status as it changes (the list read again every 2 s while any is on its
// way), why one failed, its size and passages; replaced by another file, or deleted after a
// confirmation. A collection mirrored from a folder is read-only here.
import { useEffect, useRef, useState } from 'preact/hooks';

import { ApiFailure } from '../../api';
import { type Access, type AdminDocument, type Collection, type Group, type Storage, admin } from '../../admin';
import { bytesWords, pollDelay, refusalOf, statusWords, uploadFailureWords } from '../../documents';
import { sendFile } from '../../upload';
import { NoticeLine, useNotice, when } from './common';

/** Groups a collection may be opened to at most (the service refuses more). */
const MAX_GROUPS = 20;
/** The formats the service reads, for the file chooser. */
const ACCEPT = '.md,.markdown,.txt,.text,.html,.htm,.pdf,.docx';

type Listing = { collections: Collection[]; storage: Storage };

/** Who may open `c`, in words. */
function accessWords(access: Access, groups: Group[]): string {
  if (access.kind === 'everyone') return 'Every member';
  const names = (access.groups ?? []).map((id) => groups.find((g) => g.id === id)?.displayName ?? 'a deleted group');
  return names.length === 0 ? 'Admins only (no group chosen)' : `Members of ${names.join(', ')}`;
}

export function Documents() {
  const [listing, setListing] = useState<Listing | null>(null);
  const [groups, setGroups] = useState<Group[]>([]);
  // The form shown: a new collection's, or an existing one's (by id).
  const [editing, setEditing] = useState<'new' | string | null>(null);
  const [openId, setOpenId] = useState<string | null>(null);
  const { notice, setNotice, busy, run } = useNotice();
  const section = useRef<HTMLElement>(null);
  // The button that takes the focus back when a form or a collection's documents close.
  const focusAfter = useRef<string | null>(null);
  useEffect(() => {
    const selector = focusAfter.current;
    if (selector === null || busy) return;
    focusAfter.current = null;
    section.current?.querySelector<HTMLElement>(selector)?.focus();
  }, [listing, editing, openId, busy]);

  const reload = async () => {
    const [l, g] = await Promise.all([admin.collections(), admin.groups()]);
    setListing(l);
    setGroups(g.groups);
  };
  // The storage counts what is announced and deleted: read again after each.
  const storageChanged = () => void admin.collections().then(setListing, () => undefined);
  useEffect(() => void run(reload), []);

  const closeForm = () => {
    focusAfter.current = editing === 'new' || editing === null ? 'button.new-collection' : `button[data-edit="${CSS.escape(editing)}"]`;
    setEditing(null);
  };
  const save = (fields: { name: string; description: string; access: Access }) =>
    run(async () => {
      try {
        const c = editing === 'new' ? await admin.createCollection(fields.name, fields.description, fields.access) : await admin.changeCollection(editing!, fields);
        await reload();
        closeForm();
        return editing === 'new' ? `The collection ${c.name} was created.` : `The collection ${c.name} was saved.`;
      } catch (e) {
        // The service's code is shared with a member's groups: said here of the collection.
        if (!(e instanceof ApiFailure && e.code === 'too_many_groups')) throw e;
        setNotice({ kind: 'failed', text: `A collection may be opened to at most ${MAX_GROUPS} groups.` });
      }
    });
  const remove = (c: Collection) => {
    if (!confirm(`Delete the collection ${c.name} with every document in it? They stop being found at once; this cannot be undone.`)) return;
    void run(async () => {
      await admin.deleteCollection(c.id);
      if (openId === c.id) setOpenId(null);
      if (editing === c.id) setEditing(null);
      await reload();
      return `The collection ${c.name} was deleted.`;
    });
  };
  const closeDocuments = (c: Collection) => {
    focusAfter.current = `button[data-documents="${CSS.escape(c.id)}"]`;
    setOpenId(null);
  };

  const collections = listing?.collections ?? [];
  const open = collections.find((c) => c.id === openId) ?? null;
  const edited = editing && editing !== 'new' ? (collections.find((c) => c.id === editing) ?? null) : null;
  const storage = listing?.storage;
  return (
    <section aria-labelledby="documents-title" ref={section}>
      <h2 id="documents-title">Documents</h2>
      <p class="hint">
        Collections of documents the assistant searches and cites, each open to every member or to chosen groups. A member finds only what
        they may open.
      </p>
      {storage && <StorageMeter storage={storage} />}
      <table class="stack">
        <caption class="visually-hidden">Collections, who may open them, and their actions</caption>
        <thead>
          <tr>
            <th scope="col">Collection</th>
            <th scope="col">Who may open it</th>
            <th scope="col">Source</th>
            <th scope="col">Changed</th>
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
          {collections.map((c) => (
            <tr key={c.id}>
              <th scope="row">
                {c.name}
                {c.description && <div class="hint description">{c.description}</div>}
              </th>
              <td data-label="Who may open it">{accessWords(c.access, groups)}</td>
              <td data-label="Source">
                {c.source === 'folder' ? (
                  <>
                    <span class="pill">Folder</span> <span class="hint">mirrored from a folder, read-only</span>
                  </>
                ) : (
                  <span class="pill">Uploads</span>
                )}
              </td>
              <td data-label="Changed">{when(c.updatedAt)}</td>
              <td class="actions">
                <button
                  type="button"
                  data-documents={c.id}
                  aria-expanded={openId === c.id}
                  aria-controls={openId === c.id ? 'collection-documents' : undefined}
                  onClick={() => (openId === c.id ? closeDocuments(c) : setOpenId(c.id))}
                  aria-label={`Documents: ${c.name}`}
                >
                  Documents
                </button>
                <button
                  type="button"
                  disabled={busy}
                  data-edit={c.id}
                  aria-expanded={editing === c.id}
                  onClick={() => (editing === c.id ? closeForm() : setEditing(c.id))}
                  aria-label={`Edit: ${c.name}`}
                >
                  Edit
                </button>
                {c.source === 'upload' && (
                  <button type="button" class="danger" disabled={busy} onClick={() => remove(c)} aria-label={`Delete: ${c.name}`}>
                    Delete
                  </button>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {listing === null && !notice && <p class="hint">Loading…</p>}
      {listing?.collections.length === 0 && <p class="hint">No collections yet.</p>}
      <NoticeLine notice={notice} />
      {editing !== null && (editing === 'new' || edited) ? (
        <CollectionForm key={editing} collection={edited} groups={groups} busy={busy} save={(f) => void save(f)} cancel={closeForm} />
      ) : (
        <div class="row">
          <button type="button" class="new-collection" onClick={() => setEditing('new')}>
            New collection
          </button>
        </div>
      )}
      {open && storage && (
        <CollectionDocuments key={open.id} collection={open} storage={storage} storageChanged={storageChanged} close={() => closeDocuments(open)} />
      )}
    </section>
  );
}

/** The storage the organisation's originals use, against its allowance. */
function StorageMeter({ storage }: { storage: Storage }) {
  const { usedBytes, allowanceBytes, maxFileBytes } = storage;
  const max = Math.max(allowanceBytes, 1);
  return (
    <div class="storage">
      <label for="storage-meter">Storage used</label>
      <meter id="storage-meter" min={0} max={max} high={max * 0.9} optimum={0} value={usedBytes} aria-describedby="storage-words" />
      <p id="storage-words" class="hint">
        {bytesWords(usedBytes)} of {bytesWords(allowanceBytes)}; a file may be at most {bytesWords(maxFileBytes)}.
      </p>
    </div>
  );
}

/** A collection's name, description and who may open it: a new one, or `collection`'s. */
function CollectionForm(props: {
  collection: Collection | null;
  groups: Group[];
  busy: boolean;
  save: (fields: { name: string; description: string; access: Access }) => void;
  cancel: () => void;
}) {
  const { collection, groups } = props;
  const [name, setName] = useState(collection?.name ?? '');
  const [description, setDescription] = useState(collection?.description ?? '');
  const [kind, setKind] = useState<Access['kind']>(collection?.access.kind ?? 'everyone');
  const [chosen, setChosen] = useState<string[]>(collection?.access.groups ?? []);
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => heading.current?.focus(), []);
  const title = collection ? `Edit ${collection.name}` : 'New collection';
  const full = chosen.length >= MAX_GROUPS;
  const toggle = (id: string, on: boolean) => setChosen((c) => (on ? [...c.filter((g) => g !== id), id] : c.filter((g) => g !== id)));

  return (
    <form
      class="collection-form"
      aria-labelledby="collection-form-title"
      onKeyDown={(e) => e.key === 'Escape' && props.cancel()}
      onSubmit={(e) => {
        e.preventDefault();
        const access: Access = kind === 'everyone' ? { kind } : { kind, groups: chosen };
        props.save({ name: name.trim(), description: description.trim(), access });
      }}
    >
      <h3 id="collection-form-title" ref={heading} tabIndex={-1}>
        {title}
      </h3>
      <div class="field">
        <label for="collection-name">Name</label>
        <input id="collection-name" required maxLength={256} value={name} onInput={(e) => setName((e.target as HTMLInputElement).value)} />
      </div>
      <div class="field">
        <label for="collection-description">Description</label>
        <textarea
          id="collection-description"
          rows={2}
          maxLength={1000}
          value={description}
          onInput={(e) => setDescription((e.target as HTMLTextAreaElement).value)}
        />
      </div>
      <fieldset class="access">
        <legend>Who may open it</legend>
        <div class="choice">
          <input id="access-everyone" type="radio" name="access" checked={kind === 'everyone'} onChange={() => setKind('everyone')} />
          <label for="access-everyone">Every member</label>
        </div>
        <div class="choice">
          <input id="access-groups" type="radio" name="access" checked={kind === 'groups'} onChange={() => setKind('groups')} />
          <label for="access-groups">Members of the groups chosen</label>
        </div>
        {kind === 'groups' && (
          <fieldset class="groups">
            <legend>Groups</legend>
            {groups.length === 0 && (
              <p class="hint">
                The organisation has no groups yet: make them under <a href="/admin/groups">Groups</a>, or have the identity provider push them.
              </p>
            )}
            {groups.map((g) => {
              const on = chosen.includes(g.id);
              return (
                <div class="choice" key={g.id}>
                  <input
                    id={`access-group-${g.id}`}
                    type="checkbox"
                    checked={on}
                    disabled={!on && full}
                    onChange={(e) => toggle(g.id, (e.target as HTMLInputElement).checked)}
                  />
                  <label for={`access-group-${g.id}`}>
                    {g.displayName}
                    {g.source === 'scim' && <span class="hint"> (pushed by the identity provider)</span>}
                  </label>
                </div>
              );
            })}
            {chosen.length === 0 && groups.length > 0 && <p class="hint">With no group chosen, only admins may open it.</p>}
            {full && <p class="hint">A collection may be opened to at most {MAX_GROUPS} groups.</p>}
          </fieldset>
        )}
      </fieldset>
      <div class="row">
        <button type="submit" disabled={props.busy}>
          {collection ? 'Save collection' : 'Create collection'}
        </button>
        <button type="button" onClick={props.cancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

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
function CollectionDocuments(props: { collection: Collection; storage: Storage; storageChanged: () => void; close: () => void }) {
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
                  <span class={`status ${d.status}`}>{statusWords(d.status)}</span>
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
