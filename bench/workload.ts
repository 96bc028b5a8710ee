// The workload the performance goals are stated on, the same for Baseplate and every peer: the
// first 20 todos of end user 42 ordered by id, from 100,000 rows over users 1..1000 (row i belongs
// to user ((i-1) % 1000) + 1, title `todo i`, done i % 3 = 0), owner column indexed, policy
// `created_by = $auth.id`; and a single-row insert by that user under the same policy.
import { api, eachLimit } from './api.ts';
import type { HttpLoad } from './cannon.ts';

export const WORKLOAD_ROWS = 100_000;
export const WORKLOAD_USERS = 1000;
/** The end user whose rows are read (and who inserts). */
export const READER = 42;

export type Send = (i: number) => Promise<boolean>;

/** A request of the workload, as one checked call and as autocannon's repeated request. */
export interface Endpoint {
  /** one request, its whole answer checked (the status; a read's rows) */
  send: Send;
  /** the request for autocannon; a read expects the answer it gets now, checked as send() checks it */
  cannon(): Promise<HttpLoad>;
}

export function todo(i: number) {
  return { id: i, title: `todo ${i}`, done: i % 3 === 0, created_by: ((i - 1) % WORKLOAD_USERS) + 1 };
}

/** Exactly the reader's first 20 todos in id order (42, 1042, ... 19042), as every answer must be. */
export function isReadersFirst20(body: unknown): boolean {
  if (!Array.isArray(body) || body.length !== 20) return false;
  return body.every((r, k) => {
    const row = r as { id?: unknown; title?: unknown; created_by?: unknown };
    const id = READER + WORKLOAD_USERS * k;
    return Number(row.id) === id && row.title === `todo ${id}` && Number(row.created_by) === READER;
  });
}

/** Failed answers, by status and the start of the body, since the last takeFailures(). */
const failures = new Map<string, number>();

export function failed(what: string): false {
  const key = what.replace(/\s+/g, ' ').slice(0, 160);
  failures.set(key, (failures.get(key) ?? 0) + 1);
  return false;
}

/** The failures seen since the last call, most frequent first ("503 {...} x12"), and forgets them. */
export function takeFailures(): string[] {
  const out = [...failures].sort((a, b) => b[1] - a[1]).map(([k, n]) => `${k} x${n}`);
  failures.clear();
  return out;
}

/** GET url with headers; a success is a 200 whose body passes `check`. */
export function reads(url: string, headers: Record<string, string>, check: (body: unknown) => boolean): Endpoint {
  const answer = async (): Promise<string | false> => {
    try {
      const res = await fetch(url, { headers });
      const text = await res.text();
      if (res.status !== 200) return failed(`GET ${res.status} ${text}`);
      return check(JSON.parse(text)) ? text : failed('GET 200 with other rows than expected');
    } catch (err) {
      return failed(`GET: ${(err as Error).message}`);
    }
  };
  return {
    send: async () => (await answer()) !== false,
    cannon: async () => {
      const expectBody = await answer();
      if (expectBody === false) throw new Error(`GET ${url} did not answer as expected: ${takeFailures().join('; ')}`);
      return { method: 'GET', url, headers, status: 200, expectBody };
    },
  };
}

/**
 * POST one todo to url (the owner column is left to the server's default: the caller). `extra`:
 * more fields for a server with no such default (PocketBase: the owner, which its rule checks);
 * `status`: what the server answers a created row with (201, PocketBase 200).
 */
export function inserts(url: string, headers: Record<string, string>, { extra = {}, status = 201 }: { extra?: Record<string, unknown>; status?: number } = {}): Endpoint {
  const h = { ...headers, 'content-type': 'application/json', prefer: 'return=minimal' };
  const body = (title: string) => JSON.stringify({ title, done: false, ...extra });
  return {
    send: async (i) => {
      try {
        const res = await fetch(url, { method: 'POST', headers: h, body: body(`bench ${i}`) });
        const text = await res.text();
        return res.status === status || failed(`POST ${res.status} ${text}`);
      } catch (err) {
        return failed(`POST: ${(err as Error).message}`);
      }
    },
    cannon: async () => ({ method: 'POST', url, headers: h, body: body('bench [<id>]'), status }),
  };
}

const columns = (ownerDefault: boolean) => [
  { name: 'title', type: 'text' },
  { name: 'done', type: 'boolean' },
  { name: 'created_by', type: 'integer', indexed: true, ...(ownerDefault ? { default: '$auth.id' } : {}) },
  { name: 'created_at', type: 'timestamp', default: 'now()' },
];

/**
 * The workload in a Baseplate project, all through the public API as an application would build it:
 * table `todos` (SELECT policy), table `todos_ins` (INSERT and SELECT policies; the inserts go
 * there, so that reads keep their 100,000 rows), a read key [select], a load key [select, insert],
 * end users 1..42 registered in order, and the rows POSTed 1,000 at a time (no INSERT policy on
 * todos: the load key inserts them without an end user).
 */
export async function setupBaseplateTodos(base: string, ownerToken: string): Promise<{ pid: string; read: Endpoint; insert: Endpoint }> {
  const H = { authorization: `Bearer ${ownerToken}` };
  const { id: pid } = await api(base, 'POST', '/projects', { name: 'todos' }, H);
  const todos = await api(base, 'POST', `/projects/${pid}/tables`, { name: 'todos', columns: columns(false) }, H);
  await api(base, 'POST', `/projects/${pid}/tables/${todos.id}/rls-policies`, { name: 'own rows', operation: 'SELECT', expression: 'created_by = $auth.id' }, H);
  const ins = await api(base, 'POST', `/projects/${pid}/tables`, { name: 'todos_ins', columns: columns(true) }, H);
  for (const operation of ['INSERT', 'SELECT'])
    await api(base, 'POST', `/projects/${pid}/tables/${ins.id}/rls-policies`, { name: `own ${operation}`, operation, expression: 'created_by = $auth.id' }, H);
  const readKey = (await api(base, 'POST', `/projects/${pid}/keys`, { name: 'read', permissions: ['select'] }, H)).key;
  const loadKey = (await api(base, 'POST', `/projects/${pid}/keys`, { name: 'load', permissions: ['select', 'insert'] }, H)).key;
  let token = '';
  for (let n = 1; n <= READER; n++) {
    const r = await api(base, 'POST', `/${pid}/auth/register`, { email: `user${n}@example.com`, password: 'bench password' });
    if (r.user.id !== n) throw new Error(`end user ${n} got id ${r.user.id}`);
    token = r.token;
  }
  const batches = Array.from({ length: WORKLOAD_ROWS / 1000 }, (_, b) => b * 1000);
  await eachLimit(batches, 2, async (start) => {
    const rows = Array.from({ length: 1000 }, (_, k) => todo(start + k + 1));
    await api(base, 'POST', `/${pid}/rest/todos`, rows, { authorization: `Bearer ${loadKey}`, prefer: 'return=minimal' });
  });
  return {
    pid,
    read: reads(`${base}/${pid}/rest/todos?select=id,title,done,created_by,created_at&order=id&limit=20`, { authorization: `Bearer ${readKey}`, 'x-user-token': token }, isReadersFirst20),
    insert: inserts(`${base}/${pid}/rest/todos_ins`, { authorization: `Bearer ${loadKey}`, 'x-user-token': token }),
  };
}
