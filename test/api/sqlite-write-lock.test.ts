// Embedded engine: a project's SQLite file has one writer at a time. When a long write (here, a
// connection of the test's own holding the lock) keeps it, the project's other writes answer 503
// project_busy within a bounded time, never a 500 and never by blocking the event loop; reads and
// other projects go on. Deleting a project does not wait for another project's long statement.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { expectError, startTestApp, type TestApp } from '../support/app.ts';
import { dataPlane, type DataPlane } from '../support/data-plane.ts';

describe('[sqlite] a project whose write lock is held', () => {
  let t: TestApp;
  let A: DataPlane;
  let B: DataPlane;
  let holder: Database.Database;

  before(async () => {
    t = await startTestApp('sqlite', { STATEMENT_TIMEOUT_MS: '300' });
    A = await dataPlane(t);
    B = await dataPlane(t);
    await A.createTable('notes', [{ name: 'body', type: 'text' }]);
    await B.createTable('notes', [{ name: 'body', type: 'text' }]);
    assert.equal((await A.rest('POST', 'notes', { body: { body: 'before' } })).status, 201);
    holder = new Database(join(t.config.dataDir, 'projects', `${A.pid}.db`));
    holder.exec('BEGIN IMMEDIATE');
  });

  after(async () => {
    if (holder.inTransaction) holder.exec('ROLLBACK');
    holder.close();
    await t.close();
  });

  test('writes answer 503 project_busy with Retry-After; reads and other projects go on', async () => {
    const write = A.rest('POST', 'notes', { body: { body: 'blocked' } });
    const signUp = t.req('POST', `/${A.pid}/auth/register`, { body: { email: 'late@example.com', password: 'a password' } });
    // while both wait for the lock (asynchronously), everything else answers
    let others = 0;
    let settled = false;
    const both = Promise.all([write, signUp]).finally(() => (settled = true));
    while (!settled) {
      // in-process requests answered from the main thread resolve in microtasks: yield, as sockets would
      await new Promise((r) => setImmediate(r));
      assert.equal((await B.rest('GET', 'notes')).status, 200);
      assert.equal((await A.rest('GET', 'notes', { key: A.keys.select })).status, 200);
      others++;
    }
    const [w, s] = await both;
    const err = expectError(w, 503, 'project_busy');
    assert.equal(w.headers['retry-after'], '1', JSON.stringify(err));
    expectError(s, 503, 'project_busy');
    assert.ok(others >= 3, `only ${others} other requests answered while two writes waited for the lock`);
  });

  test('once the lock is free, writes go through again', async () => {
    holder.exec('ROLLBACK');
    assert.equal((await A.rest('POST', 'notes', { body: { body: 'after' } })).status, 201);
    assert.equal((await t.req('POST', `/${A.pid}/auth/register`, { body: { email: 'later@example.com', password: 'a password' } })).status, 201);
  });
});

test('[sqlite] deleting a project does not wait for another project\'s long statement', async () => {
  const t = await startTestApp('sqlite', { STATEMENT_TIMEOUT_MS: '3000', SQLITE_WORKERS: '2', PROJECT_CONCURRENCY: '1' });
  try {
    const A = await dataPlane(t);
    const B = await dataPlane(t);
    await A.createTable('docs', [{ name: 'body', type: 'text' }]);
    await B.createTable('notes', [{ name: 'body', type: 'text' }]);
    for (let batch = 0; batch < 4; batch++) {
      const rows = Array.from({ length: 2000 }, (_, i) => ({ body: `${batch}.${i} `.padEnd(400, 'abcdefghij') }));
      assert.equal((await A.rest('POST', 'docs', { body: rows, headers: { prefer: 'return=minimal' } })).status, 201);
    }
    await B.rest('POST', 'notes', { body: { body: 'x' } }); // B's file is open in a worker
    const filter = `or=(${Array.from({ length: 99 }, (_, i) => `body.ilike.*${'ab'.repeat(8)}${i}*`).join(',')})`;
    let longDone = false;
    const long = A.rest('GET', `docs?${filter}`, { headers: { prefer: 'count=exact' } }).finally(() => (longDone = true));
    await new Promise((r) => setTimeout(r, 50));
    const del = await t.req('DELETE', `/projects/${B.pid}`, { token: B.owner });
    assert.equal(del.status, 204);
    assert.equal(longDone, false, "the deletion waited for the other project's statement");
    expectError(await long, 503, 'query_timeout');
    expectError(await B.rest('GET', 'notes'), 401);
  } finally {
    await t.close();
  }
});

test('[sqlite] STATEMENT_TIMEOUT_MS=0: statements run unbounded, and work', async () => {
  const t = await startTestApp('sqlite', { STATEMENT_TIMEOUT_MS: '0' });
  try {
    const d = await dataPlane(t);
    await d.createTable('notes', [{ name: 'body', type: 'text' }]);
    assert.equal((await d.rest('POST', 'notes', { body: [{ body: 'a' }, { body: 'b' }] })).status, 201);
    const res = await d.rest('GET', 'notes?body=ilike.*A*', { headers: { prefer: 'count=exact' } });
    assert.equal(res.status, 200);
    assert.equal(res.headers['content-range'], '0-0/1');
  } finally {
    await t.close();
  }
});
