// Benchmark scenarios: each prepares its data and returns the request to repeat.
import type { Engine } from '../src/storage/engine.ts';
import { api as json } from './api.ts';

export interface Scenario {
  name: string;
  concurrency: number;
  setup(base: string, engine: Engine): Promise<(i: number) => Promise<boolean>>;
  /** Stops whatever setup started beside the measured requests. */
  teardown?(): Promise<void>;
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
      return readOwnRows(base, await seededRlsProject(base, engine));
    },
  },
  (() => {
    let stop: (() => Promise<void>) | null = null;
    return {
      // the same reads, while another project runs the most expensive filter its key allows
      name: 'GET 20 rows of 100k under RLS, another project at its worst',
      concurrency: 16,
      async setup(base: string, engine: Engine) {
        const reads = readOwnRows(base, await seededRlsProject(base, engine));
        stop = await worstQueriesOfAnotherProject(base, engine);
        return reads;
      },
      async teardown() {
        await stop?.();
      },
    };
  })(),
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

/** rlsProject with 100,000 rows owned by 100 users; the bench user (id 1) owns 1,000 of them.
 * Seeded with one INSERT ... SELECT (setup only; the measured path is the HTTP passthrough). */
export async function seededRlsProject(base: string, engine: Engine) {
  const p = await rlsProject(base);
  const db = await engine.project(p.pid);
  const seed =
    engine.kind === 'sqlite'
      ? `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100000)
         INSERT INTO ${db.t('items')} (title, created_by) SELECT 'row ' || i, (i % 100) + 1 FROM n`
      : `INSERT INTO ${db.t('items')} (title, created_by) SELECT 'row ' || i, (i % 100) + 1 FROM generate_series(1, 100000) AS i`;
  await db.run(seed);
  if (engine.kind === 'postgres') await db.run(`ANALYZE ${db.t('items')}`);
  return p;
}

export function readOwnRows(base: string, p: Awaited<ReturnType<typeof rlsProject>>) {
  const headers = { authorization: `Bearer ${p.key}`, 'x-user-token': p.userToken };
  return async () => {
    const res = await fetch(`${base}/${p.pid}/rest/items?limit=20`, { headers });
    const rows = (await res.json()) as { created_by: number }[];
    return res.status === 200 && rows.length === 20 && rows.every((r) => r.created_by === p.userId);
  };
}

/**
 * Another project whose key runs, on two connections back to back, the worst read it may ask for:
 * an exact count under 99 ilike conditions over 20,000 rows of 400 characters, ordered by text.
 * Returns the function that stops it.
 */
async function worstQueriesOfAnotherProject(base: string, engine: Engine): Promise<() => Promise<void>> {
  const { token } = await owner(base);
  const headers = { authorization: `Bearer ${token}` };
  const project = await json(base, 'POST', '/projects', { name: 'noisy neighbour' }, headers);
  await json(base, 'POST', `/projects/${project.id}/tables`, { name: 'docs', columns: [{ name: 'body', type: 'text' }] }, headers);
  const db = await engine.project(project.id);
  const seed =
    engine.kind === 'sqlite'
      ? `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)
         INSERT INTO ${db.t('docs')} (body) SELECT substr(i || ' ' || printf('%.400c', 'x'), 1, 400) FROM n`
      : `INSERT INTO ${db.t('docs')} (body) SELECT left(i || ' ' || repeat('x', 400), 400) FROM generate_series(1, 20000) AS i`;
  await db.run(seed);
  const key = await json(base, 'POST', `/projects/${project.id}/keys`, { name: 'noisy', permissions: ['select'] }, headers);
  const filter = `or=(${Array.from({ length: 99 }, (_, i) => `body.ilike.*${'ab'.repeat(8)}${i}*`).join(',')})`;
  const url = `${base}/${project.id}/rest/docs?${filter}&order=body.desc`;
  let running = true;
  const statuses = new Map<number, number>();
  const loops = [0, 1].map(async () => {
    while (running) {
      const res = await fetch(url, { headers: { authorization: `Bearer ${key.key}`, prefer: 'count=exact' } });
      await res.arrayBuffer();
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
    }
  });
  return async () => {
    running = false;
    await Promise.all(loops);
    // the neighbour's queries must have been real work (answered, or stopped at the timeout)
    if ([...statuses.keys()].some((s) => s !== 200 && s !== 503)) throw new Error(`noisy neighbour got ${JSON.stringify([...statuses])}`);
    console.error(`  noisy neighbour: ${JSON.stringify(Object.fromEntries(statuses))}`);
  };
}

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
