// The PostgreSQL connections in lanes of one (storage/postgres/pool-lanes.ts): a project's
// statements run on its own lane's connection, so that the connection keeps their prepared
// statements and plans; a busy lane never makes a statement wait while another lane is free; when
// every lane is busy a statement waits and is served as soon as one is released. Against the real
// server (statements that read nothing).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { laneOf, laneRoute, PoolLanes } from '../../src/storage/postgres/pool-lanes.ts';
import { PG_ADMIN_URL, testEngines } from '../support/postgres.ts';
import type { PoolClient } from '../../src/storage/postgres/pg-driver.ts';

const { engines } = await testEngines();
const skip = !engines.includes('postgres') && 'PostgreSQL not reachable';

const backend = async (c: PoolClient) => (await c.query('SELECT pg_backend_pid() AS pid')).rows[0].pid as number;

/** Keys (schemas) whose lanes, in a pool of `lanes`, are `wanted`, in that order. */
function keysIn(lanes: number, wanted: number[]): string[] {
  return wanted.map((lane) => {
    for (let i = 0; ; i++) if (laneOf(`p_lanetest${i}`, lanes) === lane) return `p_lanetest${i}`;
  });
}

/** Runs one statement for `key` and gives the connection back; the backend that ran it. */
async function runOn(lanes: PoolLanes, key?: string): Promise<number> {
  const c = await lanes.connect(key);
  try {
    return await backend(c);
  } finally {
    c.release();
  }
}

test('a key has one lane, the same on every node and restart; a thousand projects spread over all lanes', () => {
  assert.equal(laneOf('p_abc', 20), laneOf('p_abc', 20));
  const counts = new Array<number>(20).fill(0);
  for (let i = 0; i < 1000; i++) counts[laneOf(`p_${i.toString(36).padStart(16, 'x')}`, 20)]!++;
  assert.ok(Math.min(...counts) >= 25 && Math.max(...counts) <= 80, `per lane: ${counts.join(' ')}`);
  for (const n of [1, 3, 20]) for (const k of ['', 'p_a', 'p_é']) assert.ok(laneOf(k, n) >= 0 && laneOf(k, n) < n);
});

test('[postgres] a key’s statements run on its own lane’s connection; the platform’s on the first free lane', { skip }, async () => {
  const lanes = new PoolLanes({ connectionString: PG_ADMIN_URL, max: 4 });
  try {
    const [k1, k2] = keysIn(4, [1, 2]);
    const first = await runOn(lanes, k1);
    for (let i = 0; i < 5; i++) assert.equal(await runOn(lanes, k1), first, 'the same connection each time');
    const other = await runOn(lanes, k2);
    assert.notEqual(other, first, 'another lane, another connection');
    assert.equal(await runOn(lanes, k2), other);
    const platform = await runOn(lanes);
    assert.ok(platform !== first && platform !== other, 'lane 0');
    assert.equal(lanes.totalCount, 3, 'a connection is opened only for a lane in use');
    assert.equal(lanes.max, 4);
  } finally {
    await lanes.end();
  }
});

test('[postgres] a busy lane sends its key’s statement to the next free one at once; with every lane busy it waits for the first released, within the connect timeout', { skip }, async () => {
  const lanes = new PoolLanes({ connectionString: PG_ADMIN_URL, max: 3, connectionTimeoutMillis: 5000 });
  const held: PoolClient[] = [];
  try {
    const [k] = keysIn(3, [2]);
    const own = await lanes.connect(k);
    held.push(own);
    const ownPid = await backend(own);
    // lane 2 is busy: lane 0 (the next, wrapping round), not a wait
    const next = await lanes.connect(k);
    held.push(next);
    assert.notEqual(await backend(next), ownPid);
    const third = await lanes.connect(k);
    held.push(third);
    assert.equal(lanes.totalCount, 3);
    assert.equal(lanes.idleCount, 0);
    // every lane busy: the fourth waits
    let served = false;
    const waiting = lanes.connect(k).then((c) => ((served = true), c));
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(served, false);
    assert.equal(lanes.waitingCount, 1);
    const released = await backend(held[1]!);
    held[1]!.release();
    const got = await waiting;
    assert.equal(await backend(got), released, 'served by the connection released');
    held[1] = got;
    assert.equal(lanes.waitingCount, 0);
  } finally {
    for (const c of held) c.release();
    await lanes.end();
  }
});

test('[postgres] a statement waiting for a lane gives up at the connect timeout, and ending the lanes refuses those waiting', { skip }, async () => {
  const lanes = new PoolLanes({ connectionString: PG_ADMIN_URL, max: 1, connectionTimeoutMillis: 150 });
  const held = await lanes.connect('p_x');
  try {
    const t0 = performance.now();
    await assert.rejects(lanes.connect('p_x'), /timeout exceeded when trying to connect/);
    assert.ok(performance.now() - t0 >= 140);
    assert.equal(lanes.waitingCount, 0);
    const pending = lanes.connect('p_y');
    assert.equal(lanes.waitingCount, 1);
    held.release();
    await lanes.end();
    await assert.rejects(pending, /closed/);
    await assert.rejects(lanes.connect('p_y'), /closed/, 'ended: refused at once');
  } finally {
    await lanes.end().catch(() => undefined);
  }
});

/** Settles within `ms`, or fails the test: a connect that should not wait. */
const soon = <T>(p: Promise<T>, ms = 2000): Promise<T> =>
  Promise.race([p, new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`not within ${ms} ms`)), ms).unref())]);

test('[postgres] connects in the same tick never share a lane: each gets a free connection of its own at once', { skip }, async () => {
  const lanes = new PoolLanes({ connectionString: PG_ADMIN_URL, max: 3, connectionTimeoutMillis: 5000 });
  const [k] = keysIn(3, [1]);
  try {
    // every lane opened and idle first: the case where a lane looks free while its connection is being handed out
    const opened = await Promise.all([lanes.connect(k), lanes.connect(k), lanes.connect(k)]);
    for (const c of opened) c.release();
    await new Promise((r) => setImmediate(r));
    assert.equal(lanes.idleCount, 3);
    const again = await soon(Promise.all([lanes.connect(k), lanes.connect(k), lanes.connect(k)]));
    const pids = await Promise.all(again.map(backend));
    assert.equal(new Set(pids).size, 3, 'three connections');
    for (const c of again) c.release();
  } finally {
    await lanes.end();
  }
});

test('[postgres] those waiting are served in the order they came; a connection released broken is replaced for the next', { skip }, async () => {
  const lanes = new PoolLanes({ connectionString: PG_ADMIN_URL, max: 1, connectionTimeoutMillis: 5000 });
  try {
    const held = await lanes.connect('p_a');
    const first = await backend(held);
    const order: string[] = [];
    const waiting = ['w1', 'w2', 'w3'].map((name, i) => lanes.connect(`p_${i}`).then((c) => (order.push(name), c)));
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(lanes.waitingCount, 3);
    held.release(new Error('broken'));
    const w1 = await soon(waiting[0]!);
    assert.notEqual(await backend(w1), first, 'a new connection in place of the broken one');
    w1.release();
    const w2 = await soon(waiting[1]!);
    w2.release();
    const w3 = await soon(waiting[2]!);
    w3.release();
    assert.deepEqual(order, ['w1', 'w2', 'w3']);
    assert.equal(lanes.waitingCount, 0);
  } finally {
    await lanes.end();
  }
});

test('a key’s route meets every lane; keys with the same lane spill along different steps', () => {
  for (const n of [1, 2, 3, 4, 20, 21]) {
    for (let k = 0; k < 50; k++) {
      const { own, step } = laneRoute(`p_route${k}`, n);
      const met = new Set(Array.from({ length: n }, (_, i) => (own + i * step) % n));
      assert.equal(met.size, n, `${n} lanes, step ${step}`);
    }
  }
  // projects whose own lane is the same do not all spill onto the same next lane
  const home = Array.from({ length: 400 }, (_, i) => `p_spill${i}`).filter((k) => laneOf(k, 20) === 3);
  const firstSpill = new Set(home.map((k) => {
    const { own, step } = laneRoute(k, 20);
    return (own + step) % 20;
  }));
  assert.ok(home.length >= 8 && firstSpill.size >= 4, `${home.length} keys on lane 3 spill onto ${firstSpill.size} lanes`);
});

test('[postgres] two projects whose lane is busy spill onto the lanes their steps give', { skip }, async () => {
  const n = 5;
  const lanes = new PoolLanes({ connectionString: PG_ADMIN_URL, max: n, connectionTimeoutMillis: 5000 });
  try {
    const keys = Array.from({ length: 400 }, (_, i) => `p_step${i}`);
    const a = keys.find((k) => laneRoute(k, n).own === 0 && laneRoute(k, n).step === 1)!;
    const b = keys.find((k) => laneRoute(k, n).own === 0 && laneRoute(k, n).step === 2)!;
    // every lane opened once, so that each has a known backend
    const all = await Promise.all(Array.from({ length: n }, () => lanes.connect()));
    const pids = await Promise.all(all.map(backend));
    for (const c of all) c.release();
    await new Promise((r) => setImmediate(r));
    const byLane = (pid: number) => pids.indexOf(pid);
    const held = await lanes.connect(a);
    assert.equal(byLane(await backend(held)), 0);
    const ca = await lanes.connect(a);
    const cb = await lanes.connect(b);
    assert.equal(byLane(await backend(ca)), 1, 'step 1: the lane after');
    assert.equal(byLane(await backend(cb)), 2, 'step 2: two lanes on');
    for (const c of [held, ca, cb]) c.release();
  } finally {
    await lanes.end();
  }
});
