// Benchmark scenarios: each prepares its data and returns the request to repeat.
import type { Engine } from '../src/storage/engine.ts';

export interface Scenario {
  name: string;
  concurrency: number;
  setup(base: string, engine: Engine): Promise<(i: number) => Promise<boolean>>;
}

async function json(base: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<any> {
  const res = await fetch(base + path, {
    method,
    headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
    body: body !== undefined ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : null;
}

let n = 0;
async function owner(base: string) {
  const email = `bench${++n}.${Date.now()}@example.com`;
  const reg = await json(base, 'POST', '/auth/register', { name: 'bench', email, password: 'bench password' });
  return { email, token: reg.token as string };
}

export const scenarios: Scenario[] = [
  {
    name: 'POST /auth/login',
    concurrency: 4,
    async setup(base) {
      const { email } = await owner(base);
      const body = JSON.stringify({ email, password: 'bench password' });
      return async () => {
        const res = await fetch(`${base}/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
        await res.arrayBuffer();
        return res.status === 200;
      };
    },
  },
  {
    name: 'GET /projects/{id}',
    concurrency: 16,
    async setup(base) {
      const { token } = await owner(base);
      const headers = { authorization: `Bearer ${token}` };
      const project = await json(base, 'POST', '/projects', { name: 'bench' }, headers);
      for (const name of ['a', 'b', 'c'])
        await json(base, 'POST', `/projects/${project.id}/tables`, { name, columns: [{ name: 'title', type: 'text' }, { name: 'n', type: 'integer' }] }, headers);
      return async () => {
        const res = await fetch(`${base}/projects/${project.id}`, { headers });
        await res.arrayBuffer();
        return res.status === 200;
      };
    },
  },
  {
    name: 'GET 20 rows of 100k under RLS',
    concurrency: 16,
    async setup(base, engine) {
      const p = await rlsProject(base);
      // 100,000 rows owned by 100 users; the bench user (id 1) owns 1,000 of them. Seeded with one
      // INSERT ... SELECT (setup only; the measured path is the HTTP passthrough).
      const db = await engine.project(p.pid);
      const seed =
        engine.kind === 'sqlite'
          ? `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100000)
             INSERT INTO ${db.t('items')} (title, created_by) SELECT 'row ' || i, (i % 100) + 1 FROM n`
          : `INSERT INTO ${db.t('items')} (title, created_by) SELECT 'row ' || i, (i % 100) + 1 FROM generate_series(1, 100000) AS i`;
      await db.run(seed);
      if (engine.kind === 'postgres') await db.run(`ANALYZE ${db.t('items')}`);
      const headers = { authorization: `Bearer ${p.key}`, 'x-user-token': p.userToken };
      const check = await json(base, 'GET', `/${p.pid}/rest/items?limit=20`, undefined, headers);
      if (check.length !== 20 || check.some((r: { created_by: number }) => r.created_by !== p.userId)) throw new Error('RLS bench setup is wrong');
      return async () => {
        const res = await fetch(`${base}/${p.pid}/rest/items?limit=20`, { headers });
        await res.arrayBuffer();
        return res.status === 200;
      };
    },
  },
  {
    name: 'POST one row under RLS',
    concurrency: 16,
    async setup(base) {
      const p = await rlsProject(base);
      const headers = { authorization: `Bearer ${p.key}`, 'x-user-token': p.userToken, 'content-type': 'application/json', prefer: 'return=minimal' };
      return async (i) => {
        const res = await fetch(`${base}/${p.pid}/rest/items`, { method: 'POST', headers, body: JSON.stringify({ title: `bench ${i}` }) });
        await res.arrayBuffer();
        return res.status === 201;
      };
    },
  },
  {
    // a fresh isolate per call in a sandbox process, one context.db read under RLS
    name: 'POST /{project}/functions/{name} (one db read)',
    concurrency: 8,
    async setup(base) {
      const p = await rlsProject(base);
      const { token } = p;
      const headers = { authorization: `Bearer ${token}` };
      await json(base, 'PUT', `/projects/${p.pid}/functions/recent`, {
        code: "export default async (request, { db }) => ({ body: await db.select('items', { select: 'id,title', order: 'id.desc', limit: '5' }) });",
      }, headers);
      const key = await json(base, 'POST', `/projects/${p.pid}/keys`, { name: 'fn', permissions: ['function'] }, headers);
      const callHeaders = { authorization: `Bearer ${key.key}`, 'x-user-token': p.userToken, 'content-type': 'application/json' };
      return async () => {
        const res = await fetch(`${base}/${p.pid}/functions/recent`, { method: 'POST', headers: callHeaders, body: '{}' });
        await res.arrayBuffer();
        return res.status === 200;
      };
    },
  },
];

/** A project with table `items` (created_by indexed, default $auth.id), an ALL policy
 * `created_by = $auth.id`, a key and one end user (id 1). */
async function rlsProject(base: string) {
  const { token } = await owner(base);
  const headers = { authorization: `Bearer ${token}` };
  const project = await json(base, 'POST', '/projects', { name: 'rls bench' }, headers);
  const table = await json(base, 'POST', `/projects/${project.id}/tables`, {
    name: 'items',
    columns: [
      { name: 'title', type: 'text' },
      { name: 'created_by', type: 'integer', default: '$auth.id', indexed: true },
    ],
  }, headers);
  await json(base, 'POST', `/projects/${project.id}/tables/${table.id}/rls-policies`, { name: 'own rows', operation: 'ALL', expression: 'created_by = $auth.id' }, headers);
  const key = await json(base, 'POST', `/projects/${project.id}/keys`, { name: 'bench', permissions: ['select', 'insert'] }, headers);
  const user = await json(base, 'POST', `/${project.id}/auth/register`, { email: 'bench-user@example.com', password: 'bench password' });
  return { pid: project.id as string, token, key: key.key as string, userToken: user.token as string, userId: user.user.id as number };
}
