// PROJECT_MAX_BYTES on the embedded engine: every connection to a project file (the main thread's
// and the workers') sets `max_page_count`, so the file stops growing at the bound; a write that
// needs more is StorageFull with the bound (507 storage_full, reason project_quota), told from a
// full disk, whichever thread ran it. The platform file has no such bound.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteEngine } from '../../src/storage/sqlite/sqlite-engine.ts';
import { boundReached, openConnection } from '../../src/storage/sqlite/sqlite-connection.ts';
import { translateSqliteError } from '../../src/storage/sqlite/sqlite-db.ts';
import { BOUND_REACHED } from '../../src/storage/sqlite/sqlite-worker-protocol.ts';
import { StorageFull } from '../../src/storage/engine.ts';

const dir = mkdtempSync(join(tmpdir(), 'bp-bound-'));
const LIMIT = 1024 * 1024;
const P = 'boundproject';
let engine: SqliteEngine;

before(async () => {
  engine = await SqliteEngine.open({ dataDir: join(dir, 'data'), statementTimeoutMs: 20000, projectMaxBytes: LIMIT });
  await engine.createProjectStore(P);
  await (await engine.project(P)).run('CREATE TABLE t (id INTEGER PRIMARY KEY, v BLOB)');
});

after(async () => {
  await engine.close();
  rmSync(dir, { recursive: true, force: true });
});

const isBound = (err: unknown) => err instanceof StorageFull && err.limit === LIMIT && err.status === 507 && JSON.stringify(err.details) === JSON.stringify({ reason: 'project_quota', limit: LIMIT });

test('a file opened with a bound stops growing at it; the failure is told from a full disk', () => {
  const file = join(dir, 'alone.db');
  const db = openConnection(file, { maxBytes: 256 * 1024 });
  db.exec('CREATE TABLE t (v BLOB)');
  assert.throws(() => {
    for (let i = 0; i < 100; i++) db.prepare('INSERT INTO t (v) VALUES (randomblob(16384))').run();
  }, (err: { code?: string }) => err.code === 'SQLITE_FULL');
  assert.equal(boundReached(db), 256 * 1024);
  db.close();
  const unbounded = openConnection(join(dir, 'unbounded.db'));
  assert.equal(boundReached(unbounded), null, "without a bound SQLITE_FULL is the disk's");
  unbounded.close();
  // what a worker reports (an error crosses threads as its code and message)
  const fromWorker = translateSqliteError(Object.assign(new Error(String(LIMIT)), { code: BOUND_REACHED }));
  assert.ok(isBound(fromWorker), String(fromWorker));
});

test('on the main thread: a write past the bound is refused with the bound and writes nothing; deletes make room', async () => {
  const db = await engine.data(P);
  let refused: unknown;
  try {
    for (let i = 0; i < 100; i++) await db.run('INSERT INTO t (v) VALUES (randomblob(65536))');
  } catch (err) {
    refused = err;
  }
  assert.ok(isBound(refused), String(refused));
  const rows = (await db.get<{ n: number }>('SELECT count(*) AS n FROM t'))!.n;
  assert.ok(rows >= 10 && rows < 16, `${rows} rows of 64 KiB in 1 MiB`);
  await db.run('DELETE FROM t WHERE id IN (SELECT id FROM t ORDER BY id LIMIT 4)');
  for (let i = 0; i < 4; i++) await db.run('INSERT INTO t (v) VALUES (randomblob(65536))');
  await assert.rejects(db.run('INSERT INTO t (v) VALUES (randomblob(65536))'), isBound);
});

test('in a worker (a statement too slow for the main thread): refused with the bound too', async () => {
  const db = await engine.data(P);
  await db.run('DELETE FROM t');
  // about 1.5 MiB of small rows, and slow enough to be moved to a worker
  const slowInsert = 'INSERT INTO t (v) WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3000000) SELECT randomblob(64) FROM c WHERE x % 100 = 0';
  await assert.rejects(db.run(slowInsert), isBound);
  assert.ok(engine.workersStarted > 0, 'ran in a worker');
  assert.deepEqual(await db.get('SELECT count(*) AS n FROM t'), { n: 0 }, 'nothing written');
});

test('the platform file is not bounded', async () => {
  await engine.platform.run('CREATE TABLE big (v BLOB)');
  for (let i = 0; i < 20; i++) await engine.platform.run('INSERT INTO big (v) VALUES (randomblob(65536))');
  assert.deepEqual(await engine.platform.get('SELECT count(*) AS n FROM big'), { n: 20 });
});
