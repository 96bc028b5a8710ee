// Prepared statements of a thread's connections live under one least-recently-used bound.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { StatementCache } from '../../src/storage/sqlite/sqlite-statement-cache.ts';
import { SqliteDb } from '../../src/storage/sqlite/sqlite-db.ts';

test('[sqlite] the statements of all connections share one bound; the least recently used one goes first, a closed connection takes its own', () => {
  const cache = new StatementCache(3);
  const [one, two] = [new Database(':memory:'), new Database(':memory:')];
  try {
    const a = cache.connection(one);
    const b = cache.connection(two);
    const first = a.prepare('SELECT 1');
    const second = a.prepare('SELECT 2');
    b.prepare('SELECT 3');
    assert.equal(a.prepare('SELECT 1'), first, 'a hit is the same statement, and now the most recently used');
    b.prepare('SELECT 4'); // beyond the bound: SELECT 2 (least recently used) goes
    assert.equal(cache.size, 3);
    assert.equal(a.prepare('SELECT 1'), first);
    assert.notEqual(a.prepare('SELECT 2'), second, 'prepared anew');
    assert.equal(cache.size, 3);
    b.forget();
    assert.equal(cache.size, 2, 'only the statements of the first connection are left');
  } finally {
    one.close();
    two.close();
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
