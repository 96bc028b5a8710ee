// A server process's projects under continuous writes, for the backup tests of both engines
// (test/cli/backup.test.ts, test/cli/pg-backup.test.ts): every acknowledged write is recorded, so
// that what a backup promised can be checked after a restore.
import assert from 'node:assert/strict';
import { callServer } from './server-process.ts';
import type { ApiCapture } from './mail-capture.ts';

export interface Project {
  id: string;
  key: string;
}

export async function register(base: string, email: string): Promise<string> {
  const res = await callServer(base, 'POST', '/auth/register', { body: { name: 'n', email, password: 'password1' } });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body.token;
}

/** A project with a table `notes (n integer)`, a key that may insert and select, and an emailapi key sealed under the master key. */
export async function project(base: string, owner: string, name: string): Promise<Project> {
  const p = (await callServer(base, 'POST', '/projects', { token: owner, body: { name } })).body;
  assert.equal((await callServer(base, 'POST', `/projects/${p.id}/tables`, { token: owner, body: { name: 'notes', columns: [{ name: 'n', type: 'integer' }] } })).status, 201);
  const key = (await callServer(base, 'POST', `/projects/${p.id}/keys`, { token: owner, body: { name: 'k', permissions: ['select', 'insert'] } })).body.key;
  const email = { provider: 'emailapi', from_address: 'hello@example.com', from_name: 'Example', emailapi_api_key: `re_secret_${p.id}` };
  assert.equal((await callServer(base, 'PUT', `/projects/${p.id}/auth/email-config`, { token: owner, body: email })).status, 200);
  return { id: p.id, key };
}

/** Inserts rows 0, 1, 2, ... one at a time until stopped; `acked` holds those answered 201, in order. */
export function writer(base: string, p: Project, acked: number[], running: () => boolean): Promise<void> {
  return (async () => {
    for (let n = 0; running(); n++) {
      const res = await callServer(base, 'POST', `/${p.id}/rest/notes`, { key: p.key, body: { n }, headers: { prefer: 'return=minimal' } }).catch(() => null);
      if (!res) return; // the server is gone (a failed test stopped it)
      if (res.status === 201) acked.push(n);
    }
  })();
}

export async function readNs(base: string, p: Project): Promise<Set<number>> {
  const res = await callServer(base, 'GET', `/${p.id}/rest/notes?select=n&limit=100000`, { key: p.key });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return new Set(res.body.map((r: { n: number }) => r.n));
}

export interface Writes {
  /** per project, the rows acknowledged so far */
  acked: number[][];
  /** stops the writers once their current insert is answered */
  stop(): Promise<void>;
}

/** Starts one writer per project; resolves once each has `atLeast` acknowledged rows. */
export async function startWriting(base: string, projects: Project[], atLeast = 20): Promise<Writes> {
  const acked = projects.map(() => [] as number[]);
  let running = true;
  const writers = projects.map((p, i) => writer(base, p, acked[i]!, () => running));
  while (acked.some((a) => a.length < atLeast)) await new Promise((r) => setTimeout(r, 20));
  return {
    acked,
    async stop() {
      running = false;
      await Promise.all(writers);
    },
  };
}

/**
 * After a restore, through the server on it: every promised row of each project is served, and
 * each project's sealed emailapi key still opens (a test email reaches `api` with it).
 */
export async function assertRestored(base: string, owner: string, projects: Project[], promised: number[][], api: ApiCapture): Promise<void> {
  for (const [i, p] of projects.entries()) {
    const ns = await readNs(base, p);
    const lost = promised[i]!.filter((n) => !ns.has(n));
    assert.deepEqual(lost, [], `project ${p.id}: acknowledged before the backup began, missing after the restore`);
    const before = api.requests.length;
    const sent = await callServer(base, 'POST', `/projects/${p.id}/auth/email-config/test`, { token: owner, body: { to: 'ops@example.com' } });
    assert.equal(sent.status, 200, JSON.stringify(sent.body));
    assert.equal(api.requests[before]!.authorization, `Bearer re_secret_${p.id}`);
  }
}
