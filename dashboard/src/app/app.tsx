// The dashboard app: who is signed in (GET <base>/api/me), then the page the address names. A
// person who is not signed in sees the sign-in page wherever they land, and the page they asked
// for once they are in.
import type { ComponentChildren } from 'preact';
import { useEffect, useMemo, useState } from 'preact/hooks';
import { ApiFailure, describeFailure, DashboardApi } from './api';
import { Dashboard, useDashboard, type Me } from './context';
import { Link } from './parts/link';
import { Notice } from './parts/notice';
import { AccountPage } from './pages/account';
import { AnalyticsPage } from './pages/analytics';
import { BuildsPage } from './pages/builds';
import { FleetPage } from './pages/fleet';
import { ForgotPasswordPage } from './pages/forgot-password';
import { ProjectsPage } from './pages/projects';
import { SetPasswordPage } from './pages/set-password';
import { SettingsPage } from './pages/settings';
import { SessionPage } from './pages/session';
import { SessionsPage } from './pages/sessions';
import { TeamPage } from './pages/team';
import { SignInPage } from './pages/sign-in';
import { Router, useRoutePath } from './router';

/** Pages anyone may open, signed in or not. */
const PUBLIC_PAGES = new Set(['/sign-in', '/forgot-password', '/set-password', '/reset-password']);

export function App({ basePath }: { basePath: string }) {
  // undefined: not known yet; null: nobody is signed in.
  const [me, setMeState] = useState<Me | null | undefined>(undefined);
  const api = useMemo(() => new DashboardApi(basePath, () => setMeState(null)), [basePath]);
  const router = useMemo(() => new Router(basePath), [basePath]);
  const [startError, setStartError] = useState<string | undefined>(undefined);
  const [signInNote, setSignInNote] = useState<{ email: string; note: string } | undefined>(undefined);
  const path = useRoutePath(router);

  useEffect(() => {
    api.get<Me>('/me').then(
      (who) => setMeState(who),
      (failure: unknown) => {
        if (failure instanceof ApiFailure && failure.status === 401) setMeState(null);
        else setStartError(describeFailure(failure));
      },
    );
  }, [api]);

  const context = useMemo(
    () => ({
      api,
      router,
      me: me ?? undefined,
      setMe: (who: Me | undefined) => {
        setMeState(who ?? null);
        if (who === undefined) router.navigate('/sign-in', { replace: true });
        else if (PUBLIC_PAGES.has(router.current())) router.navigate('/', { replace: true });
      },
    }),
    [api, router, me],
  );

  let page;
  if (startError !== undefined) page = <Notice kind="error">{startError}</Notice>;
  else if (path === '/set-password' || path === '/reset-password') {
    const purpose = path === '/set-password' ? 'invitation' : 'passwordReset';
    page = (
      <SetPasswordPage
        purpose={purpose}
        onDone={(who) => {
          setSignInNote({ email: who.email, note: 'Your password is set. Sign in with it now.' });
          setMeState(null);
          router.navigate('/sign-in', { replace: true });
        }}
      />
    );
  } else if (path === '/forgot-password') page = <ForgotPasswordPage />;
  else if (me === undefined) page = <p aria-busy="true">Loading…</p>;
  else if (me === null) page = <SignInPage email={signInNote?.email} note={signInNote?.note} />;
  else if (path === '/' || path === '/sign-in') page = <ProjectsPage />;
  else if (path === '/account') page = <AccountPage />;
  else if (path === '/fleet') page = <FleetPage />;
  else {
    const projectPage = /^\/projects\/([A-Za-z0-9_-]{1,64})\/(builds|settings|sessions|analytics|team)(?:\/([A-Za-z0-9_-]{1,80}))?$/.exec(path);
    const [, projectId = '', tab, sessionId] = projectPage ?? [];
    if (projectPage === null || (sessionId !== undefined && tab !== 'sessions')) page = <NotFound />;
    else if (tab === 'builds') page = <BuildsPage key={projectId} projectId={projectId} />;
    else if (tab === 'settings') page = <SettingsPage key={projectId} projectId={projectId} />;
    else if (tab === 'analytics') page = <AnalyticsPage key={projectId} projectId={projectId} />;
    else if (tab === 'team') page = <TeamPage key={projectId} projectId={projectId} />;
    else if (sessionId === undefined) page = <SessionsPage key={projectId} projectId={projectId} />;
    else page = <SessionPage key={sessionId} projectId={projectId} sessionId={sessionId} />;
  }

  return (
    <Dashboard.Provider value={context}>
      <Layout path={path}>{page}</Layout>
    </Dashboard.Provider>
  );
}

/** Page titles, for the tab and for screen readers told that the page changed. */
const TITLES: Record<string, string> = { '/': 'Projects', '/account': 'Account', '/fleet': 'Fleet', '/sign-in': 'Sign in', '/forgot-password': 'Reset your password', '/set-password': 'Choose your password', '/reset-password': 'Choose a new password' };

function Layout({ path, children }: { path: string; children: ComponentChildren }) {
  const { me, api, setMe } = useDashboard();
  const [signOutError, setSignOutError] = useState<string | undefined>(undefined);
  useEffect(() => {
    const projectTab = /^\/projects\/[^/]+\/(builds|settings|sessions|analytics|team)(\/[^/]+)?$/.exec(path);
    const tabTitle = projectTab === null ? undefined : projectTab[2] !== undefined ? 'Session' : { builds: 'Builds', settings: 'Settings', sessions: 'Sessions', analytics: 'Audience', team: 'Team' }[projectTab[1] as 'builds'];
    const title = me === undefined && !PUBLIC_PAGES.has(path) ? TITLES['/sign-in'] : (tabTitle ?? TITLES[path]);
    document.title = `${title ?? 'Not found'} · Pixelfleet`;
  }, [path, me]);
  return (
    <>
      <a class="skip-link" href="#main">
        Skip to the page
      </a>
      <header class="top">
        <span class="brand">Pixelfleet</span>
        {me !== undefined && (
          <nav aria-label="Dashboard">
            <Link to="/" class={path === '/' || path.startsWith('/projects/') ? 'current' : undefined} current={path === '/'}>
              Projects
            </Link>
            {me.operator && (
              <Link to="/fleet" class={path === '/fleet' ? 'current' : undefined} current={path === '/fleet'}>
                Fleet
              </Link>
            )}
            <Link to="/account" class={path === '/account' ? 'current' : undefined} current={path === '/account'}>
              Account
            </Link>
            <button
              type="button"
              class="button-quiet"
              onClick={() => {
                setSignOutError(undefined);
                api.post('/sign-out').then(
                  () => setMe(undefined),
                  (failure: unknown) => setSignOutError(`You are still signed in: ${describeFailure(failure)}`),
                );
              }}
            >
              Sign out
            </button>
          </nav>
        )}
      </header>
      <main id="main" tabIndex={-1}>
        {signOutError !== undefined && <Notice kind="error">{signOutError}</Notice>}
        {children}
      </main>
    </>
  );
}

function NotFound() {
  return (
    <>
      <h1>Not found</h1>
      <p>
        There is no such page. <Link to="/">Your projects</Link>
      </p>
    </>
  );
}
