// The screens and who may see them: signed-out owners get the sign-in and sign-up screens, every
// other route needs a session (a 401 anywhere ends it and comes back here).
import { useEffect, useRef, useState } from 'preact/hooks';
import { match, navigate, useLocation } from './lib/router.ts';
import { onSession, session } from './api/session.ts';
import { SignIn, SignUp } from './pages/AuthPages.tsx';
import { Projects } from './pages/Projects.tsx';
import { AccountPage } from './pages/Account.tsx';
import { NotFound } from './pages/NotFound.tsx';
import { ProjectRoutes } from './pages/project/ProjectRoutes.tsx';
import { Shell } from './components/Shell.tsx';
import { NoticeRegion } from './components/Notice.tsx';

const PUBLIC = new Set(['/console/sign-in', '/console/sign-up']);

function useSession() {
  const [s, setS] = useState(session());
  const [reason, setReason] = useState<string | undefined>();
  useEffect(
    () =>
      onSession((next, why) => {
        setS(next);
        setReason(why);
      }),
    [],
  );
  return { session: s, reason };
}

/** Moves focus to the new screen's heading after a navigation, as a page load would for a screen reader. */
function useFocusOnNavigate(path: string) {
  const first = useRef(true);
  useEffect(() => {
    if (first.current) {
      first.current = false;
      return;
    }
    requestAnimationFrame(() => document.querySelector<HTMLElement>('main h1')?.focus());
  }, [path]);
}

export function App() {
  const loc = useLocation();
  const { session: s, reason } = useSession();
  useFocusOnNavigate(loc.path);
  const home = loc.path === '/' || loc.path === '/console';
  const signedOutRoute = PUBLIC.has(loc.path);

  useEffect(() => {
    if (!s && !signedOutRoute) {
      const next = home ? '' : `?next=${encodeURIComponent(loc.path + (loc.query.toString() ? `?${loc.query}` : ''))}`;
      navigate(`/console/sign-in${next}`, { replace: true });
    } else if (s && (home || signedOutRoute)) navigate('/console/projects', { replace: true });
  }, [s, loc.path]);

  if (!s || home || signedOutRoute) {
    return (
      <>
        {loc.path === '/console/sign-up' ? <SignUp /> : <SignIn reason={reason} />}
        <NoticeRegion />
      </>
    );
  }
  return (
    <Shell account={s.account}>
      <Screen path={loc.path} />
      <NoticeRegion />
    </Shell>
  );
}

function Screen({ path }: { path: string }) {
  if (path === '/console/projects') return <Projects />;
  if (path === '/console/account') return <AccountPage />;
  const p = match('/console/projects/:pid', path.split('/').slice(0, 4).join('/'));
  if (p) return <ProjectRoutes pid={p.pid!} rest={path.split('/').slice(4)} />;
  return <NotFound />;
}
