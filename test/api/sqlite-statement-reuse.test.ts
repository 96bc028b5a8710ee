// A statement of the embedded engine runs again without being parsed and planned again. SQLite
// expires a statement whose plan read a bound value (a LIMIT or OFFSET, which every read has) each
// time that value is bound, and better-sqlite3 binds at every run: every read was prepared twice
// until the connections were opened with plans that do not depend on bound values
// (native/sqlite-deadline.c, SQLITE_DBCONFIG_ENABLE_QPSG).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp } from '../support/app.ts';
import { dataPlane } from '../support/data-plane.ts';
import type { SqliteDb } from '../../src/storage/sqlite/sqlite-db.ts';

test('[sqlite] reads with other limits, offsets and filter values reuse their statements: none is prepared again', async () => {
  const t = await startTestApp('sqlite');
  try {
    const d = await dataPlane(t);
    const table = await d.createTable('notes', [{ name: 'body', type: 'text' }, { name: 'n', type: 'integer' }]);
    assert.equal((await d.policy(table.id, 'SELECT', 'n >= 0')).status, 201);
    assert.equal((await d.policy(table.id, 'INSERT', 'true')).status, 201);
    const rows = Array.from({ length: 30 }, (_, n) => ({ body: `note ${n}`, n }));
    assert.equal((await d.rest('POST', 'notes', { body: rows, headers: { prefer: 'return=minimal' } })).status, 201);
    const reprepares = async () => ((await t.engine.project(d.pid)) as SqliteDb).raw.prepare('SELECT bp_reprepares() AS n').get() as { n: number };
    const before = (await reprepares()).n;
    for (let i = 0; i < 12; i++) {
      const res = await d.rest('GET', `notes?select=body,n&n=gte.${i}&order=n&limit=${(i % 4) + 1}&offset=${i % 3}`);
      assert.equal(res.status, 200);
      assert.deepEqual(res.body.map((r: { n: number }) => r.n), Array.from({ length: (i % 4) + 1 }, (_, k) => i + (i % 3) + k));
    }
    assert.equal((await reprepares()).n, before, 'no statement of the project file was prepared again');
  } finally {
    await t.close();
  }
});
