// A caller is remembered with its store's stamp where reading the stamp is cheap (Db.stamp, the
// embedded engine: services/data-plane.ts), and answered from memory while nothing has changed in
// the project's file. A change committed by any other connection (a worker thread, another process
// such as the CLI) must act on the very next request, as one made through the service does
// (guessed-reads.test.ts). Each case here reads once to be remembered, then writes the project's
// store from outside the service: SQLite through a connection of its own to the file, PostgreSQL
// (no stamp: it resolves or guesses) through a client of its own.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { describeEngines, expectError, type TestApp } from '../support/app.ts';
import { dataPlane } from '../support/data-plane.ts';
import { DataPlaneService } from '../../src/services/data-plane.ts';
import type { EngineName } from '../support/postgres.ts';

interface Outside {
  /** `sql` with `?` placeholders and `{name}` for the project's table `name` */
  run(sql: string, params?: unknown[]): Promise<void>;
  close(): Promise<void>;
}

async function outside(t: TestApp, kind: EngineName, pid: string): Promise<Outside> {
  const names = await t.engine.project(pid);
  const tables = (sql: string) => sql.replace(/\{(\w+)\}/g, (_, name: string) => names.t(name));
  if (kind === 'sqlite') {
    const db = new Database(join(t.config.dataDir, 'projects', `${pid}.db`), { fileMustExist: true, timeout: 5000 });
    return { run: async (sql, params = []) => void db.prepare(tables(sql)).run(...params), close: async () => void db.close() };
  }
  const client = new pg.Client({ connectionString: t.config.databaseUrl! });
  await client.connect();
  const numbered = (sql: string) => {
    let n = 0;
    return sql.replace(/\?/g, () => `$${++n}`);
  };
  return { run: async (sql, params = []) => void (await client.query(numbered(tables(sql)), params)), close: () => client.end() };
}

await describeEngines('a remembered caller and changes committed outside the service', (ctx, kind) => {
  async function setUp() {
    const t = ctx();
    const d = await dataPlane(t);
    const table = await d.createTable('notes', [{ name: 'body', type: 'text' }, { name: 'owner', type: 'integer', default: '$auth.id' }]);
    assert.equal((await d.policy(table.id, 'SELECT', "owner = $auth.id OR $auth.role = 'admin'")).status, 201);
    const alice = await d.endUser();
    const bob = await d.endUser();
    for (const [u, body] of [[alice, 'a1'], [bob, 'b1']] as const) assert.equal((await d.rest('POST', 'notes', { user: u.token, body: { body } })).status, 201);
    const key = await d.createKey(['select']);
    const read = (user?: string) => d.rest('GET', 'notes?select=body&order=id', { key: key.key, ...(user ? { user } : {}) });
    const bodies = async (user: string) => (await read(user)).body.map((r: { body: string }) => r.body);
    return { t, d, key, alice, bob, read, bodies, out: await outside(t, kind, d.pid) };
  }

  test('a key deleted, or expired, outside is refused on the next read', async () => {
    const { key, read, out } = await setUp();
    try {
      for (let i = 0; i < 2; i++) assert.equal((await read()).status, 200);
      await out.run('UPDATE {_bp_keys} SET expires_at = ? WHERE id = ?', ['2000-01-01T00:00:00.000Z', key.key_id]);
      expectError(await read(), 401, 'invalid_api_key');
      await out.run('UPDATE {_bp_keys} SET expires_at = NULL WHERE id = ?', [key.key_id]);
      for (let i = 0; i < 2; i++) assert.equal((await read()).status, 200);
      await out.run('DELETE FROM {_bp_keys} WHERE id = ?', [key.key_id]);
      expectError(await read(), 401, 'invalid_api_key');
    } finally {
      await out.close();
    }
  });

  test("an end user's role changed, session ended or the user deleted outside acts on the next read", async () => {
    const { alice, bob, bodies, out } = await setUp();
    try {
      for (let i = 0; i < 2; i++) assert.deepEqual(await bodies(alice.token), ['a1']);
      await out.run("UPDATE {_bp_users} SET role = 'admin' WHERE id = ?", [alice.id]);
      assert.deepEqual(await bodies(alice.token), ['a1', 'b1']);
      await out.run('DELETE FROM {_bp_user_sessions} WHERE user_id = ?', [alice.id]);
      assert.deepEqual(await bodies(alice.token), [], 'anonymous once the session is gone');
      for (let i = 0; i < 2; i++) assert.deepEqual(await bodies(bob.token), ['b1']);
      await out.run('DELETE FROM {_bp_user_sessions} WHERE user_id = ?', [bob.id]);
      await out.run('DELETE FROM {_bp_users} WHERE id = ?', [bob.id]);
      assert.deepEqual(await bodies(bob.token), [], 'anonymous once deleted');
    } finally {
      await out.close();
    }
  });

  test("the remembered caller stays right across the service's own writes, and one outside after them", async () => {
    const { t, d, alice, bodies, out } = await setUp();
    try {
      assert.deepEqual(await bodies(alice.token), ['a1']);
      // rows written (a change of the file: the caller is read again, and is the same)
      assert.equal((await d.rest('POST', 'notes', { user: alice.token, body: [{ body: 'a2' }, { body: 'a3' }] })).status, 201);
      assert.deepEqual(await bodies(alice.token), ['a1', 'a2', 'a3']);
      // the owner's change through the service, as in guessed-reads.test.ts, then one outside
      assert.equal((await t.req('PATCH', `/projects/${d.pid}/end-users/${alice.id}`, { token: d.owner, body: { role: 'admin' } })).status, 200);
      assert.deepEqual(await bodies(alice.token), ['a1', 'b1', 'a2', 'a3']);
      await out.run('UPDATE {_bp_users} SET role = NULL WHERE id = ?', [alice.id]);
      assert.deepEqual(await bodies(alice.token), ['a1', 'a2', 'a3']);
    } finally {
      await out.close();
    }
  });

  test('a session expiry written outside in another form than the service writes is decided as the long way decides it', async () => {
    const { t, d, key, alice, out } = await setUp();
    try {
      // its text says 10 s from now (compared as text by SQLite's statement), its instant 5 h later
      const expiresAt = `${new Date(t.clock.now().getTime() + 10_000).toISOString().slice(0, 23)}-05:00`;
      await out.run('UPDATE {_bp_user_sessions} SET expires_at = ? WHERE user_id = ?', [expiresAt, alice.id]);
      const served = t.services.dataPlane;
      for (let i = 0; i < 3; i++) await served.resolve(d.pid, key.key, alice.token);
      t.clock.advance(20_000);
      const longWay = new DataPlaneService(t.engine, t.services.projects, t.services.keys, t.clock);
      const expected = (await longWay.resolve(d.pid, key.key, alice.token)).user?.id ?? null;
      assert.equal((await served.resolve(d.pid, key.key, alice.token)).user?.id ?? null, expected);
    } finally {
      await out.close();
    }
  });
});
