// Many small projects, for "does one more project cost the others anything": each has its own
// table, policy, key and end user, built through the public API, all of the same shape, so that
// reading one of them over and over and reading a random one each time do the same work.
import { api, eachLimit } from './api.ts';
import { reads, type Send } from './workload.ts';

/** Rows per small project; the end user (id 1) owns every tenth: 20 of them. */
const ROWS = 200;

export interface SmallProject {
  pid: string;
  read: Send;
}

export async function createSmallProjects(base: string, ownerToken: string, n: number, progress: (done: number) => void): Promise<SmallProject[]> {
  const out: SmallProject[] = new Array(n);
  let done = 0;
  // a few at a time: the server has 2 cores, and more only queue
  await eachLimit(Array.from({ length: n }, (_, i) => i), 4, async (i) => {
    out[i] = await smallProject(base, ownerToken, i);
    if (++done % 100 === 0 || done === n) progress(done);
  });
  return out;
}

async function smallProject(base: string, ownerToken: string, i: number): Promise<SmallProject> {
  const H = { authorization: `Bearer ${ownerToken}` };
  const { id: pid } = await api(base, 'POST', '/projects', { name: `small ${i}` }, H);
  const table = await api(base, 'POST', `/projects/${pid}/tables`, {
    name: 'items',
    columns: [
      { name: 'title', type: 'text' },
      { name: 'created_by', type: 'integer', indexed: true },
    ],
  }, H);
  await api(base, 'POST', `/projects/${pid}/tables/${table.id}/rls-policies`, { name: 'own rows', operation: 'SELECT', expression: 'created_by = $auth.id' }, H);
  const { key } = await api(base, 'POST', `/projects/${pid}/keys`, { name: 'app', permissions: ['select', 'insert'] }, H);
  const user = await api(base, 'POST', `/${pid}/auth/register`, { email: 'user@example.com', password: 'bench password' });
  // no INSERT policy: the key inserts the rows of every owner without an end user
  const rows = Array.from({ length: ROWS }, (_, k) => ({ title: `item ${k + 1}`, created_by: (k % 10) + 1 }));
  await api(base, 'POST', `/${pid}/rest/items`, rows, { authorization: `Bearer ${key}`, prefer: 'return=minimal' });
  const uid = user.user.id as number;
  const check = (body: unknown) => Array.isArray(body) && body.length === 20 && body.every((r) => (r as { created_by: number }).created_by === uid);
  return { pid, read: reads(`${base}/${pid}/rest/items?order=id&limit=20`, { authorization: `Bearer ${key}`, 'x-user-token': user.token }, check).send };
}
