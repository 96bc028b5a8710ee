// A statement through a GatedDb holds one of its project's slots; a best-effort write (a key's last
// use) never makes its request wait: it runs now if a slot is free, else later in the project's
// turn, one such statement of a project waiting at a time.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FairGate } from '../../src/storage/fair-gate.ts';
import { GatedDb } from '../../src/storage/gated-db.ts';
import type { Db, SqlParam } from '../../src/storage/engine.ts';

function recorder() {
  const writes: unknown[][] = [];
  const inner = {
    kind: 'postgres',
    t: (n: string) => n,
    runBestEffort: async (_sql: string, params: readonly SqlParam[] = []) => void writes.push([...params]),
  } as unknown as Db;
  return { inner, writes };
}

const tick = () => new Promise((r) => setImmediate(r));

test('a best-effort write runs at once when its project has a slot free, and later, once, when it has none; the request never waits', async () => {
  const gate = new FairGate({ capacity: 2, perKey: 1, maxWaitMs: 10000 });
  const { inner, writes } = recorder();
  const db = new GatedDb(inner, gate, 'p');
  await db.runBestEffort('UPDATE keys SET last_used_at = ?', ['t0']);
  assert.deepEqual(writes, [['t0']], 'a slot free: written at once');

  let release!: () => void;
  const holding = gate.run('p', () => new Promise<void>((r) => (release = r)));
  await tick();
  await db.runBestEffort('UPDATE keys SET last_used_at = ?', ['t1']);
  await db.runBestEffort('UPDATE keys SET last_used_at = ?', ['t2']);
  assert.deepEqual(writes, [['t0']], 'the share held: the requests went on without writing');
  assert.equal(gate.stats().queued, 1, 'one write of that statement waits for the project, not two');
  release();
  await holding;
  await tick();
  assert.deepEqual(writes, [['t0'], ['t1']], 'written in the project turn');
  await db.runBestEffort('UPDATE keys SET last_used_at = ?', ['t3']);
  assert.deepEqual(writes.at(-1), ['t3']);
  assert.equal(gate.inUse(), 0);
});
