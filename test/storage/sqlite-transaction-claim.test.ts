// A main-thread connection runs one transaction at a time, and a statement issued outside it waits
// for it to end (SqliteDb.lockedUntil). A write answered must never run inside another request's
// transaction, which may yet roll back and take that write with it: the connection is claimed in
// the same step as its BEGIN succeeds, and every way in (a statement, a bounded insert that counts
// its rows) waits for the claim.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteEngine } from '../../src/storage/sqlite/sqlite-engine.ts';
import { SqliteDb } from '../../src/storage/sqlite/sqlite-db.ts';

const dir = mkdtempSync(join(tmpdir(), 'bp-claim-'));
let engine: SqliteEngine;
const P = 'claimproject';

before(async () => {
  engine = await SqliteEngine.open({ dataDir: dir, statementTimeoutMs: 20000 });
  await engine.createProjectStore(P);
  await (await engine.project(P)).run('CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)');
});

after(async () => {
  await engine.close();
  rmSync(dir, { recursive: true, force: true });
});

const values = async (db: SqliteDb) => (await db.all<{ v: string }>('SELECT v FROM t ORDER BY id')).map((r) => r.v);

function held(db: SqliteDb, onOpen: () => Promise<void>) {
  return db.tx(async (tx) => {
    await tx.run('INSERT INTO t (v) VALUES (?)', ['held']);
    await onOpen();
  });
}

test('a write queued behind a transaction never runs inside the next one, which rolls back', async () => {
  const db = (await engine.project(P)) as SqliteDb;
  await db.run('DELETE FROM t');
  let releaseFirst!: () => void;
  const first = held(db, () => new Promise<void>((r) => (releaseFirst = r)));
  await new Promise((r) => setTimeout(r, 5));
  // queued behind the first: a transaction that fails, and a write
  const failing = db.tx(async (tx) => {
    await tx.run('INSERT INTO t (v) VALUES (?)', ['rolled back']);
    throw new Error('fails');
  });
  const write = db.run('INSERT INTO t (v) VALUES (?)', ['answered']);
  releaseFirst();
  await first;
  await assert.rejects(failing, /fails/);
  assert.deepEqual(await write, { changes: 1 });
  assert.deepEqual(await values(db), ['held', 'answered']);
});

test('an insert that counts its rows (the bounded path of the data plane) waits for a transaction of the connection', async () => {
  const db = (await engine.project(P)) as SqliteDb;
  await db.run('DELETE FROM t');
  const probe = { allowance: () => 1000, spent: () => {} };
  let inserted!: Promise<unknown>;
  const failing = held(db, async () => {
    inserted = db.probing(probe).tally!('INSERT INTO t (v) VALUES (?) RETURNING id', ['answered'], 10);
    await new Promise((r) => setTimeout(r, 5));
    throw new Error('fails');
  });
  await assert.rejects(failing, /fails/);
  assert.equal(((await inserted) as { count: number }).count, 1);
  assert.deepEqual(await values(db), ['answered']);
});
