// A worker that stays silent past its statement's deadline is stuck in one native call (a SQLite
// function no interrupt reaches). It is replaced, and its request answered 503 query_timeout, but
// the thread is asked to end rather than terminated: terminated inside the call, it aborted the
// whole process when the call returned (better-sqlite3 met V8's termination; a hostile review).
// This test process is the one that would abort.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteEngine } from '../../src/storage/sqlite/sqlite-engine.ts';
import { QueryTimeout } from '../../src/storage/engine.ts';

const dir = mkdtempSync(join(tmpdir(), 'bp-retire-'));
const P = 'retireproject';
let engine: SqliteEngine;

before(async () => {
  engine = await SqliteEngine.open({ dataDir: dir, statementTimeoutMs: 1000, stuckGraceMs: 100 });
  await engine.createProjectStore(P);
});

after(async () => {
  await engine.close();
  rmSync(dir, { recursive: true, force: true });
});

// a recursive count slow enough to leave the main thread for a worker, then SQLite's own instr()
// on a long near-miss (about 2e11 bytes compared in one call, seconds), which depends on the count so that
// it is not evaluated up front
const STUCK = `SELECT instr(h || substr(k, 1, 0), n) AS i
  FROM (SELECT count(*) AS k FROM (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000000) SELECT x FROM c)),
       (SELECT ? AS h, ? AS n)`;

test('a worker stuck in one long native call past its deadline: 503 query_timeout, replaced, asked to end; the process lives on', async () => {
  const db = await engine.data(P);
  const replacedBefore = engine.workersReplaced;
  await assert.rejects(db.get(STUCK, ['a'.repeat(1_000_000), `${'a'.repeat(300_000)}b`]), QueryTimeout);
  // the project goes on at once, on the main thread and in a worker
  assert.deepEqual(await db.get('SELECT 1 AS one'), { one: 1 });
  await db.get('SELECT count(*) AS n FROM (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 300000) SELECT x FROM c)');
  assert.ok(engine.workersReplaced > replacedBefore || engine.workersStarted > 0);
  // the stuck thread ends once its call returns; closing the engine waits for it, and nothing aborts
  await new Promise((r) => setTimeout(r, 4000));
  assert.deepEqual(await db.get('SELECT 2 AS two'), { two: 2 });
});
