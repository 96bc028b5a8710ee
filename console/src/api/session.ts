// The platform token: kept in memory and in sessionStorage (this tab only, gone when it closes), so
// a reload keeps the owner signed in while no other tab, window or later visit can read it. Cleared
// on sign-out and on any 401 from the platform API. The API takes Bearer tokens, not cookies, so
// no CSRF defence is needed.
import type { Account, Session } from './types.ts';

const STORAGE_KEY = 'baseplate.session';
type Listener = (session: Session | null, reason?: string) => void;

let current: Session | null = load();
const listeners = new Set<Listener>();

function load(): Session | null {
  try {
    const raw = sessionStorage.getItem(STORAGE_KEY);
    if (!raw) return null;
    const s = JSON.parse(raw) as Session;
    if (typeof s.token !== 'string' || Date.parse(s.expires_at) <= Date.now()) return null;
    return s;
  } catch {
    return null; // storage disabled or corrupt: a signed-out start
  }
}

function store(s: Session | null): void {
  try {
    if (s) sessionStorage.setItem(STORAGE_KEY, JSON.stringify(s));
    else sessionStorage.removeItem(STORAGE_KEY);
  } catch {
    // storage disabled: the session lives in memory only
  }
}

export function session(): Session | null {
  if (current && Date.parse(current.expires_at) <= Date.now()) endSession('Your session has expired. Sign in again.');
  return current;
}

export function startSession(s: Session): void {
  current = s;
  store(s);
  for (const l of listeners) l(s);
}

export function updateAccount(account: Account): void {
  if (current) startSession({ ...current, account });
}

/** Forgets the token; `reason` is shown on the sign-in screen. */
export function endSession(reason?: string): void {
  if (current === null) return;
  current = null;
  store(null);
  for (const l of listeners) l(null, reason);
}

export function onSession(listener: Listener): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}
