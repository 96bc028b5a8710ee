// What a sandbox process is given and how long it lives: an empty environment, a lower CPU priority
// than the service (every thread of it), retirement after an invocation that left it grown, and the
// stopping of idle processes beyond a warm one. Read from /proc, so Linux only.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { getPriority } from 'node:os';
import { SandboxPool, type PoolOptions } from '../../src/functions/pool.ts';

const skip = existsSync('/proc/self/task') ? false : 'reads /proc (Linux)';
// nothing here is about time limits: a roomy budget keeps a loaded machine from failing the tests
const LIMITS = { memoryMb: 32, timeoutMs: 30000 };
const OPTIONS: PoolOptions = { size: 1, perProject: 1, recycleGrowthMb: 64, idleMs: 60000, niceness: 10 };
const request = { method: 'GET', path: '/', query: {}, headers: {}, body: null };
const echo = async (json: string) => JSON.stringify({ data: JSON.parse(json) });
const TRIVIAL = 'export default () => 1;';

type Internals = { all: Set<{ proc: { pid: number } }>; idle: Array<{ proc: { pid: number } }> };
/** pids of the pool's live processes, and of the idle ones (most recently used last) */
const pids = (p: SandboxPool) => [...(p as unknown as Internals).all].map((w) => w.proc.pid);
const idlePids = (p: SandboxPool) => (p as unknown as Internals).idle.map((w) => w.proc.pid);

/** A bridge whose calls wait until `open()`: invocations awaiting context.db stay running meanwhile. */
function heldBridge() {
  let open!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  let calls = 0;
  return {
    open,
    calls: () => calls,
    bridge: async (json: string) => {
      calls++;
      await opened;
      return echo(json);
    },
  };
}

/** Polls a state change (never a duration): fails if it has not happened after a generous while. */
async function until(what: string, done: () => boolean): Promise<void> {
  for (let i = 0; i < 1000 && !done(); i++) await new Promise((r) => setTimeout(r, 20));
  assert.ok(done(), what);
}

test('a sandbox process gets an empty environment: the service\'s secrets stay with the service', { skip }, async (t) => {
  const saved = process.env.MASTER_KEY;
  process.env.MASTER_KEY = 'f'.repeat(64);
  process.env.BASEPLATE_TEST_SECRET = 'postgres://owner:secret@db/baseplate';
  t.after(() => {
    if (saved === undefined) delete process.env.MASTER_KEY;
    else process.env.MASTER_KEY = saved;
    delete process.env.BASEPLATE_TEST_SECRET;
  });
  const p = new SandboxPool(LIMITS, OPTIONS);
  t.after(() => p.close());
  assert.equal((await p.run('p', TRIVIAL, request, null, echo)).body, 1);
  const [pid] = pids(p);
  const environ = readFileSync(`/proc/${pid}/environ`, 'utf8');
  assert.doesNotMatch(environ, /MASTER_KEY|ffffffff|BASEPLATE_TEST_SECRET|secret@db/);
  // only what the IPC channel to the parent needs, which fork adds itself
  assert.deepEqual(environ.split('\0').filter(Boolean).map((v) => v.split('=')[0]).sort(), ['NODE_CHANNEL_FD', 'NODE_CHANNEL_SERIALIZATION_MODE']);
});

test("every thread of a sandbox process, also while it runs an invocation, has a lower CPU priority than the service: the service's niceness plus `niceness`", { skip }, async (t) => {
  const service = getPriority();
  if (service >= 19) return t.skip('the service already runs at the lowest priority');
  const p = new SandboxPool(LIMITS, OPTIONS);
  t.after(() => p.close());
  const held = heldBridge();
  const running = p.run('p', "export default async (r, { db }) => db.select('t');", request, null, held.bridge);
  await until('the invocation is waiting on its context.db call', () => held.calls() === 1);
  const [pid] = pids(p);
  const threads = readdirSync(`/proc/${pid}/task`);
  assert.ok(threads.length > 1, 'V8 and isolated-vm threads are running');
  for (const tid of threads) assert.equal(getPriority(Number(tid)), Math.min(19, service + OPTIONS.niceness), `thread ${tid} (the service's niceness: ${service})`);
  held.open();
  assert.equal((await running).status, 200);
});

test('a sandbox process left grown by an invocation is retired after it and replaced when next needed; one that did not grow is reused', async (t) => {
  const p = new SandboxPool(LIMITS, { ...OPTIONS, recycleGrowthMb: 24 });
  t.after(() => p.close());
  await p.run('p', TRIVIAL, request, null, echo);
  const [first] = idlePids(p);
  await p.run('p', TRIVIAL, request, null, echo);
  await p.run('p', TRIVIAL, request, null, echo);
  assert.deepEqual(idlePids(p), [first]);
  // within every limit (1 MiB per call, 32 MiB of heap), but the process keeps tens of MiB of the
  // strings that went through it
  const grow = "export default async (r, { db }) => { for (let i = 0; i < 32; i++) await db.insert('t', { big: 'x'.repeat(1000000) }); return 'grown'; };";
  assert.equal((await p.run('p', grow, request, null, async () => '{"data":[]}')).body, 'grown');
  assert.deepEqual(idlePids(p), [], 'the grown process is not handed out again');
  await until('the grown process has exited', () => !pids(p).includes(first!));
  assert.equal((await p.run('p', TRIVIAL, request, null, echo)).body, 1);
  const [second] = idlePids(p);
  assert.ok(second !== undefined && second !== first);
});

test('idle sandbox processes beyond one are stopped after the idle time; the warm one serves the next invocation', { skip }, async (t) => {
  const p = new SandboxPool(LIMITS, { ...OPTIONS, size: 3, perProject: 3, idleMs: 200 });
  t.after(() => p.close());
  const held = heldBridge();
  const code = "export default async (r, { db }) => db.select('t');";
  const three = [1, 2, 3].map(() => p.run('p', code, request, null, held.bridge));
  await until('three invocations run at once', () => held.calls() === 3);
  held.open();
  await Promise.all(three);
  const started = pids(p);
  assert.equal(started.length, 3);
  await until('two idle processes are stopped', () => pids(p).length === 1);
  const [warm] = pids(p);
  assert.ok(started.includes(warm!));
  for (const pid of started.filter((x) => x !== warm)) assert.ok(!existsSync(`/proc/${pid}`), `process ${pid} has ended`);
  assert.equal((await p.run('p', TRIVIAL, request, null, echo)).body, 1);
  assert.deepEqual(pids(p), [warm]);
});
