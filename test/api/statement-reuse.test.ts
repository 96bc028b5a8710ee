// Statements are reused across requests (on PostgreSQL, named prepared statements per connection):
// whatever a table becomes under the same name, the next request reads and writes it as it is now,
// a table altered in a transaction that rolled back is written as it is now, and a project's many
// different statements all run, however many a connection has prepared.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeEngines } from '../support/app.ts';
import { dataPlane } from '../support/data-plane.ts';

await describeEngines('statement reuse', (ctx) => {
  test('a table dropped and created again under its name with other column types reads and writes as it is now', async () => {
    const t = ctx();
    const d = await dataPlane(t);
    const first = await d.createTable('things', [{ name: 'v', type: 'text' }, { name: 'n', type: 'integer' }]);
    await d.rest('POST', 'things', { body: [{ v: 'one', n: 1 }] });
    // enough times for every pooled connection to have prepared these statements
    for (let i = 0; i < 12; i++) {
      const read = await d.rest('GET', 'things?select=v,n&n=gte.1');
      assert.deepEqual(read.body, [{ v: 'one', n: 1 }]);
      assert.equal((await d.rest('POST', 'things', { body: { v: `x${i}`, n: -1 }, headers: { prefer: 'return=minimal' } })).status, 201);
    }
    assert.equal((await t.req('DELETE', `/projects/${d.pid}/tables/${first.id}`, { token: d.owner })).status, 204);
    await d.createTable('things', [{ name: 'v', type: 'integer' }, { name: 'n', type: 'boolean' }]);
    // the same request text as before, now over a boolean, on every connection
    for (let i = 0; i < 12; i++) assert.deepEqual((await d.rest('GET', 'things?select=v,n&n=gte.1')).body, []);
    assert.equal((await d.rest('POST', 'things', { body: [{ v: 7, n: true }] })).status, 201);
    for (let i = 0; i < 12; i++) {
      // the same request text as before, now over a boolean
      const read = await d.rest('GET', 'things?select=v,n&n=gte.1');
      assert.equal(read.status, 200, JSON.stringify(read.body));
      assert.deepEqual(read.body, [{ v: 7, n: true }]);
      const all = await d.rest('GET', 'things?select=v,n&v=gte.0&order=v');
      assert.equal(all.status, 200, JSON.stringify(all.body));
      assert.deepEqual(all.body[0], { v: 7, n: true });
      assert.equal((await d.rest('POST', 'things', { body: { v: 100 + i, n: false }, headers: { prefer: 'return=minimal' } })).status, 201);
    }
  });

  test('a column added, rolled back and added again with another type is written with its new type', async () => {
    const t = ctx();
    const d = await dataPlane(t);
    const table = await d.createTable('things', [{ name: 'v', type: 'text' }]);
    await d.rest('POST', 'things', { body: [{ v: 'a' }, { v: 'b' }] });
    const alter = (body: unknown) => t.req('PATCH', `/projects/${d.pid}/tables/${table.id}`, { token: d.owner, body });
    // several times, so that every pooled connection meets the rolled-back column
    for (let i = 0; i < 6; i++) {
      const clash = await alter({ add_columns: [{ name: 'n', type: 'integer', default: 5, unique: true }] });
      assert.equal(clash.status, 409, JSON.stringify(clash.body));
    }
    const added = await alter({ add_columns: [{ name: 'n', type: 'text', default: 'same' }] });
    assert.equal(added.status, 200, JSON.stringify(added.body));
    assert.deepEqual((await d.rest('GET', 'things?select=v,n&order=v')).body, [{ v: 'a', n: 'same' }, { v: 'b', n: 'same' }]);
  });

  test('hundreds of different statements of one project all answer', async () => {
    const t = ctx();
    const d = await dataPlane(t);
    await d.createTable('nums', [{ name: 'n', type: 'integer' }]);
    await d.rest('POST', 'nums', { body: Array.from({ length: 50 }, (_, i) => ({ n: i })) });
    for (let i = 1; i <= 300; i++) {
      // a list of i values is a statement of its own
      const values = Array.from({ length: i }, (_, k) => k);
      const res = await d.rest('GET', `nums?select=n&n=in.(${values.join(',')})`);
      assert.equal(res.status, 200);
      assert.equal(res.body.length, Math.min(i, 50));
    }
  });

  test('PostgreSQL: a connection past its prepared statements runs the rest unnamed and stays (it is not replaced every few hundred statements)', async (tc) => {
    const t = ctx();
    if (t.kind !== 'postgres') return tc.skip('PostgreSQL only');
    const d = await dataPlane(t);
    const db = await t.engine.data(d.pid, 0);
    const seen = new Map<number, number>();
    for (let i = 0; i < 700; i++) {
      // a text of its own each time: 700 named statements would be more than a connection prepares
      const row = await db.get<{ pid: number; prepared: number }>(`SELECT pg_backend_pid() AS pid, (SELECT count(*) FROM pg_prepared_statements) AS prepared, ? AS k${i}`, [i]);
      seen.set(row!.pid, Math.max(seen.get(row!.pid) ?? 0, Number(row!.prepared)));
    }
    // one after the other, the pool hands out the same idle connection each time; before, it was
    // closed and replaced at 256 prepared statements, so 700 statements saw three
    assert.equal(seen.size, 1, `${seen.size} connections`);
    for (const [pid, prepared] of seen) assert.ok(prepared <= 256, `connection ${pid} held ${prepared} prepared statements`);
  });
});
