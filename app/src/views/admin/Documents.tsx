// The organisation's documents: collections, each open to every member or to chosen groups
// (created, changed, deleted after a confirmation), the storage they use against the allowance,
// and, opened, a collection's documents (`CollectionDocuments.tsx`).
import { useEffect, useRef, useState } from 'preact/hooks';

import { ApiFailure } from '../../api';
import { type Access, type Collection, type Group, type Storage, admin } from '../../admin';
import { bytesWords } from '../../documents';
import { CollectionDocuments } from './CollectionDocuments';
import { NoticeLine, useNotice, when } from './common';

/** Groups a collection may be opened to at most (the service refuses more). */
const MAX_GROUPS = 20;

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
