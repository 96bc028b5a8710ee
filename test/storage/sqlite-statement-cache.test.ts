// Prepared statements of a thread's connections live under one bound, in two segments: a statement
// that ran once waits on probation (an eighth of the bound), one that ran again is kept, least
// recently used first out; one that probation let go and is prepared again is kept at once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { StatementCache } from '../../src/storage/sqlite/sqlite-statement-cache.ts';
import { SqliteDb } from '../../src/storage/sqlite/sqlite-db.ts';

test('[sqlite] statements that ran once leave first, whatever connection prepared them; a closed connection takes its own', () => {
  const cache = new StatementCache(16); // 2 on probation, 14 kept
  const [one, two] = [new Database(':memory:'), new Database(':memory:')];
  try {
    const a = cache.connection(one);
    const b = cache.connection(two);
    const kept = a.prepare('SELECT 1');
    assert.equal(a.prepare('SELECT 1'), kept, 'a hit is the same statement, now kept');
    const once = b.prepare('SELECT 2');
    a.prepare('SELECT 3');
    b.prepare('SELECT 4'); // probation holds 2: SELECT 2, the oldest of those that ran once, goes
    assert.equal(cache.size, 3);
    assert.equal(a.prepare('SELECT 1'), kept, 'three newer statements did not push the kept one out');
    assert.notEqual(b.prepare('SELECT 2'), once, 'prepared anew (and kept at once: probation had let it go)');
    b.forget();
    assert.equal(cache.size, 2, 'only the statements of the first connection are left');
  } finally {
    one.close();
    two.close();
  }
});

test('[sqlite] when the kept ones exceed their share, the least recently used goes back on probation, and out unless it runs again', () => {
  const cache = new StatementCache(8); // 1 on probation, 7 kept
  const db = new Database(':memory:');
  try {
    const c = cache.connection(db);
    const first = [1, 2, 3, 4, 5, 6, 7].map((n) => {
      const st = c.prepare(`SELECT ${n}`);
      assert.equal(c.prepare(`SELECT ${n}`), st);
      return st;
    }); // all seven kept
    c.prepare('SELECT 8');
    c.prepare('SELECT 8'); // kept: SELECT 1, the least recently used, back on probation
    assert.equal(cache.size, 8);
    assert.equal(c.prepare('SELECT 1'), first[0], 'ran again while on probation: kept again; SELECT 2 on probation now');
    c.prepare('SELECT 9'); // SELECT 2 leaves
    assert.notEqual(c.prepare('SELECT 2'), first[1]);
    assert.equal(c.prepare('SELECT 3'), first[2]);
    assert.ok(cache.size <= 8);
  } finally {
    db.close();
  }
});

test('[sqlite] a statement probation let go and prepared again is kept at once, so a spread load prepares it twice at most', () => {
  const cache = new StatementCache(16); // 2 on probation
  const [one, two] = [new Database(':memory:'), new Database(':memory:')];
  try {
    const a = cache.connection(one);
    const b = cache.connection(two);
    const first = a.prepare('SELECT 1');
    b.prepare('SELECT 2');
    b.prepare('SELECT 3'); // SELECT 1 leaves probation unused
    const again = a.prepare('SELECT 1');
    assert.notEqual(again, first, 'prepared anew');
    for (let n = 4; n < 10; n++) b.prepare(`SELECT ${n}`); // probation turns over three times
    assert.equal(a.prepare('SELECT 1'), again, 'kept: not on probation');
  } finally {
    one.close();
    two.close();
  }
});

test('[sqlite] a bound\'s worth of evicted statements schedules one full collection, after the work under way', async () => {
  let collections = 0;
  const cache = new StatementCache(8, () => collections++); // 1 on probation
  const db = new Database(':memory:');
  try {
    const c = cache.connection(db);
    for (let n = 0; n < 8; n++) c.prepare(`SELECT ${n}`); // 7 evicted
    await new Promise((r) => setImmediate(r));
    assert.equal(collections, 0);
    for (let n = 8; n < 24; n++) c.prepare(`SELECT ${n}`); // 16 more: the 8th eviction schedules one
    assert.equal(collections, 0, 'not on the path of the prepare');
    await new Promise((r) => setImmediate(r));
    assert.equal(collections, 1, 'one, however many evictions came before it ran');
    for (let n = 24; n < 32; n++) c.prepare(`SELECT ${n}`);
    await new Promise((r) => setImmediate(r));
    assert.equal(collections, 2);
  } finally {
    db.close();
  }
});

test('[sqlite] a connection whose statements keep leaving the cache still runs them', async () => {
  const cache = new StatementCache(1);
  const db = new SqliteDb(new Database(':memory:'), cache);
  try {
    await db.run('CREATE TABLE t (v INTEGER)');
    for (let i = 0; i < 5; i++) {
      await db.run('INSERT INTO t (v) VALUES (?)', [i]);
      assert.deepEqual(await db.get('SELECT count(*) AS n FROM t'), { n: i + 1 });
    }
    assert.equal(cache.size, 1);
  } finally {
    db.close();
  }
  assert.equal(cache.size, 0);
});
