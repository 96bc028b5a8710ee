// A project file's main-thread connection that the open-file limit (SQLITE_OPEN_PROJECTS) closes
// while a request holds it sleeps and opens again at its next statement (sqlite-db.ts, Reopen):
// these are the edges of that. A project deleted, or the engine closed, while a transaction on it
// awaits fails the transaction as a missing store; a file that cannot be opened for want of file
// descriptors is not taken for a deleted project; the limit holds again once the transactions that
// kept files open end; sleeping connections nothing holds are forgotten; under a mixed concurrent
// load nothing fails and each file keeps one connection. (Found by a hostile review.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import v8 from 'node:v8';
import vm from 'node:vm';
import { closeSync, existsSync, openSync } from 'node:fs';
import { join } from 'node:path';
import type { SqliteEngine } from '../../src/storage/sqlite/sqlite-engine.ts';
import { StoreMissing } from '../../src/storage/engine.ts';
import { openTestEngine, withTestEngine } from '../support/app.ts';

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;
const tick = () => new Promise((r) => setTimeout(r, 5));

test('[sqlite] a project deleted while a transaction on its held connection awaits: the next statement fails as a missing store (not TypeError)', async () => {
  await withTestEngine('sqlite', { SQLITE_OPEN_PROJECTS: '2', SQLITE_WORKERS: '1' }, async ({ engine }) => {
    await engine.createProjectStore('txdropaa');
    const db = await engine.callers('txdropaa');
    await db.run('CREATE TABLE t (v INTEGER)');
    const err = await db
      .tx(async (tx) => {
        await tx.run('INSERT INTO t (v) VALUES (1)');
        await tick(); // (a request awaiting something: another request deletes the project meanwhile)
        await engine.dropProjectStore('txdropaa');
        await tx.run('INSERT INTO t (v) VALUES (2)');
      })
      .then(
        () => null,
        (e) => e,
      );
    assert.ok(err instanceof StoreMissing, `expected StoreMissing, got ${err?.constructor?.name}: ${err?.message}`);
  });
});

test('[sqlite] engine.close() while a transaction awaits: its next statement fails as a missing store (not TypeError)', async () => {
  const { engine, cleanup } = await openTestEngine('sqlite', { SQLITE_OPEN_PROJECTS: '2', SQLITE_WORKERS: '1' });
  try {
    await engine.createProjectStore('txcloseaa');
    const db = await engine.callers('txcloseaa');
    await db.run('CREATE TABLE t (v INTEGER)');
    const err = await db
      .tx(async (tx) => {
        await tx.run('INSERT INTO t (v) VALUES (1)');
        await engine.close();
        await tx.get('SELECT count(*) AS n FROM t');
      })
      .then(
        () => null,
        (e) => e,
      );
    assert.ok(err instanceof StoreMissing, `expected StoreMissing, got ${err?.constructor?.name}: ${err?.message}`);
  } finally {
    await engine.close().catch(() => undefined);
    await cleanup();
  }
});

test('[sqlite] sleeping connections nothing holds are forgotten after GC (no WeakRef map growth)', async () => {
  await withTestEngine('sqlite', { SQLITE_OPEN_PROJECTS: '1', SQLITE_WORKERS: '1' }, async ({ engine }) => {
    const sqlite = engine as SqliteEngine;
    const ids = Array.from({ length: 40 }, (_, i) => `gcproj${String(i).padStart(3, '0')}`);
    for (const id of ids) {
      await engine.createProjectStore(id);
      await (await engine.callers(id)).get('SELECT 1 AS one');
    }
    assert.ok(sqlite.asleepProjects >= 30, `evicted ones are asleep: ${sqlite.asleepProjects}`);
    for (let i = 0; i < 10 && sqlite.asleepProjects > 0; i++) {
      gc();
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.equal(sqlite.asleepProjects, 0, 'forgotten once collected');
  });
});

test('[sqlite] a held connection asleep, its project deleted: the file is not recreated by its next statement or by a new request', async () => {
  await withTestEngine('sqlite', { SQLITE_OPEN_PROJECTS: '1', SQLITE_WORKERS: '1' }, async ({ engine, config }) => {
    await engine.createProjectStore('resurrect');
    await engine.createProjectStore('otherbbbb');
    const held = await engine.callers('resurrect');
    const data = await engine.data('resurrect', 0);
    await (await engine.callers('otherbbbb')).get('SELECT 1 AS one'); // held one sleeps
    await engine.dropProjectStore('resurrect');
    const file = join(config.dataDir, 'projects', 'resurrect.db');
    assert.equal(existsSync(file), false);
    await assert.rejects(held.get('SELECT 1 AS one'), StoreMissing);
    await assert.rejects(data.get('SELECT 1 AS one'), StoreMissing);
    await assert.rejects(held.tx(async (tx) => tx.get('SELECT 1 AS one')), StoreMissing);
    await assert.rejects(held.runBestEffort('SELECT 1'), StoreMissing);
    assert.throws(() => held.stamp!(), StoreMissing);
    await assert.rejects(engine.callers('resurrect'), StoreMissing);
    assert.equal(existsSync(file), false, 'not recreated');
  });
});

test('[sqlite] many projects, limit 1: interleaved held connections, transactions and statements never fail, the limit holds, one connection per file', async () => {
  await withTestEngine('sqlite', { SQLITE_OPEN_PROJECTS: '1', SQLITE_WORKERS: '1' }, async ({ engine }) => {
    const sqlite = engine as SqliteEngine;
    const ids = ['mpaaaaaa', 'mpbbbbbb', 'mpcccccc', 'mpdddddd'];
    for (const id of ids) {
      await engine.createProjectStore(id);
      await (await engine.callers(id)).run('CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER)');
    }
    const failures: string[] = [];
    const dbs = new Map<string, Set<unknown>>();
    const work = async (n: number) => {
      const id = ids[n % ids.length]!;
      try {
        const db = await engine.callers(id);
        (dbs.get(id) ?? dbs.set(id, new Set()).get(id)!).add(db);
        const data = await engine.data(id, 0);
        if (n % 3 === 0)
          await data.tx(async (tx) => {
            await tx.run('INSERT INTO t (v) VALUES (?)', [n]);
            await tx.get('SELECT sum(v) AS s FROM t');
          });
        else if (n % 3 === 1) {
          await tick();
          await db.run('INSERT INTO t (v) VALUES (?)', [n]);
          db.stamp!();
        } else {
          await tick();
          await data.all('SELECT * FROM t ORDER BY id DESC LIMIT 5');
          await db.tx(async (tx) => tx.run('UPDATE t SET v = v + 1 WHERE id = 1'));
        }
      } catch (err) {
        failures.push(`${id}: ${(err as Error).constructor.name} ${(err as Error).message}`);
      }
    };
    await Promise.all(Array.from({ length: 200 }, (_, n) => work(n)));
    assert.deepEqual(failures, []);
    assert.ok(sqlite.openProjects <= 1, `limit held: ${sqlite.openProjects}`);
    for (const [id, set] of dbs) assert.equal(set.size, 1, `${id}: one SqliteDb`);
  });
});

test('[sqlite] out of file descriptors (EMFILE) at a reopen is not reported as a deleted project (StoreMissing)', async () => {
  const { engine, cleanup } = await openTestEngine('sqlite', { SQLITE_OPEN_PROJECTS: '1', SQLITE_WORKERS: '1' });
  const fds: number[] = [];
  try {
    await engine.createProjectStore('emfileaa');
    await engine.createProjectStore('emfilebb');
    const held = await engine.callers('emfileaa');
    await (await engine.callers('emfilebb')).get('SELECT 1 AS one'); // held one sleeps
    try {
      for (;;) fds.push(openSync('/dev/null', 'r'));
    } catch (err) {
      assert.equal((err as NodeJS.ErrnoException).code, 'EMFILE');
    }
    closeSync(fds.pop()!); // one left: not enough for a database, its WAL and its index
    const err = await held.get('SELECT 1 AS one').then(() => null, (e) => e);
    for (const fd of fds.splice(0)) closeSync(fd);
    assert.ok(err !== null, 'failed');
    assert.ok(!(err instanceof StoreMissing), `a live project reported as deleted: ${err?.constructor?.name} ${err?.message}`);
  } finally {
    for (const fd of fds) closeSync(fd);
    await engine.close();
    await cleanup();
  }
});

test('[sqlite] limit 1: held connections woken while another file is in a transaction stay open after everything ended', async () => {
  await withTestEngine('sqlite', { SQLITE_OPEN_PROJECTS: '1', SQLITE_WORKERS: '1' }, async ({ engine }) => {
    const sqlite = engine as SqliteEngine;
    const ids = ['dlaaaaaa', 'dlbbbbbb', 'dlcccccc'];
    for (const id of ids) await engine.createProjectStore(id);
    const held = await Promise.all(ids.map((id) => engine.callers(id))); // all but the last asleep now
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const inTx = held[0]!.tx(async (tx) => {
      await tx.get('SELECT 1 AS one'); // wakes it: the others' files close
      await gate;
    });
    await new Promise((r) => setImmediate(r));
    // two requests holding the other projects' connections go on while the first is in its transaction
    await held[1]!.get('SELECT 1 AS one');
    await held[2]!.get('SELECT 1 AS one');
    release();
    await inTx;
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(sqlite.openProjects, 1, 'idle: back within SQLITE_OPEN_PROJECTS');
  });
});

test('[sqlite] a project deleted while its file is first being opened: the open keeps nothing, and the deleted project is not served', async () => {
  const { engine, config, cleanup } = await openTestEngine('sqlite', { SQLITE_WORKERS: '1' });
  let again: SqliteEngine | null = null;
  try {
    await engine.createProjectStore('racedrop');
    const db = await engine.project('racedrop');
    await db.run('CREATE TABLE t (v INTEGER)');
    await db.run('INSERT INTO t (v) VALUES (42)');
    await engine.close();
    // another engine on the same directory (a restart): the file is not open yet
    again = (await openTestEngine('sqlite', { DATA_DIR: config.dataDir, SQLITE_WORKERS: '1' })).engine as SqliteEngine;
    const opening = again.project('racedrop');
    await again.dropProjectStore('racedrop');
    await assert.rejects(opening, StoreMissing);
    assert.equal(existsSync(join(config.dataDir, 'projects', 'racedrop.db')), false, 'the file is removed');
    assert.equal(again.openProjects, 0, 'no connection to the deleted file');
    await assert.rejects(again.project('racedrop'), StoreMissing);
  } finally {
    await again?.close();
    await cleanup();
  }
});
