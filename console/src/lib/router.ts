// A small History-API router: the current location as state, navigate(), and pattern matching with
// `:params`. Links are ordinary <a href> elements (components/Link.tsx), so they open in a new tab
// and work without JavaScript's help for the keyboard and screen readers.
import { useEffect, useState } from 'preact/hooks';

export interface Location {
  path: string;
  query: URLSearchParams;
}

type Listener = () => void;
const listeners = new Set<Listener>();

function read(): Location {
  return { path: window.location.pathname.replace(/\/+$/, '') || '/', query: new URLSearchParams(window.location.search) };
}

let current = read();
window.addEventListener('popstate', () => {
  current = read();
  for (const l of listeners) l();
});

export function navigate(to: string, opts: { replace?: boolean } = {}): void {
  if (opts.replace) history.replaceState(null, '', to);
  else history.pushState(null, '', to);
  current = read();
  for (const l of listeners) l();
}

/** Changes the query string of the current page without a new history entry. */
export function setQuery(changes: Record<string, string | null>): void {
  const q = new URLSearchParams(current.query);
  for (const [k, v] of Object.entries(changes)) {
    if (v === null || v === '') q.delete(k);
    else q.set(k, v);
  }
  const s = q.toString();
  navigate(`${current.path}${s ? `?${s}` : ''}`, { replace: true });
}

export function useLocation(): Location {
  const [, force] = useState(0);
  useEffect(() => {
    const l = () => force((n) => n + 1);
    listeners.add(l);
    return () => void listeners.delete(l);
  }, []);
  return current;
}

/** `pattern` like `/console/projects/:pid`; answers the decoded params or null. */
export function match(pattern: string, path: string): Record<string, string> | null {
  const p = pattern.split('/');
  const s = path.split('/');
  if (p.length !== s.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < p.length; i++) {
    if (p[i]!.startsWith(':')) {
      if (!s[i]) return null;
      try {
        params[p[i]!.slice(1)] = decodeURIComponent(s[i]!);
      } catch {
        return null;
      }
    } else if (p[i] !== s[i]) return null;
  }
  return params;
}
