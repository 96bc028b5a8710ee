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

test('the last free slots go to tenants with nothing running: two tenants at their share leave one for a third', async () => {
  const gate = new FairGate({ capacity: 4, perKey: 2, maxWaitMs: 10000 }); // reserve: 1
  const jobs = Array.from({ length: 4 }, () => held());
  const runs = [gate.run('a', jobs[0]!.job), gate.run('a', jobs[1]!.job), gate.run('b', jobs[2]!.job), gate.run('b', jobs[3]!.job)];
  await new Promise((r) => setImmediate(r));
  assert.equal(gate.inUse('a'), 2);
  assert.equal(gate.inUse('b'), 1, "b's second job would take the reserved slot");
  let cRan = false;
  await gate.run('c', async () => void (cRan = true));
  assert.ok(cRan);
  for (const j of jobs) j.release();
  await Promise.all(runs);
});

test("a tenant's queue is bounded: beyond maxQueue waiting jobs, 503 project_busy at once", async () => {
  const gate = new FairGate({ capacity: 1, perKey: 1, maxWaitMs: 10000, maxQueue: 2 });
  const h = held();
  const running = gate.run('a', h.job);
  const waiting = [gate.run('a', async () => 1), gate.run('a', async () => 2)];
  await assert.rejects(gate.run('a', async () => 3), (err: unknown) => err instanceof AppError && err.code === 'project_busy');
  const b = gate.run('b', async () => 'b queues on its own');
  h.release();
  await running;
  assert.deepEqual(await Promise.all(waiting), [1, 2]);
  assert.equal(await b, 'b queues on its own');
});

test("by default a tenant's queue holds 8 jobs per slot of its share, and at least 64: 32 clients of one project queue rather than fail", async () => {
  for (const [perKey, bound] of [[2, 64], [10, 80]] as const) {
    const gate = new FairGate({ capacity: 4 * perKey, perKey, maxWaitMs: 10000 });
    const h = held();
    const running = Array.from({ length: perKey }, () => gate.run('a', h.job));
    const waiting = Array.from({ length: bound }, (_, i) => gate.run('a', async () => i));
    await assert.rejects(gate.run('a', async () => -1), (err: unknown) => err instanceof AppError && err.code === 'project_busy', `share ${perKey}`);
    h.release();
    await Promise.all(running);
    assert.deepEqual(await Promise.all(waiting), Array.from({ length: bound }, (_, i) => i));
  }
});

test('stats: slots in use, jobs and tenants waiting, and every wait (served or refused) counted with its time', async () => {
  const gate = new FairGate({ capacity: 1, perKey: 1, maxWaitMs: 100 });
  assert.deepEqual(gate.stats(), { capacity: 1, inUse: 0, queued: 0, queuedKeys: 0, waits: 0, waitSeconds: 0 });
  const first = held();
  const running = gate.run('a', first.job);
  const refused = gate.run('b', async () => undefined).catch((e: AppError) => e.code);
  assert.equal(await refused, 'project_busy');
  let s = gate.stats();
  assert.deepEqual([s.inUse, s.queued, s.waits], [1, 0, 1]);
  assert.ok(s.waitSeconds >= 0.09, String(s.waitSeconds));
  const served = [gate.run('c', async () => undefined), gate.run('c', async () => undefined)];
  assert.deepEqual([gate.stats().queued, gate.stats().queuedKeys], [2, 1]);
  first.release();
  await Promise.all([running, ...served]);
  s = gate.stats();
  assert.deepEqual([s.inUse, s.queued, s.queuedKeys, s.waits], [0, 0, 0, 3]);
});

test('runIfFree runs a job only when its tenant can take a slot at once, and skips it otherwise; it never queues', async () => {
  const gate = new FairGate({ capacity: 4, perKey: 2, maxWaitMs: 10000 });
  assert.equal(await gate.runIfFree('a', async () => 'ran'), 'ran', 'free: runs');
  const a = [held(), held()];
  const runs = a.map((h) => gate.run('a', h.job));
  await new Promise((r) => setImmediate(r));
  let ran = false;
  assert.equal(await gate.runIfFree('a', async () => (ran = true)), undefined, "at its share: skipped");
  const queued = gate.run('a', async () => 'queued');
  assert.equal(await gate.runIfFree('a', async () => (ran = true)), undefined, 'skipped, not served before the job that waits');
  assert.equal(ran, false);
  assert.equal(gate.stats().queued, 1);
  assert.equal(await gate.runIfFree('b', async () => 'b'), 'b', 'another tenant: runs');
  for (const h of a) h.release();
  assert.equal(await queued, 'queued');
  await Promise.all(runs);
  assert.equal(gate.inUse(), 0);
});

test('a gate may refuse with an error of its own, told the tenant', async () => {
  const gate = new FairGate({ capacity: 1, perKey: 1, maxWaitMs: 50, maxQueue: 1, busy: (key) => new Error(`busy: ${key}`) });
  let release!: () => void;
  const held = gate.run('a', () => new Promise<void>((r) => (release = r)));
  const waiting = gate.run('b', async () => 1);
  await assert.rejects(gate.run('b', async () => 2), { message: 'busy: b' }, 'beyond the queue');
  await assert.rejects(waiting, { message: 'busy: b' }, 'past maxWaitMs');
  release();
  await held;
});
