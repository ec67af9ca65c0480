// The app: who is signed in (or the sign-in page), the sidebar and the open conversation, or
// the admin area. The URL names the conversation (/c/<id>), so a reload resumes it from the
// log, or the admin section (/admin/<section>), or a reading page in the hash of `/` (a search's
// results, a document at a passage: routes.ts). A link to a reading page (a citation in an
// answer among them) opens it in place.
import { render } from 'preact';
import { useCallback, useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';

import { ApiFailure, api, explain } from './api';
import { Chat } from './views/Chat';
import { ChatLayout, focusComposer } from './views/ChatLayout';
import { Connections } from './views/Connections';
import { DocumentPage } from './views/Document';
import { Memory } from './views/Memory';
import { OwnUsage } from './views/OwnUsage';
import { SearchPage } from './views/Search';
import { Sidebar } from './views/Sidebar';
import { Admin, type Section, sectionFromPath, sectionName } from './views/admin/Admin';
import { SignIn } from './views/SignIn';
import { type Reading, readingFromLocation } from './routes';
import { listedTitle } from './transcript';
import type { Account, SessionSummary } from './wire';

function sessionFromPath(): string | null {
  const m = location.pathname.match(/^\/c\/([\w-]{1,128})$/);
  return m ? decodeURIComponent(m[1]) : null;
}

/** The member's own pages beside the chat. */
type Page = 'connections' | 'memory' | 'usage';
const PAGE_TITLES: Record<Page, string> = { connections: 'Connections', memory: 'Memory', usage: 'Your usage' };

function pageFromPath(): Page | null {
  const page = location.pathname.slice(1);
  return Object.hasOwn(PAGE_TITLES, page) ? (page as Page) : null;
}

/** A reading page's title: the search's, or the document's name once read. */
function readingTitle(reading: Reading, documentName: string | null): string {
  return reading.kind === 'search' ? 'Search documents' : (documentName ?? 'Document');
}

function App() {
  const [account, setAccount] = useState<Account | null | 'signed-out'>(null);
  const [sessions, setSessions] = useState<SessionSummary[]>([]);
  const [current, setCurrent] = useState<string | null>(sessionFromPath());
  const [section, setSection] = useState<Section | null>(sectionFromPath(location.pathname));
  const [page, setPage] = useState<Page | null>(pageFromPath());
  const [reading, setReading] = useState<Reading | null>(readingFromLocation());
  // The open document's name, for the tab's title.
  const [documentName, setDocumentName] = useState<string | null>(null);
  const [problem, setProblem] = useState<string | null>(null);

  useEffect(() => {
    api
      .me()
      .then(setAccount)
      .catch((e) => (e instanceof ApiFailure && e.status === 401 ? setAccount('signed-out') : setProblem(explain(e))));
    const onPop = () => {
      setCurrent(sessionFromPath());
      setSection(sectionFromPath(location.pathname));
      setPage(pageFromPath());
      setReading(readingFromLocation());
      setDocumentName(null);
    };
    window.addEventListener('popstate', onPop);
    window.addEventListener('hashchange', onPop);
    return () => {
      window.removeEventListener('popstate', onPop);
      window.removeEventListener('hashchange', onPop);
    };
  }, []);

  // A plain click on a link to a reading page (`/#/…`: a search result, a citation in an
  // answer, a cited source) opens it here, without loading the app again; a click with a
  // modifier key is the browser's (a new tab).
  const goRef = useRef<(path: string) => void>(() => {});
  useEffect(() => {
    const onClick = (e: MouseEvent) => {
      if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
      const link = (e.target as Element | null)?.closest?.('a');
      const href = link?.getAttribute('href');
      if (!link || !href?.startsWith('/#/') || (link.target && link.target !== '_self')) return;
      e.preventDefault();
      goRef.current(href);
    };
    document.addEventListener('click', onClick);
    return () => document.removeEventListener('click', onClick);
  }, []);

  // The sidebar's list, read again after each change. A network failure here is not shown (the
  // conversation says it, and retries); the list is read again when the network returns, and
  // when a turn ends if the last read failed. Otherwise a turn's end needs no read: the session
  // went first when its message was sent, and the list shows no times.
  const stale = useRef(false);
  // Reads are numbered: an answer to one overtaken by a later read is dropped, so an older list
  // never replaces a newer one.
  const reads = useRef(0);
  const refresh = useCallback(() => {
    const read = ++reads.current;
    api
      .sessions()
      .then((r) => {
        if (read !== reads.current) return;
        stale.current = false;
        setSessions(r.sessions);
        setProblem(null);
      })
      .catch((e) => {
        if (read !== reads.current) return;
        stale.current = true;
        if (!(e instanceof ApiFailure && e.transient)) setProblem(e instanceof ApiFailure ? explain(e) : String(e));
      });
  }, []);
  const settled = useCallback(() => {
    if (stale.current) refresh();
  }, [refresh]);
  useEffect(() => {
    if (!account || account === 'signed-out' || section) return;
    refresh();
    window.addEventListener('online', refresh);
    return () => window.removeEventListener('online', refresh);
  }, [account, refresh, section]);

  // The tab is titled after what it shows: the open conversation, or the page ("Usage – Admin").
  useEffect(() => {
    const listed = sessions.find((s) => s.id === current)?.title;
    const title = section
      ? `${sectionName(section)} – Admin`
      : reading
        ? readingTitle(reading, documentName)
        : page
          ? PAGE_TITLES[page]
          : listed && listedTitle(listed);
    document.title = title ? `${title} – Knowledge` : 'Knowledge';
  }, [current, sessions, section, page, reading, documentName]);

  // A conversation (or a new chat) opened by the member's choice is ready for typing: the focus
  // goes to its message box as soon as it is drawn (a layout effect: before the next key is
  // handled), whether or not the chat was on screen before. Each ask is counted, so that one
  // which changes nothing else is drawn too.
  const [focusAsked, askFocus] = useState(0);
  useLayoutEffect(() => {
    if (focusAsked) focusComposer();
  }, [focusAsked]);
  const open = (id: string | null, focus = false) => {
    if (focus) askFocus((n) => n + 1);
    history.pushState(null, '', id ? `/c/${encodeURIComponent(id)}` : '/');
    setCurrent(id);
    setSection(null);
    setPage(null);
    setReading(null);
  };
  const go = (path: string) => {
    history.pushState(null, '', path);
    setSection(sectionFromPath(location.pathname));
    setCurrent(sessionFromPath());
    setPage(pageFromPath());
    setReading(readingFromLocation());
    setDocumentName(null);
  };
  goRef.current = go;

  if (account === 'signed-out') return <SignIn />;
  if (account === null) return <main class="loading">{problem ?? 'Loading…'}</main>;
  if (section) return <Admin account={account} section={section} go={go} />;
  const listed = sessions.find((s) => s.id === current)?.title;
  const heading = reading ? readingTitle(reading, documentName) : page ? PAGE_TITLES[page] : listed ? listedTitle(listed) : 'New chat';
  return (
    <ChatLayout heading={heading}>
      {(close) => (
        <>
          <Sidebar
            account={account}
            sessions={sessions}
            current={current}
            open={(id, focus) => {
              close();
              open(id, focus);
            }}
            go={(path) => {
              close();
              go(path);
            }}
            changed={refresh}
            problem={setProblem}
          />
          <main id="main">
            {problem && (
              <p class="problem" role="alert">
                {problem}
              </p>
            )}
            {reading?.kind === 'search' ? (
              <SearchPage q={reading.q} go={go} />
            ) : reading?.kind === 'document' ? (
              <DocumentPage
                key={`${reading.collectionId}/${reading.documentId}#${reading.passage}`}
                collectionId={reading.collectionId}
                documentId={reading.documentId}
                passage={reading.passage}
                titled={setDocumentName}
              />
            ) : page === 'connections' ? (
              <Connections />
            ) : page === 'memory' ? (
              <Memory open={(id) => open(id, true)} />
            ) : page === 'usage' ? (
              <OwnUsage />
            ) : (
              <Chat sessionId={current} onCreated={(id) => open(id)} onChanged={refresh} onSettled={settled} />
            )}
          </main>
        </>
      )}
    </ChatLayout>
  );
}

render(<App />, document.getElementById('app')!);
