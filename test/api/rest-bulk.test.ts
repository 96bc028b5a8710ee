// What a large write costs the service, on every engine: memory stays bounded by a slice of rows
// and by what the response returns (MAX_RETURNED_CELLS), PATCH and DELETE never receive more rows
// than they may return, and upserts take a few statements per 1024 rows, not one or two per row.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import v8 from 'node:v8';
import vm from 'node:vm';
import { setTimeout as sleep } from 'node:timers/promises';
import { describeEngines, expectError, type TestApp } from '../support/app.ts';
import { dataPlane, type DataPlane } from '../support/data-plane.ts';
import { countStatements } from './rest-statements.ts';

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;

/** The most live heap (after a full collection) seen while `work` runs, above what was live before. */
async function liveHeapGrowth(work: () => Promise<unknown>): Promise<number> {
  gc();
  const base = process.memoryUsage().heapUsed;
  let peak = base;
  const timer = setInterval(() => {
    gc();
    peak = Math.max(peak, process.memoryUsage().heapUsed);
  }, 100);
  try {
    await work();
  } finally {
    clearInterval(timer);
  }
  return peak - base;
}

/** A select list of `n` columns, every one the id under another name. */
const wide = (n: number) => Array.from({ length: n }, (_, i) => `c${i}:id`).join(',');

await describeEngines('rest passthrough bulk writes', (ctx, kind) => {
  let t: TestApp;
  let d: DataPlane;
  const stored = async (table: string) => {
    const db = await t.engine.project(d.pid);
    return db.all<Record<string, unknown>>(`SELECT * FROM ${db.t(table)} ORDER BY "id"`);
  };

  before(async () => {
    t = ctx();
    d = await dataPlane(t);
  });

  test('an insert that fits one statement is that statement alone, no transaction: a violating row fails it and nothing is written', async () => {
    const table = await d.createTable('single', [{ name: 'n', type: 'integer' }]);
    assert.equal((await d.policy(table.id, 'INSERT', 'n < 100')).status, 201);
    const statements = async (body: unknown, prefer = 'return=representation') => {
      const counter = countStatements(t);
      const res = await d.rest('POST', 'single', { body, headers: { prefer } });
      return { status: res.status, code: res.body?.code, ...counter.stop() };
    };
    const one = { statements: 1, transactions: 0 };
    assert.deepEqual(await statements({ n: 1 }), { status: 201, code: undefined, ...one, shapes: 1, maxRows: 1 });
    assert.deepEqual(await statements(Array.from({ length: 1024 }, (_, n) => ({ n: n % 50 })), 'return=minimal'), { status: 201, code: undefined, ...one, shapes: 1, maxRows: 1024 });
    // the last row breaks the policy: the statement fails, with the 1,023 before it
    const violating = await statements(Array.from({ length: 1024 }, (_, n) => ({ n: n === 1023 ? 100 : n % 50 })), 'return=minimal');
    assert.deepEqual([violating.status, violating.code, violating.transactions], [403, 'rls_violation', 0]);
    assert.equal((await stored('single')).length, 1025);
    // more than one statement (1,000 rows are slices of 512, 256…; explicit ids; an upsert): one transaction
    const bulk = await statements(Array.from({ length: 1000 }, (_, n) => ({ n: n === 999 ? 100 : n % 50 })), 'return=minimal');
    // on PostgreSQL one more: the size of the table before the slices (PROJECT_MAX_BYTES; after them, when they succeed)
    assert.deepEqual([bulk.status, bulk.transactions, bulk.statements], [403, 1, t.kind === 'postgres' ? 7 : 6]);
    assert.equal((await stored('single')).length, 1025, 'the slices before the violating one rolled back');
    for (const [body, prefer] of [[[{ id: 5000, n: 1 }, { n: 2 }], 'return=minimal'], [{ id: 1, n: 3 }, 'resolution=merge-duplicates']] as const)
      assert.equal((await statements(body, prefer)).transactions, 1, JSON.stringify(body));
  });

  test('a bulk insert completes its rows a slice at a time: 30,000 {} into 100 columns stays within a few MB', async () => {
    await d.createTable('wide', Array.from({ length: 100 }, (_, i) => ({ name: `c${i}`, type: 'integer', default: i })));
    const body = `[${Array.from({ length: 30_000 }, () => '{}').join(',')}]`;
    let res;
    const growth = await liveHeapGrowth(async () => {
      res = await d.rest('POST', 'wide', { rawBody: body, headers: { 'content-type': 'application/json', prefer: 'return=minimal, count=exact' } });
    });
    assert.equal(res!.status, 201);
    assert.equal(res!.headers['content-range'], '0-29999/30000');
    // every row complete at once took about 4 KB a row (120 MB here)
    assert.ok(growth < 40e6, `live heap grew by ${(growth / 1e6).toFixed(0)} MB`);
    assert.deepEqual((await d.rest('GET', 'wide?select=c0,c99&id=eq.30000')).body, [{ c0: 0, c99: 99 }]);
  });

  test('a write whose representation would exceed 1,000,000 values is 413 too_many_rows and writes nothing', async () => {
    await d.createTable('cells', [{ name: 'n', type: 'integer' }]);
    const rows = Array.from({ length: 2001 }, (_, n) => ({ n }));
    const counter = countStatements(t);
    const refused = await d.rest('POST', `cells?select=${wide(500)}`, { body: rows });
    assert.equal(counter.stop().statements, 0, 'refused before any statement');
    const err = expectError(refused, 413, 'too_many_rows');
    assert.deepEqual(err.details, { rows: 2001, columns: 500, max_values: 1_000_000 });
    assert.match(err.hint, /return=minimal/);
    assert.deepEqual(await stored('cells'), []);
    const minimal = await d.rest('POST', `cells?select=${wide(500)}`, { body: rows, headers: { prefer: 'return=minimal, count=exact' } });
    assert.equal(minimal.status, 201);
    assert.equal(minimal.headers['content-range'], '0-2000/2001');
    const before = await stored('cells');
    for (const [method, body] of [['PATCH', { n: -1 }], ['DELETE', undefined]] as const) {
      const res = await d.rest(method, `cells?n=gte.0&select=${wide(500)}`, { body, headers: { prefer: 'return=representation' } });
      assert.deepEqual(expectError(res, 413, 'too_many_rows').details, { rows: 2001, columns: 500, max_values: 1_000_000 }, method);
    }
    assert.deepEqual(await stored('cells'), before, 'rolled back');
    const fits = await d.rest('PATCH', `cells?n=gte.1990&select=${wide(500)}`, { body: { n: 1 } });
    assert.equal(fits.status, 200);
    assert.equal(fits.body.length, 11);
  });

  test('PATCH and DELETE count and check every row they touch, but receive only the rows they return', async () => {
    const table = await d.createTable('many', [{ name: 'n', type: 'integer' }]);
    await d.rest('POST', 'many', { body: Array.from({ length: 3000 }, (_, n) => ({ n })), headers: { prefer: 'return=minimal' } });
    assert.equal((await d.policy(table.id, 'UPDATE', 'n < 100000')).status, 201);
    let counter = countStatements(t);
    const patched = await d.rest('PATCH', 'many?n=gte.0', { body: { n: 5 }, headers: { prefer: 'return=minimal, count=exact' } });
    assert.equal(patched.status, 204);
    assert.equal(patched.headers['content-range'], '0-2999/3000');
    assert.ok(counter.stop().maxRows <= 1, 'no statement handed back the touched rows');
    counter = countStatements(t);
    expectError(await d.rest('PATCH', 'many?id=gt.1', { body: { n: 100000 }, headers: { prefer: 'return=minimal' } }), 403, 'rls_violation');
    assert.ok(counter.stop().maxRows <= 1);
    assert.equal((await d.rest('GET', 'many?n=eq.5&limit=1', { headers: { prefer: 'count=exact' } })).headers['content-range'], '0-0/3000', 'rolled back');
    counter = countStatements(t);
    const deleted = await d.rest('DELETE', 'many?id=gt.1000', { headers: { prefer: 'count=exact' } });
    assert.equal(deleted.headers['content-range'], '0-1999/2000');
    assert.ok(counter.stop().maxRows <= 1);
    const shown = await d.rest('DELETE', 'many?id=gt.0&select=id', { headers: { prefer: 'return=representation' } });
    assert.deepEqual(shown.body.map((r: { id: number }) => r.id), Array.from({ length: 1000 }, (_, i) => i + 1), 'ordered by id');
  });

  test('a 5,000-row upsert takes a few statements per 1024 rows; rows come back in input order', async () => {
    await d.createTable('handles', [{ name: 'h', type: 'text', unique: true }, { name: 'v', type: 'integer' }]);
    await d.rest('POST', 'handles', { body: Array.from({ length: 2500 }, (_, i) => ({ h: `h${i * 2}`, v: 0 })), headers: { prefer: 'return=minimal' } });
    const body = Array.from({ length: 5000 }, (_, i) => ({ h: `h${i}`, v: 1 }));
    let counter = countStatements(t);
    const merged = await d.rest('POST', 'handles?on_conflict=h&select=h,v', { body, headers: { prefer: 'resolution=merge-duplicates' } });
    let used = counter.stop();
    assert.equal(merged.status, 201, JSON.stringify(merged.body));
    assert.deepEqual(merged.body, body, 'updated and inserted rows, in input order');
    // an UPDATE and an INSERT per slice, twice that when a busy machine makes the embedded engine run
    // the transaction again on a worker thread (its main-thread attempt ran past its deadline)
    assert.ok(used.statements <= 50, `${used.statements} statements`);
    counter = countStatements(t);
    const ignored = await d.rest('POST', 'handles?on_conflict=h&select=h,v', {
      body: Array.from({ length: 6000 }, (_, i) => ({ h: `h${i}`, v: 2 })),
      headers: { prefer: 'resolution=ignore-duplicates' },
    });
    used = counter.stop();
    assert.deepEqual(ignored.body, Array.from({ length: 1000 }, (_, i) => ({ h: `h${5000 + i}`, v: 2 })), 'existing rows skipped');
    assert.ok(used.statements <= 30, `${used.statements} statements`);
    assert.equal((await d.rest('GET', 'handles?v=eq.1', { headers: { prefer: 'count=exact' } })).headers['content-range'], '0-999/5000');
  });

  test('rows alternating explicit ids and generated ones take a few statements, the id generator moved once', async () => {
    await d.createTable('alternating', [{ name: 'n', type: 'integer' }]);
    const body = Array.from({ length: 2000 }, (_, n) => (n % 2 ? { n } : { id: 10_000 + n, n }));
    // the second time, the upsert merges the explicit ids and inserts the others anew
    for (const prefer of ['return=minimal', 'return=minimal, resolution=merge-duplicates']) {
      const counter = countStatements(t);
      const res = await d.rest('POST', 'alternating', { body, headers: { prefer } });
      const { statements } = counter.stop();
      assert.equal(res.status, 201, JSON.stringify(res.body));
      assert.ok(statements <= 30, `${prefer}: ${statements} statements`);
    }
    const all = await d.rest('GET', 'alternating?select=id&order=id.desc&limit=1', { headers: { prefer: 'count=exact' } });
    assert.equal(all.headers['content-range'], '0-0/3000');
    assert.deepEqual(all.body, [{ id: 11_998 + 2000 }], 'generated ids follow the explicit ones');
  });

  test('a merging upsert: every column the body names is set, one key at most once, and never beside an id', async () => {
    await d.createTable('tags', [{ name: 't', type: 'text', unique: true }, { name: 'note', type: 'text' }, { name: 'rank', type: 'integer', default: 3 }]);
    await d.rest('POST', 'tags', { body: [{ t: 'a', note: 'kept?', rank: 1 }] });
    const upsert = (body: unknown, resolution = 'merge-duplicates') => d.rest('POST', 'tags?on_conflict=t&select=t,note,rank', { body, headers: { prefer: `resolution=${resolution}` } });
    // as PostgREST: a column some row names is set on every row, NULL where a row leaves it out
    const res = await upsert([{ t: 'b', note: 'new' }, { t: 'a' }]);
    assert.deepEqual(res.body, [{ t: 'b', note: 'new', rank: 3 }, { t: 'a', note: null, rank: 1 }]);
    const repeated = expectError(await upsert([{ t: 'c' }, { t: 'a', note: 'x' }, { t: 'a', note: 'y' }]), 422, 'invalid_body');
    assert.deepEqual(repeated.details, { column: 't', reason: 'repeated_key' });
    const first = await upsert([{ t: 'z', note: 'first' }, { t: 'z', note: 'second' }], 'ignore-duplicates');
    assert.deepEqual(first.body, [{ t: 'z', note: 'first', rank: 3 }], 'ignore-duplicates: the first row of a key wins');
    for (const resolution of ['merge-duplicates', 'ignore-duplicates'])
      assert.equal(expectError(await upsert({ id: 1, t: 'a', note: 'x' }, resolution), 422, 'read_only_column').details.column, 'id');
    assert.deepEqual((await d.rest('GET', 'tags?select=t,note&order=t')).body, [{ t: 'a', note: null }, { t: 'b', note: 'new' }, { t: 'z', note: 'first' }]);
  });

  if (kind === 'postgres')
    test('PostgreSQL: requests with explicit ids take turns on the table before moving its id sequence', async () => {
      await d.createTable('turns', [{ name: 'n', type: 'integer' }]);
      const db = await t.engine.project(d.pid);
      let release!: () => void;
      const held = new Promise<void>((r) => (release = r));
      const holder = db.tx(async (tx) => {
        await tx.get('SELECT pg_advisory_xact_lock(hashtext(?))', [`baseplate:ids:${db.t('turns')}`]);
        await held;
      });
      let done = false;
      const insert = d.rest('POST', 'turns', { body: { id: 10, n: 1 } }).finally(() => (done = true));
      // not timed: the request must be seen waiting for the lock before it may finish
      for (;;) {
        assert.equal(done, false, 'the insert did not wait for the lock');
        const waiting = await db.get<{ n: number }>(`SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted`);
        if (Number(waiting!.n) > 0) break;
        await sleep(10);
      }
      release();
      await holder;
      assert.equal((await insert).status, 201);
      assert.deepEqual((await d.rest('POST', 'turns?select=id', { body: { n: 2 } })).body, [{ id: 11 }]);
    });
});
