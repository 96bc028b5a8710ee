// The fair gate: a tenant holds at most its share of the slots, waiting tenants are served in
// turn, and a job that cannot start in time is refused with 503 project_busy.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FairGate } from '../../src/storage/fair-gate.ts';
import { AppError } from '../../src/errors.ts';

/** A job that runs until released by hand. */
function held() {
  let release!: () => void;
  const done = new Promise<void>((r) => (release = r));
  return { release, job: () => done };
}

test('a tenant never holds more than its share; another tenant starts at once', async () => {
  const gate = new FairGate({ capacity: 4, perKey: 2, maxWaitMs: 10000 });
  const a = Array.from({ length: 5 }, () => held());
  const runs = a.map((h) => gate.run('a', h.job));
  await new Promise((r) => setImmediate(r));
  assert.equal(gate.inUse('a'), 2);
  let bRan = false;
  await gate.run('b', async () => {
    bRan = true;
  });
  assert.ok(bRan);
  for (const h of a) h.release();
  await Promise.all(runs);
  assert.equal(gate.inUse(), 0);
});

test('waiting tenants are served in turn, not in arrival order', async () => {
  const gate = new FairGate({ capacity: 1, perKey: 1, maxWaitMs: 10000 });
  const first = held();
  const started: string[] = [];
  const all = [gate.run('a', first.job)];
  // a queues three jobs before b and c queue one each
  for (const key of ['a', 'a', 'a', 'b', 'c']) all.push(gate.run(key, async () => void started.push(key)));
  first.release();
  await Promise.all(all);
  assert.deepEqual(started, ['a', 'b', 'c', 'a', 'a']);
});

test('a job that cannot start within maxWaitMs is 503 project_busy with Retry-After', async () => {
  const gate = new FairGate({ capacity: 1, perKey: 1, maxWaitMs: 20 });
  const h = held();
  const running = gate.run('a', h.job);
  await assert.rejects(gate.run('a', async () => 'never'), (err: unknown) => {
    assert.ok(err instanceof AppError);
    assert.equal(err.status, 503);
    assert.equal(err.code, 'project_busy');
    assert.equal(err.headers['Retry-After'], '1');
    return true;
  });
  h.release();
  await running;
  assert.equal(await gate.run('a', async () => 'later'), 'later');
});

test('a job that throws gives its slot back', async () => {
  const gate = new FairGate({ capacity: 1, perKey: 1, maxWaitMs: 1000 });
  await assert.rejects(gate.run('a', async () => Promise.reject(new Error('boom'))), /boom/);
  assert.equal(gate.inUse(), 0);
  assert.equal(await gate.run('a', async () => 1), 1);
});
