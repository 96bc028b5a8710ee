// PROJECT_MAX_BYTES on every engine: one project cannot fill the disk the others share. Writes that
// need more space than its bound are refused (507 storage_full, reason project_quota) and change
// nothing; reads and deletes go on; the space deleted rows held is written again (on PostgreSQL
// once vacuumed); another project is not affected. The embedded engine's files stop at the bound
// by themselves; PostgreSQL keeps it from a measure at most a second old (so the loops below may
// write past the bound for up to a second before they are refused).
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { describeEngines, expectError, type TestApp } from '../support/app.ts';
import { dataPlane, type DataPlane } from '../support/data-plane.ts';

const LIMIT = 1024 * 1024;
/** incompressible text (PostgreSQL compresses what it stores out of line) */
const blob = (kib: number) => randomBytes(kib * 768).toString('base64');

await describeEngines(
  'storage bound per project',
  (ctx, kind) => {
    let t: TestApp;
    let d: DataPlane;
    const count = async () => (await d.rest('GET', 'blobs?select=id')).body.length as number;

    /** Writes 96 KiB rows until the bound refuses one (within ten seconds); returns that refusal. */
    const fill = async () => {
      for (let i = 0; i < 200; i++) {
        const res = await d.rest('POST', 'blobs', { body: { data: blob(96) }, headers: { prefer: 'return=minimal' } });
        if (res.status !== 201) return res;
        if (i > 12) await sleep(50);
      }
      throw new Error('the bound never refused a write');
    };

    before(async () => {
      t = ctx();
      d = await dataPlane(t);
      await d.createTable('blobs', [{ name: 'data', type: 'text' }, { name: 'n', type: 'integer', nullable: true }]);
    });

    test('writes past the bound are 507 storage_full (project_quota), and the refused one writes nothing', async () => {
      const refused = await fill();
      const err = expectError(refused, 507, 'storage_full');
      assert.deepEqual(err.details, { reason: 'project_quota', limit: LIMIT });
      assert.match(err.message, /storage limit of 1048576 bytes/);
      const rows = await count();
      expectError(await d.rest('POST', 'blobs', { body: [{ data: blob(96) }, { data: blob(96) }] }), 507, 'storage_full');
      expectError(await d.rest('PATCH', 'blobs?id=gt.0', { body: { data: blob(200) } }), 507, 'storage_full');
      assert.equal(await count(), rows, 'nothing written');
      const first = (await d.rest('GET', 'blobs?select=data&order=id&limit=1')).body[0].data as string;
      assert.equal(first.length, 96 * 1024, 'rows unchanged');
    });

    test('at the bound, reads answer and a column added with a default (written into every row) is refused, the table unchanged', async () => {
      assert.equal((await d.rest('GET', 'blobs?select=id&limit=1')).status, 200);
      const table = (await t.req('GET', `/projects/${d.pid}/tables`, { token: d.owner })).body.find((x: { name: string }) => x.name === 'blobs');
      const alter = await t.req('PATCH', `/projects/${d.pid}/tables/${table.id}`, { token: d.owner, body: { add_columns: [{ name: 'pad', type: 'text', default: blob(8) }] } });
      expectError(alter, 507, 'storage_full');
      const after = (await t.req('GET', `/projects/${d.pid}/tables/${table.id}`, { token: d.owner })).body;
      assert.deepEqual(after.columns.map((c: { name: string }) => c.name), table.columns.map((c: { name: string }) => c.name));
    });

    test('at the bound, a new table or function is refused too (they take space)', async () => {
      const table = await t.req('POST', `/projects/${d.pid}/tables`, {
        token: d.owner,
        body: { name: 'more', columns: Array.from({ length: 40 }, (_, i) => ({ name: `c${i}`, type: 'text', unique: true })) },
      });
      expectError(table, 507, 'storage_full');
      const code = `export default () => 1; // ${blob(200)}`;
      expectError(await t.req('PUT', `/projects/${d.pid}/functions/big`, { token: d.owner, body: { code } }), 507, 'storage_full');
      assert.equal((await t.req('GET', `/projects/${d.pid}/functions`, { token: d.owner })).body.length, 0);
    });

    test('below the bound, one update that would write past it is refused whole (an update writes every row it reaches)', async () => {
      const fresh = await dataPlane(t);
      await fresh.createTable('small', [{ name: 'v', type: 'text' }]);
      assert.equal((await fresh.rest('POST', 'small', { body: Array.from({ length: 60 }, () => ({ v: 'x' })), headers: { prefer: 'return=minimal' } })).status, 201);
      expectError(await fresh.rest('PATCH', 'small?id=gt.0', { body: { v: blob(48) }, headers: { prefer: 'return=minimal' } }), 507, 'storage_full');
      assert.deepEqual((await fresh.rest('GET', 'small?select=v&limit=1')).body, [{ v: 'x' }], 'nothing written');
      // after a refusal PostgreSQL refuses growing writes before they write for a few seconds (a
      // refused write's space stays taken until vacuumed), unless rows are deleted: a DELETE of nothing frees nothing
      assert.equal((await fresh.rest('DELETE', 'small?id=eq.999')).status, 204);
      if (kind === 'postgres') expectError(await fresh.rest('PATCH', 'small?id=lte.2', { body: { v: blob(48) } }), 507, 'storage_full');
      assert.equal((await fresh.rest('DELETE', 'small?id=eq.60')).status, 204);
      assert.equal((await fresh.rest('PATCH', 'small?id=lte.2', { body: { v: blob(48) }, headers: { prefer: 'return=minimal' } })).status, 204, 'a smaller one fits');
    });

    test('a burst of writes, each within the bound alone, is counted as it goes: the store stays near its bound', async () => {
      const burst = await dataPlane(t);
      await burst.createTable('blobs', [{ name: 'data', type: 'text' }]);
      const statuses: number[] = [];
      for (let i = 0; i < 30; i++) {
        const rows = i % 2 ? [{ data: blob(100) }, { data: blob(100) }] : { data: blob(150) };
        statuses.push((await burst.rest('POST', 'blobs', { body: rows, headers: { prefer: 'return=minimal' } })).status);
      }
      assert.ok(statuses.includes(507), JSON.stringify(statuses));
      const db = await t.engine.project(burst.pid);
      const sql =
        kind === 'postgres'
          ? `SELECT sum(pg_total_relation_size(c.oid)) AS n FROM pg_class c WHERE c.relnamespace = CAST('p_${burst.pid}' AS regnamespace) AND c.relkind = 'r'`
          : 'SELECT page_count * page_size AS n FROM pragma_page_count(), pragma_page_size()';
      const stored = Number((await db.get<{ n: number | string }>(sql))!.n);
      // exact on the embedded engine; on PostgreSQL the writes under way when the bound was reached
      assert.ok(stored <= (kind === 'postgres' ? 2 : 1) * LIMIT, `${stored} bytes stored`);
    });

    test('another project writes as before while this one is at its bound', async () => {
      const other = await dataPlane(t);
      await other.createTable('blobs', [{ name: 'data', type: 'text' }]);
      for (let i = 0; i < 3; i++) assert.equal((await other.rest('POST', 'blobs', { body: { data: blob(96) } })).status, 201);
    });

    test('deleting rows makes room again: the space they held is written again', async () => {
      const before = await count();
      const del = await d.rest('DELETE', `blobs?id=lte.${Math.ceil(before / 2) + 1}`);
      assert.equal(del.status, 204, JSON.stringify(del.body));
      // what autovacuum does on its own on PostgreSQL: the deleted rows' space becomes free to reuse
      const db = await t.engine.project(d.pid);
      if (kind === 'postgres') await db.run(`VACUUM ${db.t('blobs')}`);
      const res = await d.rest('POST', 'blobs', { body: { data: blob(96) }, headers: { prefer: 'return=minimal' } });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      expectError(await fill(), 507, 'storage_full');
    });
  },
  { PROJECT_MAX_BYTES: String(LIMIT) },
);

await describeEngines(
  'storage bound per project, far from it',
  (ctx) => {
    test("concurrent bulk inserts far below the bound are all written (each measures its own growth, not its neighbours')", async () => {
      const d = await dataPlane(ctx());
      await d.createTable('blobs', [{ name: 'data', type: 'text' }]);
      for (let round = 0; round < 2; round++) {
        const statuses = await Promise.all(
          Array.from({ length: 10 }, async () => (await d.rest('POST', 'blobs', { body: Array.from({ length: 20 }, () => ({ data: blob(10) })), headers: { prefer: 'return=minimal' } })).status),
        );
        assert.deepEqual(statuses, Array(10).fill(201), `round ${round}`);
      }
    });
  },
  { PROJECT_MAX_BYTES: String(8 * LIMIT) },
);
