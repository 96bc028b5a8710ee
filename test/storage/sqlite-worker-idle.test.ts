// The embedded engine's worker threads exit together once no statement has run in them for
// SQLITE_WORKER_IDLE_MS (each holds about 10 MiB whether it works or not), never while a statement
// or a transaction holds one, and start together again on the next statement that needs them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteEngine } from '../../src/storage/sqlite/sqlite-engine.ts';

// about 30 ms: past the main thread's allowance, so it runs again in a worker
const SLOW = 'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 300000) SELECT count(*) AS n FROM c';
const IDLE_MS = 300;

const threads = (engine: SqliteEngine) => engine.stats().sqlite!.workerThreads;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function withEngine(idleMs: number, fn: (engine: SqliteEngine) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'bp-idle-'));
  let engine: SqliteEngine | undefined;
  try {
    engine = await SqliteEngine.open({ dataDir: dir, workers: 2, workerIdleMs: idleMs });
    await engine.createProjectStore('idleproject');
    await (await engine.project('idleproject')).run('CREATE TABLE t (v INTEGER)');
    await fn(engine);
  } finally {
    await engine?.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function until(what: string, done: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !done(); i++) await sleep(10);
  assert.ok(done(), what);
}

test('[sqlite] idle workers exit together after SQLITE_WORKER_IDLE_MS and start together on the next statement that needs them', async () => {
  await withEngine(IDLE_MS, async (engine) => {
    const db = await engine.data('idleproject');
    assert.deepEqual(await db.get(SLOW), { n: 300000 });
    assert.equal(threads(engine), 2);
    await until('the idle workers exited', () => threads(engine) === 0);
    assert.deepEqual(await db.get(SLOW), { n: 300000 }, 'and answer again');
    assert.deepEqual([threads(engine), engine.workersStarted, engine.workersReplaced], [2, 4, 0]);
  });
});

test('[sqlite] workers do not exit while a transaction holds one, however long it waits', async () => {
  await withEngine(IDLE_MS, async (engine) => {
    const db = await engine.data('idleproject');
    let inWorker = false;
    await db.tx(async (tx) => {
      await tx.run('INSERT INTO t (v) VALUES (1)');
      await tx.get(SLOW); // abandoned on the main thread: the transaction runs again in a worker
      inWorker = threads(engine) > 0;
      await sleep(IDLE_MS * 3);
      assert.equal(threads(engine), 2, 'still running, past the idle time');
      await tx.run('INSERT INTO t (v) VALUES (2)');
    });
    assert.ok(inWorker);
    assert.deepEqual(await db.all('SELECT v FROM t ORDER BY v'), [{ v: 1 }, { v: 2 }]);
    await until('idle after the transaction', () => threads(engine) === 0);
  });
});

test('[sqlite] SQLITE_WORKER_IDLE_MS=0 keeps the workers', async () => {
  await withEngine(0, async (engine) => {
    await (await engine.data('idleproject')).get(SLOW);
    await sleep(IDLE_MS * 2);
    assert.equal(threads(engine), 2);
  });
});
