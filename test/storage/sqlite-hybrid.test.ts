// The embedded engine's data statements: cheap ones run on the main thread (no worker is even
// started), expensive ones are interrupted there at a few milliseconds and run again in a worker,
// a transaction abandoned on the main thread is rolled back and runs exactly once in a worker, and
// a project whose statements keep proving expensive goes straight to the workers.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteEngine } from '../../src/storage/sqlite/sqlite-engine.ts';
import { InlineBudget } from '../../src/storage/sqlite/sqlite-hybrid-db.ts';

const dir = mkdtempSync(join(tmpdir(), 'bp-hybrid-'));
let engine: SqliteEngine;
const P = 'hybridproject';
// a statement of a second or so: 3e6 steps of a recursive CTE
const SLOW = 'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3000000) SELECT count(*) AS n FROM c';

before(async () => {
  engine = await SqliteEngine.open({ dataDir: dir, statementTimeoutMs: 20000 });
  await engine.createProjectStore(P);
  await (await engine.project(P)).run('CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER)');
});

after(async () => {
  await engine.close();
  rmSync(dir, { recursive: true, force: true });
});

test('cheap statements and transactions run on the main thread: no worker is started', async () => {
  const db = await engine.data(P);
  await db.run('INSERT INTO t (v) VALUES (?)', [1]);
  await db.tx(async (tx) => {
    await tx.run('INSERT INTO t (v) VALUES (?)', [2]);
  });
  assert.deepEqual(await db.all('SELECT v FROM t ORDER BY id'), [{ v: 1 }, { v: 2 }]);
  assert.equal(engine.workersStarted, 0);
});

test('an expensive statement is interrupted on the main thread and finishes in a worker', async () => {
  const db = await engine.data(P);
  assert.deepEqual(await db.get(SLOW), { n: 3000000 });
  assert.ok(engine.workersStarted > 0);
});

test('a transaction that proves expensive is rolled back on the main thread and runs once in a worker', async () => {
  const db = await engine.data('hybridproject');
  let attempts = 0;
  await db.tx(async (tx) => {
    attempts++;
    await tx.run('INSERT INTO t (v) VALUES (?)', [3]);
    await tx.get(SLOW);
    await tx.run('INSERT INTO t (v) VALUES (?)', [4]);
  });
  assert.equal(attempts, 2, 'a first attempt, abandoned, and the worker');
  assert.deepEqual(await db.all('SELECT v FROM t WHERE v >= 3 ORDER BY id'), [{ v: 3 }, { v: 4 }]);
});

test('the budget: a project that keeps failing, or uses up its share of the main thread, is refused', () => {
  const budget = new InlineBudget({ statementMs: 10, attemptMs: 20, projectRate: 100, projectBurst: 50, totalRate: 1000, totalBurst: 1000, failurePenaltyMs: 30 });
  for (let i = 0; i < 2; i++) {
    const probe = budget.attempt('a')!;
    probe.spent(10);
    probe.failed();
  }
  assert.equal(budget.attempt('a'), null, 'two failures (2 x 40 ms) exhaust a 50 ms burst');
  assert.ok(budget.attempt('b'), 'another project is unaffected');
  const probe = budget.attempt('b')!;
  probe.spent(15);
  assert.equal(probe.allowance(), 5, 'an attempt has 20 ms in all');
  probe.spent(5);
  assert.ok(probe.allowance() <= 0);
});

test('the budget: all projects together are bounded too', () => {
  const budget = new InlineBudget({ statementMs: 10, attemptMs: 20, projectRate: 1000, projectBurst: 1000, totalRate: 100, totalBurst: 30, failurePenaltyMs: 30 });
  for (const p of ['a', 'b', 'c']) budget.attempt(p)!.spent(15);
  assert.equal(budget.attempt('d'), null);
});

test("the engine's SQL functions are registered on a connection when a statement first names one, on the main thread and in a worker", async () => {
  const Q = 'functionsproject';
  await engine.createProjectStore(Q);
  const main = await engine.project(Q);
  const has = async () => ((await main.get<{ n: number }>("SELECT count(*) AS n FROM pragma_function_list WHERE name = 'bp_upper'"))!.n > 0);
  await main.run('CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)');
  await main.run('INSERT INTO t (v) VALUES (?)', ['abc']);
  assert.deepEqual(await main.all('SELECT v FROM t'), [{ v: 'abc' }]);
  assert.equal(await has(), false, 'none registered before a statement needs one');
  assert.deepEqual(await (await engine.data(Q)).all('SELECT bp_upper(v) AS u FROM t'), [{ u: 'ABC' }]);
  assert.equal(await has(), true);
  // a statement that proves expensive runs again on a worker's own connection
  const slow = `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3000000) SELECT bp_upper('n') || count(*) AS n FROM c`;
  assert.deepEqual(await (await engine.data(Q)).get(slow), { n: 'N3000000' });
  // a function no engine has is still an error
  await assert.rejects((await engine.data(Q)).all('SELECT bp_nothing(v) FROM t'), /no such function: bp_nothing/);
});
