// Two server processes on one PostgreSQL database: a key revoked (or a token ended) through one
// node is refused by the other at once, because nothing caches credentials.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { buildDist } from '../../src/bundles.ts';
import { createTestDatabase, testEngines, type TestDatabase } from '../support/postgres.ts';
import { startServer, type ServerProcess, callServer } from '../support/server-process.ts';

const { engines, skipReason } = await testEngines();

const call = callServer;

if (engines.includes('postgres')) {
  describe('two server processes on one PostgreSQL', () => {
    let db: TestDatabase;
    let a: ServerProcess;
    let b: ServerProcess;

    before(async () => {
      db = await createTestDatabase();
      // started together: both migrate the same fresh database at once (advisory lock); the
      // processes of one test file share a master key, as every node of a deployment must
      [a, b] = await Promise.all([startServer({ DATABASE_URL: db.url }), startServer({ DATABASE_URL: db.url })]);
    });

    after(async () => {
      await a?.stop();
      await b?.stop();
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
      buildDist();
      const proc = spawn(process.execPath, ['dist/main.js'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
      let err = '';
      for (const out of [proc.stdout!, proc.stderr!]) out.on('data', (c: Buffer) => (err += c.toString()));
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
