// MAX_RESULT_BYTES on every engine (storage/result-budget.ts): a statement over a project's tables
// hands back at most that much, counted as its rows are read, so that wide rows (a 100 KiB
// default makes each row of an empty insert 100 KiB) can never be read whole into memory: reads,
// a write's representation and the owner's row routes answer 413 result_too_large instead, a
// write that would answer so writes nothing, and smaller answers go on.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { describeEngines, expectError, type TestApp } from '../support/app.ts';
import { dataPlane, type DataPlane } from '../support/data-plane.ts';

const MAX = 256 * 1024;
const WIDE = 'w'.repeat(100 * 1024);

await describeEngines(
  'result budget',
  (ctx) => {
    let t: TestApp;
    let d: DataPlane;
    let tableId: string;

    before(async () => {
      t = ctx();
      d = await dataPlane(t);
      tableId = (await d.createTable('wide', [{ name: 'blob', type: 'text', default: WIDE }, { name: 'n', type: 'integer' }])).id;
      // ten empty inserts of a few bytes each: a megabyte of rows
      const res = await d.rest('POST', 'wide', { body: Array.from({ length: 10 }, (_, n) => ({ n })), headers: { prefer: 'return=minimal' } });
      assert.equal(res.status, 201);
    });

    test('a read whose rows hold more than MAX_RESULT_BYTES is 413 result_too_large, each time (first and prepared runs)', async () => {
      for (let i = 0; i < 4; i++) {
        const err = expectError(await d.rest('GET', 'wide?order=n'), 413, 'result_too_large');
        assert.match(err.message, /MAX_RESULT_BYTES/);
      }
      const some = await d.rest('GET', 'wide?order=n&limit=2');
      assert.deepEqual(some.body.map((r: { n: number; blob: string }) => [r.n, r.blob.length]), [[0, WIDE.length], [1, WIDE.length]]);
      // the narrow columns of every row are no trouble
      assert.equal((await d.rest('GET', 'wide?select=id,n')).body.length, 10);
      assert.equal((await d.rest('GET', 'wide?select=n', { headers: { accept: 'text/csv' } })).status, 200);
    });

    test("a write whose representation would exceed it is 413 and writes nothing; without the representation it is written", async () => {
      expectError(await d.rest('PATCH', 'wide?n=gte.0', { body: { n: 1 }, headers: { prefer: 'return=representation' } }), 413, 'result_too_large');
      assert.deepEqual((await d.rest('GET', 'wide?select=n&order=id')).body.map((r: { n: number }) => r.n), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
      expectError(await d.rest('POST', 'wide', { body: Array.from({ length: 5 }, () => ({ n: 99 })) }), 413, 'result_too_large');
      assert.equal((await d.rest('GET', 'wide?n=eq.99&select=id')).body.length, 0);
      const minimal = await d.rest('PATCH', 'wide?n=gte.0', { body: { n: 7 }, headers: { prefer: 'return=minimal, count=exact' } });
      assert.deepEqual([minimal.status, minimal.headers['content-range']], [204, '0-9/10']);
    });

    test('both engines measure alike: one row past the bound on a per-row route, a JSON-heavy page under it', async () => {
      const [id] = (await d.rest('POST', 'wide', { body: { blob: 'x'.repeat(300 * 1024), n: -1 }, headers: { prefer: 'return=minimal' } }), await d.rest('GET', 'wide?n=eq.-1&select=id')).body.map((r: { id: number }) => r.id);
      expectError(await d.rest('GET', `wide/${id}`), 413, 'result_too_large');
      assert.equal((await d.rest('GET', `wide/${id}?select=n`)).status, 200);
      await d.rest('DELETE', 'wide?n=eq.-1');
      // 60 arrays of 2,000 ones: 240 KB as compact JSON (PostgreSQL's text, with a space after each comma, would be 360 KB)
      await d.createTable('docs', [{ name: 'j', type: 'json' }]);
      const ones = `[${Array(2000).fill(1).join(',')}]`;
      assert.equal((await d.rest('POST', 'docs', { body: Array.from({ length: 60 }, () => ({ j: JSON.parse(ones) })), headers: { prefer: 'return=minimal' } })).status, 201);
      assert.equal((await d.rest('GET', 'docs?select=j&limit=60')).body.length, 60);
    });

    test("the owner's row routes are bounded alike", async () => {
      const res = await t.req('GET', `/projects/${d.pid}/tables/${tableId}/rows`, { token: d.owner });
      expectError(res, 413, 'result_too_large');
      const some = await t.req('GET', `/projects/${d.pid}/tables/${tableId}/rows?limit=1&select=n`, { token: d.owner });
      assert.equal(some.status, 200);
    });
  },
  { MAX_RESULT_BYTES: String(MAX) },
);

await describeEngines(
  'result budget at its least',
  (ctx) => {
    test('numbers count by their digits on both engines, as PostgreSQL sends them: 1,000 rows of nine one-digit integers are about 9 KB, not 72', async () => {
      const d = await dataPlane(ctx());
      await d.createTable('ints', Array.from({ length: 9 }, (_, i) => ({ name: `i${i}`, type: 'integer' })));
      const row = Object.fromEntries(Array.from({ length: 9 }, (_, i) => [`i${i}`, i]));
      assert.equal((await d.rest('POST', 'ints', { body: Array.from({ length: 1000 }, () => row), headers: { prefer: 'return=minimal' } })).status, 201);
      assert.equal((await d.rest('GET', 'ints?select=i0,i1,i2,i3,i4,i5,i6,i7,i8&limit=1000')).body.length, 1000);
    });
  },
  { MAX_RESULT_BYTES: String(64 * 1024) },
);
