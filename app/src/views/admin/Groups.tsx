// Groups of the organisation's members, which collections of documents are opened to: those
// the identity provider pushes over SCIM (shown with their members, read-only: it owns them) and
// those admins make where there is no SCIM: created, renamed, deleted (confirmed), and opened to
// see their members, add one picked by userName, or take one out.
import { useEffect, useRef, useState } from 'preact/hooks';

import { type AdminMember, type Group, admin, memberName } from '../../admin';
import { NoticeLine, useNotice, when } from './common';

type Run = (action: () => Promise<string | void>) => Promise<void>;

/** A member as the picker lists them: by userName, with the display name when there is one. */
function pickName(m: AdminMember): string {
  if (!m.userName) return memberName(m);
  return m.displayName ? `${m.userName} (${m.displayName})` : m.userName;
}

const byUserId = (a: AdminMember, b: AdminMember) => (a.userId < b.userId ? -1 : a.userId > b.userId ? 1 : 0);

export function Groups() {
  // `null` until first read: the empty list is said only once it is known to be empty.
  const [groups, setGroups] = useState<Group[] | null>(null);
  const [newName, setNewName] = useState('');
  const [renaming, setRenaming] = useState<string | null>(null);
  const [openId, setOpenId] = useState<string | null>(null);
  const { notice, busy, run } = useNotice();
  // The group whose Rename or Members button takes the focus back when its form or panel closes.
  const table = useRef<HTMLTableElement>(null);
  const focusAfter = useRef<{ id: string; button: 'rename' | 'members' } | null>(null);
  useEffect(() => {
    const after = focusAfter.current;
    if (after === null || busy) return;
    focusAfter.current = null;
    table.current?.querySelector<HTMLButtonElement>(`button[data-${after.button}="${CSS.escape(after.id)}"]`)?.focus();
  }, [groups, renaming, openId, busy]);

  const reload = async () => setGroups((await admin.groups()).groups);
  useEffect(() => void run(reload), []);

  const create = () =>
    run(async () => {
      const g = await admin.createGroup(newName.trim());
      await reload();
      setNewName('');
      return `The group ${g.displayName} was created.`;
    });
  const closeRename = (g: Group) => {
    focusAfter.current = { id: g.id, button: 'rename' };
    setRenaming(null);
  };
  const rename = (g: Group, name: string) =>
    run(async () => {
      const renamed = await admin.renameGroup(g.id, name.trim());
      await reload();
      closeRename(g);
      return `${g.displayName} is now called ${renamed.displayName}.`;
    });
  const remove = (g: Group) => {
    if (!confirm(`Delete the group ${g.displayName}? Its members stay in the organisation.`)) return;
    void run(async () => {
      await admin.deleteGroup(g.id);
      if (openId === g.id) setOpenId(null);
      if (renaming === g.id) setRenaming(null);
      await reload();
      return `The group ${g.displayName} was deleted.`;
    });
  };
  const closeMembers = (g: Group) => {
    focusAfter.current = { id: g.id, button: 'members' };
    setOpenId(null);
  };
  const shown = groups ?? [];
  const open = shown.find((g) => g.id === openId) ?? null;

  return (
    <section aria-labelledby="groups-title">
      <h2 id="groups-title">Groups</h2>
      <p class="hint">
        Groups are sets of members; collections of documents are opened to them (under Documents). Groups your identity provider pushes over SCIM are
        read-only here: change them at the provider.
      </p>
      <table class="stack" ref={table}>
        <caption class="visually-hidden">Groups, where they come from, and their actions</caption>
        <thead>
          <tr>
            <th scope="col">Group</th>
            <th scope="col">Source</th>
            <th scope="col">Changed</th>
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
          {shown.map((g) => (
            <tr key={g.id}>
              <th scope="row">{g.displayName}</th>
              <td data-label="Source">
                {g.source === 'scim' ? (
                  <>
                    <span class="pill">SCIM</span> <span class="hint">pushed by the identity provider, read-only</span>
                  </>
                ) : (
                  <span class="pill">Admin</span>
                )}
              </td>
              <td data-label="Changed">{when(g.updatedAt)}</td>
              <td class="actions">
                <button
                  type="button"
                  disabled={busy}
                  data-members={g.id}
                  aria-expanded={openId === g.id}
                  aria-controls={openId === g.id ? 'group-members' : undefined}
                  onClick={() => (openId === g.id ? closeMembers(g) : setOpenId(g.id))}
                  aria-label={`Members: ${g.displayName}`}
                >
                  Members
                </button>
                {g.source === 'admin' && (
                  <>
                    <button
                      type="button"
                      disabled={busy}
                      data-rename={g.id}
                      aria-expanded={renaming === g.id}
                      onClick={() => (renaming === g.id ? closeRename(g) : setRenaming(g.id))}
                      aria-label={`Rename: ${g.displayName}`}
                    >
                      Rename
                    </button>
                    <button type="button" class="danger" disabled={busy} onClick={() => remove(g)} aria-label={`Delete: ${g.displayName}`}>
                      Delete
                    </button>
                  </>
                )}
                {renaming === g.id && (
                  <RenameForm group={g} busy={busy} save={(name) => void rename(g, name)} cancel={() => closeRename(g)} />
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {groups === null && !notice && <p class="hint">Loading…</p>}
      {groups?.length === 0 && <p class="hint">No groups yet.</p>}
      <NoticeLine notice={notice} />
      {open && <GroupMembers key={open.id} group={open} busy={busy} run={run} close={() => closeMembers(open)} />}
      <h3>Create a group</h3>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void create();
        }}
      >
        <div class="field">
          <label for="new-group">Group name</label>
          <input id="new-group" required maxLength={256} value={newName} onInput={(e) => setNewName((e.target as HTMLInputElement).value)} aria-describedby="new-group-hint" />
          <p id="new-group-hint" class="hint">
            Unique in the organisation in any letter case; admin and viewer are roles, not groups.
          </p>
        </div>
        <button type="submit" disabled={busy}>
          Create group
        </button>
      </form>
    </section>
  );
}

/** A group's new name, in its row. */
function RenameForm(props: { group: Group; busy: boolean; save: (name: string) => void; cancel: () => void }) {
  const [name, setName] = useState(props.group.displayName);
  const input = useRef<HTMLInputElement>(null);
  useEffect(() => input.current?.select(), []);
  return (
    <form
      class="rename"
      aria-label={`Rename ${props.group.displayName}`}
      onKeyDown={(e) => e.key === 'Escape' && props.cancel()}
      onSubmit={(e) => {
        e.preventDefault();
        props.save(name);
      }}
    >
      <div class="field">
        <label for="group-rename">New name</label>
        <input id="group-rename" ref={input} required maxLength={256} value={name} onInput={(e) => setName((e.target as HTMLInputElement).value)} />
      </div>
      <div class="row">
        <button type="submit" disabled={props.busy}>
          Save name
        </button>
        <button type="button" onClick={props.cancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

/** An opened group: its members a page at a time and, for an admin's group, a member to add (picked
 *  by userName from the organisation's members, searched) and each one's Remove. */
function GroupMembers(props: { group: Group; busy: boolean; run: Run; close: () => void }) {
  const { group, busy, run } = props;
  const readOnly = group.source === 'scim';
  const [members, setMembers] = useState<AdminMember[] | null>(null);
  const [next, setNext] = useState<string | null>(null);
  const [candidates, setCandidates] = useState<AdminMember[]>([]);
  const [find, setFind] = useState('');
  const [chosen, setChosen] = useState('');
  const heading = useRef<HTMLHeadingElement>(null);

  const page = async (after?: string) => {
    const p = await admin.groupMembers(group.id, after);
    setMembers((shown) => (after && shown ? [...shown, ...p.members] : p.members));
    setNext(p.next ?? null);
  };
  const search = async (q: string) => {
    const found = await admin.members({ q: q.trim() || undefined });
    setCandidates(found.members);
    setChosen('');
  };
  useEffect(() => {
    heading.current?.focus();
    void run(async () => {
      await page();
      if (!readOnly) await search('');
    });
  }, []);

  const inGroup = new Set((members ?? []).map((m) => m.userId));
  const pickable = candidates.filter((m) => !inGroup.has(m.userId));
  const add = () =>
    run(async () => {
      const m = candidates.find((c) => c.userId === chosen);
      if (!m) return;
      const r = await admin.addToGroup(group.id, m.userId);
      if (r.added) setMembers((shown) => [...(shown ?? []), m].sort(byUserId));
      setChosen('');
      return r.added ? `${memberName(m)} is now in ${group.displayName}.` : `${memberName(m)} was in ${group.displayName} already.`;
    });
  const remove = (m: AdminMember) =>
    run(async () => {
      const r = await admin.removeFromGroup(group.id, m.userId);
      setMembers((shown) => (shown ?? []).filter((s) => s.userId !== m.userId));
      return r.removed ? `${memberName(m)} is no longer in ${group.displayName}.` : `${memberName(m)} was not in ${group.displayName}.`;
    });

  return (
    <section id="group-members" aria-labelledby="group-members-title" class="group-members">
      <div class="row">
        <h3 id="group-members-title" ref={heading} tabIndex={-1}>
          Members of {group.displayName}
        </h3>
        <button type="button" onClick={props.close} aria-label={`Close the members of ${group.displayName}`}>
          Close
        </button>
      </div>
      {readOnly && (
        <p class="hint">
          The identity provider pushed this group{group.externalId ? ` (its id there: ${group.externalId})` : ''}: its name and members change
          there.
        </p>
      )}
      {members !== null && members.length === 0 && <p class="hint">Nobody is in this group yet.</p>}
      {members !== null && members.length > 0 && (
        <table class="stack">
          <caption class="visually-hidden">Members of {group.displayName}</caption>
          <thead>
            <tr>
              <th scope="col">Member</th>
              <th scope="col">Role</th>
              {!readOnly && <th scope="col">Actions</th>}
            </tr>
          </thead>
          <tbody>
            {members.map((m) => (
              <tr key={m.userId}>
                <th scope="row">
                  {memberName(m)}
                  {m.userName && m.displayName && <div class="hint">{m.userName}</div>}
                </th>
                <td data-label="Role">{m.role}</td>
                {!readOnly && (
                  <td class="actions">
                    <button type="button" disabled={busy} onClick={() => void remove(m)} aria-label={`Take out of ${group.displayName}: ${memberName(m)}`}>
                      Take out
                    </button>
                  </td>
                )}
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {next && (
        <button type="button" disabled={busy} onClick={() => void run(() => page(next))}>
          More members of {group.displayName}
        </button>
      )}
      {!readOnly && (
        <>
          <form
            role="search"
            class="row"
            onSubmit={(e) => {
              e.preventDefault();
              void run(() => search(find));
            }}
          >
            <label for="group-find">Find a member to add</label>
            <input id="group-find" type="search" value={find} onInput={(e) => setFind((e.target as HTMLInputElement).value)} />
            <button type="submit" disabled={busy}>
              Find
            </button>
          </form>
          <form
            onSubmit={(e) => {
              e.preventDefault();
              void add();
            }}
          >
            <div class="field">
              <label for="group-add">Member to add</label>
              <select id="group-add" required value={chosen} onChange={(e) => setChosen((e.target as HTMLSelectElement).value)}>
                <option value="">{pickable.length ? 'Choose by userName…' : 'No member to add here'}</option>
                {pickable.map((m) => (
                  <option key={m.userId} value={m.userId}>
                    {pickName(m)}
                  </option>
                ))}
              </select>
            </div>
            <button type="submit" disabled={busy}>
              Add to group
            </button>
          </form>
        </>
      )}
    </section>
  );
}
