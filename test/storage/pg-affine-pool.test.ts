// Connections by schema (storage/postgres/affine-pool.ts), on a real PostgreSQL: a schema's
// statements go back to the connection that served it when it is free, many schemas spread over
// the pool, nobody waits while a connection is free, waiters are served in order and time out,
// failed connections are never handed out again, and end() leaves nothing open.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { AffinePool, WaitTimeout } from '../../src/storage/postgres/affine-pool.ts';
import { connectionFailed, watchPool } from '../../src/storage/postgres/postgres-db.ts';
import { createTestDatabase, testEngines, type TestDatabase } from '../support/postgres.ts';

const { engines, skipReason } = await testEngines();

describe('AffinePool', { skip: engines.includes('postgres') ? false : skipReason }, () => {
  let db: TestDatabase;
  const pools: AffinePool[] = [];
  before(async () => void (db = await createTestDatabase()));
  after(async () => {
    await Promise.all(pools.map((p) => p.end().catch(() => undefined)));
    await db.drop();
  });

  /** `failConnects`: while true, opening a connection fails (a server at max_connections, say). */
  function open(max: number, waitMs = 2000, failConnects = { on: false }): AffinePool {
    const raw = new pg.Pool({ connectionString: db.url, max });
    watchPool(raw);
    const connect = raw.connect.bind(raw);
    raw.connect = (() => (failConnects.on ? Promise.reject(new Error('too many clients already')) : connect())) as typeof raw.connect;
    const pool = new AffinePool(raw, { max, waitMs, broken: connectionFailed });
    pools.push(pool);
    return pool;
  }

  /** The backend that serves one statement for `schema`. */
  async function backend(pool: AffinePool, schema: string): Promise<number> {
    const client = await pool.acquire(schema);
    try {
      return (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    } finally {
      pool.release(client);
    }
  }

  test('schemas read one after another each keep their connection, and spread over the pool', async () => {
    const pool = open(4);
    const schemas = ['s1', 's2', 's3', 's4', 's5', 's6', 's7', 's8'];
    const first = new Map<string, number>();
    for (const s of schemas) first.set(s, await backend(pool, s));
    assert.equal(new Set(first.values()).size, 4, 'eight schemas over all four connections');
    for (let round = 0; round < 3; round++) for (const s of schemas) assert.equal(await backend(pool, s), first.get(s), `${s}, round ${round}`);
    assert.equal(pool.stats.total, 4);
  });

  test('a schema whose connection is busy takes another free one rather than wait', async () => {
    const pool = open(2);
    const home = await backend(pool, 'a');
    const held = await pool.acquire('a');
    const t0 = performance.now();
    const other = await backend(pool, 'a');
    assert.ok(performance.now() - t0 < 1000);
    assert.notEqual(other, (await held.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid);
    pool.release(held);
    assert.ok([home, other].includes(await backend(pool, 'a')));
  });

  test('with every connection out, requests wait and are served in order; a wait ends after waitMs', async () => {
    const pool = open(2, 300);
    const a = await pool.acquire('x');
    const b = await pool.acquire('y');
    const order: string[] = [];
    const w1 = pool.acquire('y').then((c) => (order.push('first'), c));
    const w2 = pool.acquire('x').then((c) => (order.push('second'), c));
    assert.equal(pool.stats.waiting, 2);
    pool.release(a);
    pool.release(b);
    const [c1, c2] = await Promise.all([w1, w2]);
    assert.deepEqual(order, ['first', 'second']);
    await assert.rejects(pool.acquire('z'), WaitTimeout);
    pool.release(c1);
    pool.release(c2);
    assert.equal(pool.stats.waiting, 0);
  });

  test('a connection that failed is never handed out again; a discarded one makes room, for a waiter too', async () => {
    const pool = open(1, 2000);
    const victim = await backend(pool, 's');
    const admin = new pg.Client({ connectionString: db.url });
    await admin.connect();
    try {
      await admin.query('SELECT pg_terminate_backend($1)', [victim]);
      // the idle client's 'error' reaches watchPool's listener
      for (let i = 0; i < 50 && (await admin.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [victim])).rowCount; i++) await new Promise((r) => setTimeout(r, 20));
      await new Promise((r) => setTimeout(r, 50));
    } finally {
      await admin.end();
    }
    const next = await backend(pool, 's');
    assert.notEqual(next, victim);
    const held = await pool.acquire('s');
    const waiter = pool.acquire('t');
    pool.release(held, true);
    const fresh = await waiter;
    assert.notEqual((await fresh.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid, next);
    pool.release(fresh);
    assert.equal(pool.stats.total, 1);
  });

  test('end() fails the waiting requests and closes every connection, once those in use come back', async () => {
    const pool = open(1, 5000);
    const held = await pool.acquire('s');
    const waiting = pool.acquire('t');
    const ended = pool.end();
    await assert.rejects(waiting, /closed/);
    pool.release(held);
    await ended;
    assert.equal(pool.stats.total, 0);
    await assert.rejects(pool.acquire('s'), /closed/);
  });

  test('a new connection that cannot be had is replaced by an idle one; room left goes to the waiters at once', async () => {
    const failing = { on: false };
    const pool = open(2, 1500, failing);
    const home = await backend(pool, 'a');
    failing.on = true;
    // a schema no connection served would open a new one: it fails, the idle one answers instead
    assert.equal(await backend(pool, 'b'), home);
    failing.on = false;
    const a = await pool.acquire('a');
    const b = await pool.acquire('b');
    const w1 = pool.acquire('c');
    const w2 = pool.acquire('d');
    failing.on = true;
    const t0 = performance.now();
    // a discarded connection leaves room: each waiter in turn gets a new one, here its failure, at once
    pool.release(a, true);
    await assert.rejects(w1, /too many clients/);
    await assert.rejects(w2, /too many clients/);
    assert.ok(performance.now() - t0 < 1000, 'not after waitMs');
    failing.on = false;
    pool.release(b);
    assert.equal(pool.stats.waiting, 0);
  });

  test('a connection released twice is refused (two requests would share one session)', async () => {
    const pool = open(2);
    const c = await pool.acquire('a');
    pool.release(c);
    assert.throws(() => pool.release(c), /released twice/);
    const again = await pool.acquire('a');
    assert.equal(again, c);
    pool.release(again);
  });
});
