// SQLite notices an interrupt between rows, never between the calls of one row's expression, so a
// row whose policies call the engine's costly functions many times held the main thread for
// seconds (a hostile review: 100 JSON_EXTRACT of a 1 MB document, 60 ms each). The engine's
// functions look at the statement's deadline themselves: past it the row stops between two calls,
// and the statement moves on to a worker as any other statement past the main thread's allowance.
// And a row reading the same document again parses it once.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { SqliteEngine } from '../../src/storage/sqlite/sqlite-engine.ts';
import { jsonStats, registerSqliteFunctions } from '../../src/storage/sqlite/sqlite-functions.ts';
import { deadlineSetter } from '../../src/storage/sqlite/sqlite-deadline.ts';
import { sqliteDeadlineLibrary } from '../../src/storage/sqlite/sqlite-build.ts';

const dir = mkdtempSync(join(tmpdir(), 'bp-fndeadline-'));
const P = 'deadlineproject';
let engine: SqliteEngine;
// a document of about a megabyte, and one row's expression reading it 100 times
const DOC = JSON.stringify(Array.from({ length: 120_000 }, (_, i) => i));
const EXTRACTS = Array.from({ length: 100 }, (_, i) => `bp_json_extract(j, '$[${i}]') IS NULL`).join(' OR ');

before(async () => {
  engine = await SqliteEngine.open({ dataDir: dir, statementTimeoutMs: 20000 });
  await engine.createProjectStore(P);
  const db = await engine.project(P);
  await db.run('CREATE TABLE t (id INTEGER PRIMARY KEY, j TEXT)');
  await db.run('INSERT INTO t (j) VALUES (?)', [DOC]);
});

after(async () => {
  await engine.close();
  rmSync(dir, { recursive: true, force: true });
});

test('one row calling a costly function a hundred times is stopped between calls on the main thread and answered by a worker', async () => {
  assert.equal(engine.workersStarted, 0);
  const db = await engine.data(P);
  assert.deepEqual(await db.all(`SELECT id FROM t WHERE NOT (${EXTRACTS})`), [{ id: 1 }]);
  assert.ok(engine.workersStarted > 0, 'the main thread gave the row up past its allowance');
});

test("past the statement's deadline the engine's functions fail as an interrupted statement (SQLITE_INTERRUPT: QueryTimeout), in a worker too", () => {
  const db = new Database(':memory:');
  (db.loadExtension as (file: string, entryPoint: string) => void)(sqliteDeadlineLibrary(), 'sqlite3_sqlitedeadline_init');
  registerSqliteFunctions(db);
  const setDeadline = deadlineSetter(db);
  db.exec('CREATE TABLE t (j TEXT)');
  db.prepare('INSERT INTO t VALUES (?)').run(DOC);
  setDeadline(1);
  try {
    // the first call alone outlasts a millisecond; the second looks at the deadline
    assert.throws(() => db.prepare(`SELECT ${EXTRACTS} AS x FROM t`).get(), (err: { code?: string }) => err.code === 'SQLITE_INTERRUPT');
  } finally {
    setDeadline(0);
  }
  assert.deepEqual(db.prepare("SELECT bp_json_extract(j, '$[2]') AS x FROM t").get(), { x: '2' }, 'without a deadline it answers');
  db.close();
});

test('a row reading one document a hundred times parses it once; another document is parsed again', () => {
  const db = new Database(':memory:');
  registerSqliteFunctions(db);
  db.exec('CREATE TABLE t (j TEXT)');
  db.prepare('INSERT INTO t VALUES (?), (?)').run(DOC, '[7]');
  db.prepare("SELECT bp_json_length('[0]') AS n").get(); // another document is the last one read
  const before = jsonStats.parses;
  assert.equal((db.prepare(`SELECT count(*) AS n FROM t WHERE ${EXTRACTS}`).get() as { n: number }).n, 1, "[7] has no $[1]");
  assert.equal(jsonStats.parses - before, 2, 'one parse per row, not one per call');
  db.close();
});
