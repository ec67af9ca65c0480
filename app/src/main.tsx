// The app: who is signed in (or the sign-in page), the sidebar and the open conversation, or
// the admin area. The URL names the conversation (/c/<id>), so a reload resumes it from the
// log, or the admin section (/admin/<section>).
import { render } from 'preact';
import { useCallback, useEffect, useState } from 'preact/hooks';

import { ApiFailure, api, explain } from './api';
import { Chat } from './views/Chat';
import { ChatLayout } from './views/ChatLayout';
import { Connections } from './views/Connections';
import { Sidebar } from './views/Sidebar';
import { Admin, type Section, sectionFromPath } from './views/admin/Admin';
import { SignIn } from './views/SignIn';
import { listedTitle } from './transcript';
import type { Account, SessionSummary } from './wire';

function sessionFromPath(): string | null {
  const m = location.pathname.match(/^\/c\/([\w-]{1,128})$/);
  return m ? decodeURIComponent(m[1]) : null;
}

function onConnectionsPage(): boolean {
  return location.pathname === '/connections';
}

function App() {
  const [account, setAccount] = useState<Account | null | 'signed-out'>(null);
  const [sessions, setSessions] = useState<SessionSummary[]>([]);
  const [current, setCurrent] = useState<string | null>(sessionFromPath());
  const [section, setSection] = useState<Section | null>(sectionFromPath(location.pathname));
  const [connections, setConnections] = useState(onConnectionsPage());
  const [problem, setProblem] = useState<string | null>(null);

  useEffect(() => {
    api
      .me()
      .then(setAccount)
      .catch((e) => (e instanceof ApiFailure && e.status === 401 ? setAccount('signed-out') : setProblem(explain(e))));
    const onPop = () => {
      setCurrent(sessionFromPath());
      setSection(sectionFromPath(location.pathname));
      setConnections(onConnectionsPage());
    };
    window.addEventListener('popstate', onPop);
    return () => window.removeEventListener('popstate', onPop);
  }, []);

  // The sidebar's list, read again after each change. A network failure here is not shown (the
  // conversation says it, and retries); the list is read again when the network returns.
  const refresh = useCallback(() => {
    api
      .sessions()
      .then((r) => {
        setSessions(r.sessions);
        setProblem(null);
      })
      .catch((e) => {
        if (!(e instanceof ApiFailure && e.transient)) setProblem(e instanceof ApiFailure ? explain(e) : String(e));
      });
  }, []);
  useEffect(() => {
    if (!account || account === 'signed-out' || section) return;
    refresh();
    window.addEventListener('online', refresh);
    return () => window.removeEventListener('online', refresh);
  }, [account, refresh, section]);

  // The tab is titled after what it shows: the open conversation, or the page.
  useEffect(() => {
    const listed = sessions.find((s) => s.id === current)?.title;
    const title = section ? 'Admin' : connections ? 'Connections' : listed && listedTitle(listed);
    document.title = title ? `${title} – Knowledge` : 'Knowledge';
  }, [current, sessions, section, connections]);

  const open = (id: string | null) => {
    history.pushState(null, '', id ? `/c/${encodeURIComponent(id)}` : '/');
    setCurrent(id);
    setSection(null);
    setConnections(false);
  };
  const go = (path: string) => {
    history.pushState(null, '', path);
    setSection(sectionFromPath(path));
    setCurrent(sessionFromPath());
    setConnections(onConnectionsPage());
  };

  if (account === 'signed-out') return <SignIn />;
  if (account === null) return <main class="loading">{problem ?? 'Loading…'}</main>;
  if (section) return <Admin account={account} section={section} go={go} />;
  const listed = sessions.find((s) => s.id === current)?.title;
  const heading = connections ? 'Connections' : listed ? listedTitle(listed) : 'New chat';
  return (
    <ChatLayout heading={heading}>
      {(close) => (
        <>
          <Sidebar
            account={account}
            sessions={sessions}
            current={current}
            open={(id) => {
              close();
              open(id);
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
            {connections ? <Connections /> : <Chat sessionId={current} onCreated={(id) => open(id)} onChanged={refresh} />}
          </main>
        </>
      )}
    </ChatLayout>
  );
}

render(<App />, document.getElementById('app')!);
