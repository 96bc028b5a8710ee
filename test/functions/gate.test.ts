// The function slots (src/functions/gate.ts): a total limit, a per-project share, fair service of
// the waiting projects, and 503 function_busy after the wait budget. Jobs are promises the test
// settles itself, so every assertion is about which jobs started, never about how long they took.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Gate } from '../../src/functions/gate.ts';

const settle = () => new Promise((r) => setImmediate(r));

/** Jobs that start (recorded in order) and end when the test says so. */
function jobs(gate: Gate) {
  const started: string[] = [];
  const enders = new Map<string, () => void>();
  const results = new Map<string, Promise<string>>();
  return {
    started,
    submit(key: string, name: string): Promise<string> {
      const p = gate.run(key, () => new Promise<string>((resolve) => {
        started.push(name);
        enders.set(name, () => resolve(name));
      }));
      results.set(name, p);
      return p;
    },
    async end(name: string): Promise<void> {
      enders.get(name)!();
      assert.equal(await results.get(name), name);
      await settle();
    },
  };
}

const busy = (e: any) => e.status === 503 && e.code === 'function_busy' && e.headers['Retry-After'] === '1';

test('at most N at once; the rest wait their turn, then 503 function_busy with Retry-After after the wait budget', async () => {
  const gate = new Gate(2, 2, 150);
  let running = 0;
  let peak = 0;
  const job = (ms: number) => async () => {
    running++;
    peak = Math.max(peak, running);
    await new Promise((r) => setTimeout(r, ms));
    running--;
    return ms;
  };
  assert.deepEqual(await Promise.all([gate.run('a', job(30)), gate.run('a', job(30)), gate.run('a', job(30)), gate.run('a', job(30))]), [30, 30, 30, 30]);
  assert.equal(peak, 2);
  const slow = [gate.run('a', job(400)), gate.run('a', job(400))];
  await assert.rejects(gate.run('a', job(1)), busy);
  await Promise.all(slow);
  assert.equal(await gate.run('a', job(1)), 1);
});

test("a project holds at most its share of the slots: its next invocations wait while another project's start at once", async () => {
  const j = jobs(new Gate(4, 2, 60000));
  for (const n of ['a1', 'a2', 'a3', 'a4', 'a5']) void j.submit('a', n);
  await settle();
  assert.deepEqual(j.started, ['a1', 'a2']);
  void j.submit('b', 'b1');
  void j.submit('b', 'b2');
  await settle();
  assert.deepEqual(j.started, ['a1', 'a2', 'b1', 'b2']);
  // a slot project a frees goes to its own next job, and only one
  await j.end('a1');
  assert.deepEqual(j.started, ['a1', 'a2', 'b1', 'b2', 'a3']);
  for (const n of ['a2', 'a3', 'b1', 'b2']) await j.end(n);
  assert.deepEqual(j.started.slice(5), ['a4', 'a5']);
  await j.end('a4');
  await j.end('a5');
});

test("a freed slot goes to the waiting project with the fewest running, not to the longest queue", async () => {
  const j = jobs(new Gate(2, 2, 60000));
  for (const n of ['a1', 'a2', 'a3', 'a4', 'a5']) void j.submit('a', n);
  void j.submit('b', 'b1');
  void j.submit('c', 'c1');
  await settle();
  assert.deepEqual(j.started, ['a1', 'a2']);
  await j.end('a1');
  await j.end('a2');
  assert.deepEqual(j.started, ['a1', 'a2', 'b1', 'c1']);
  for (const n of ['b1', 'c1', 'a3', 'a4', 'a5']) await j.end(n);
  assert.deepEqual(j.started.slice(4), ['a3', 'a4', 'a5']);
});

test("projects waiting with equal shares are served in turn: one project's queue does not starve another's", async () => {
  const j = jobs(new Gate(1, 1, 60000));
  for (const n of ['a0', 'a1', 'a2', 'a3']) void j.submit('a', n);
  for (const n of ['b1', 'b2', 'b3']) void j.submit('b', n);
  await settle();
  for (const n of ['a0', 'b1', 'a1', 'b2', 'a2', 'b3', 'a3']) await j.end(n);
  assert.deepEqual(j.started, ['a0', 'b1', 'a1', 'b2', 'a2', 'b3', 'a3']);
});

test("a project's invocation over its share is refused with 503 after the wait budget; other projects' invocations started meanwhile", async () => {
  const j = jobs(new Gate(4, 1, 100));
  void j.submit('a', 'a1');
  const over = j.submit('a', 'a2');
  void j.submit('b', 'b1');
  await settle();
  assert.deepEqual(j.started, ['a1', 'b1']);
  await assert.rejects(over, busy);
  // the refused job never starts, and the share it waited for is free again afterwards
  await j.end('a1');
  assert.deepEqual(j.started, ['a1', 'b1']);
  void j.submit('a', 'a3');
  await settle();
  assert.deepEqual(j.started, ['a1', 'b1', 'a3']);
  await j.end('a3');
  await j.end('b1');
});
