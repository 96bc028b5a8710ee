// Two server processes on one PostgreSQL database: a key revoked (or a token ended) through one
// node is refused by the other at once, because nothing caches credentials.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createTestDatabase, testEngines, type TestDatabase } from '../support/postgres.ts';

const { engines, skipReason } = await testEngines();

// every node of one deployment shares the master key that seals stored secrets
const SHARED_MASTER_KEY = randomBytes(32).toString('hex');

async function startNode(databaseUrl: string): Promise<{ proc: ChildProcess; base: string }> {
  const proc = spawn(process.execPath, ['--no-node-snapshot', '--import', 'tsx', 'src/main.ts'], {
    env: { ...process.env, MASTER_KEY: SHARED_MASTER_KEY, DATABASE_URL: databaseUrl, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', ARGON2_MEMORY_KIB: '1024', ARGON2_TIME_COST: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const base = await new Promise<string>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`node did not start: ${out}`)), 20000);
    proc.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const m = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    });
    proc.stderr!.on('data', (chunk: Buffer) => (out += chunk.toString()));
    proc.on('exit', (code) => reject(new Error(`node exited with ${code}: ${out}`)));
  });
  return { proc, base };
}

async function call(base: string, method: string, path: string, opts: { token?: string; body?: unknown; headers?: Record<string, string> } = {}) {
  const headers: Record<string, string> = { ...(opts.headers ?? {}) };
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(base + path, { method, headers, body: opts.body !== undefined ? JSON.stringify(opts.body) : undefined });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

if (engines.includes('postgres')) {
  describe('two server processes on one PostgreSQL', () => {
    let db: TestDatabase;
    let a: { proc: ChildProcess; base: string };
    let b: { proc: ChildProcess; base: string };

    before(async () => {
      db = await createTestDatabase();
      // started together: both migrate the same fresh database at once (advisory lock)
      [a, b] = await Promise.all([startNode(db.url), startNode(db.url)]);
    });

    after(async () => {
      for (const n of [a, b]) {
        if (n && n.proc.exitCode === null) {
          const exited = new Promise((r) => n.proc.once('exit', r));
          n.proc.kill('SIGTERM');
          await exited;
        }
      }
      await db?.drop();
    });

    test('a key revoked through node A is refused by node B at once; so is a logged-out token', async () => {
      const reg = await call(a.base, 'POST', '/auth/register', { body: { name: 'n', email: 'multi@example.com', password: 'password1' } });
      assert.equal(reg.status, 201);
      const owner = reg.body.token;
      const project = (await call(a.base, 'POST', '/projects', { token: owner, body: { name: 'p' } })).body;
      assert.equal((await call(b.base, 'POST', `/projects/${project.id}/tables`, { token: owner, body: { name: 'notes', columns: [{ name: 'body', type: 'text' }] } })).status, 201);
      const key = (await call(a.base, 'POST', `/projects/${project.id}/keys`, { token: owner, body: { name: 'k', permissions: ['select', 'insert'] } })).body;
      const auth = { authorization: `Bearer ${key.key}` };
      assert.equal((await call(b.base, 'POST', `/${project.id}/rest/notes`, { headers: auth, body: { body: 'via b' } })).status, 201);
      assert.equal((await call(a.base, 'GET', `/${project.id}/rest/notes`, { headers: auth })).body[0].body, 'via b');

      assert.equal((await call(a.base, 'DELETE', `/projects/${project.id}/keys/${key.key_id}`, { token: owner })).status, 204);
      const refused = await call(b.base, 'GET', `/${project.id}/rest/notes`, { headers: auth });
      assert.equal(refused.status, 401);
      assert.equal(refused.body.code, 'invalid_api_key');

      assert.equal((await call(b.base, 'POST', '/auth/logout', { token: owner })).status, 204);
      assert.equal((await call(a.base, 'GET', '/auth/me', { token: owner })).status, 401);
    });
  });
} else {
  test('two server processes on one PostgreSQL', { skip: skipReason }, () => undefined);
}

if (engines.includes('postgres')) {
  test('[postgres] a node without MASTER_KEY refuses to start and leaves the database untouched', async () => {
    const db = await createTestDatabase();
    try {
      const env: Record<string, string | undefined> = { ...process.env, DATABASE_URL: db.url, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent' };
      delete env.MASTER_KEY;
      const proc = spawn(process.execPath, ['--no-node-snapshot', '--import', 'tsx', 'src/main.ts'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
      let err = '';
      proc.stderr!.on('data', (c: Buffer) => (err += c.toString()));
      const code = await new Promise<number | null>((resolve) => proc.on('exit', resolve));
      assert.notEqual(code, 0);
      assert.match(err, /MASTER_KEY is required with PostgreSQL/);
      const pg = (await import('pg')).default;
      const client = new pg.Client({ connectionString: db.url });
      await client.connect();
      try {
        const r = await client.query("SELECT count(*)::int AS n FROM information_schema.schemata WHERE schema_name = 'baseplate'");
        assert.equal(r.rows[0].n, 0);
      } finally {
        await client.end();
      }
    } finally {
      await db.drop();
    }
  });
}
