// The sandbox processes: what isolated-vm cannot contain inside one process (V8 aborting on some
// out-of-memory paths, a thrown value that wedges a thread, WebAssembly memory outside the heap
// limit) costs one sandbox process and one invocation,
// never the service.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { SandboxPool } from '../../src/functions/pool.ts';
import { FunctionFailure, FunctionInvalid } from '../../src/functions/invocation.ts';

// Invocations meant to time out get a short budget, so that the file stays quick. Every other one
// gets a budget no loaded machine exhausts (sandboxes run at a lower CPU priority than the rest of
// it), so that no outcome here (the cap counts, out of memory rather than out of time) depends on
// how busy the machine is.
const QUICK = { memoryMb: 32, timeoutMs: 400 };
const ROOMY = { memoryMb: 32, timeoutMs: 30000 };
const OPTIONS = { size: 2, perProject: 2, recycleGrowthMb: 64, idleMs: 60000, niceness: 10 };
const pool = new SandboxPool(ROOMY, OPTIONS);
const quick = new SandboxPool(QUICK, OPTIONS);
after(() => Promise.all([pool.close(), quick.close()]));

const request = { method: 'GET', path: '/', query: {}, headers: {}, body: null };
const bridge = async (json: string) => JSON.stringify({ data: JSON.parse(json) });
const run = (code: string, p = pool) => p.run('p', code, request, null, bridge);

async function failsWith(p: Promise<unknown>, code: string): Promise<void> {
  await assert.rejects(p, (e: unknown) => e instanceof FunctionFailure && e.code === code);
}

async function stillServes(p = pool): Promise<void> {
  assert.deepEqual(await run('export default () => ({ ok: true });', p), { status: 200, headers: {}, body: { ok: true } });
}

test('a normal invocation, with a context.db round trip through the parent', async () => {
  const res = await run("export default async (r, c) => c.db.select('notes', { id: 'eq.1' });");
  assert.deepEqual(res.body, { op: 'select', table: 'notes', query: { id: 'eq.1' } });
});

const FATAL: Array<[string, string, string]> = [
  ['a Map of millions of entries (V8 aborts the process)', 'export default () => { const m = new Map(); for (let i = 0; i < 1e8; i++) m.set(i, i); return m.size; };', 'function_out_of_memory'],
  ['one huge array', 'export default () => new Array(1e8).fill(0).length;', 'function_out_of_memory'],
  ['WebAssembly memory beyond the limit', 'export default () => { const ms = []; for (let i = 0; i < 8; i++) { const m = new WebAssembly.Memory({ initial: 1, maximum: 2048 }); m.grow(2047); new Uint8Array(m.buffer).fill(1); ms.push(m); } return ms.length; };', 'function_out_of_memory'],
  ['a thrown Proxy whose traps never return', 'export default () => { throw new Proxy({}, { get() { for (;;) {} }, getPrototypeOf() { for (;;) {} } }); };', 'function_timeout'],
  ['a thrown Error whose message getter never returns', "export default () => { const e = new Error('x'); Object.defineProperty(e, 'message', { get() { for (;;) {} } }); throw e; };", 'function_timeout'],
  ['an infinite loop', 'export default () => { for (;;) {} };', 'function_timeout'],
];
for (const [what, code, expected] of FATAL) {
  test(`${what}: ${expected}, and the next invocation runs`, async () => {
    const p = expected === 'function_timeout' ? quick : pool;
    await failsWith(run(code, p), expected);
    await stillServes(p);
  });
}

test('deploy-time checks run in a sandbox process too: a module body that aborts V8 or wedges is refused', async () => {
  await assert.rejects(pool.check('p', 'const m = new Map(); for (let i = 0; i < 1e8; i++) m.set(i, i); export default () => 1;'), (e: unknown) => e instanceof FunctionFailure || e instanceof FunctionInvalid);
  await assert.rejects(quick.check('p', 'throw new Proxy({}, { get() { for (;;) {} }, getPrototypeOf() { for (;;) {} } }); export default () => 1;'), (e: unknown) => e instanceof FunctionFailure || e instanceof FunctionInvalid);
  await pool.check('p', 'export default () => 1;');
  await quick.check('p', 'export default () => 1;');
  await stillServes();
  await stillServes(quick);
});

test('concurrent invocations beyond the pool size wait their turn', async () => {
  const results = await Promise.all(Array.from({ length: 6 }, (_, i) => run(`export default () => ${i};`)));
  assert.deepEqual(results.map((r) => r.body), [0, 1, 2, 3, 4, 5]);
});

test('close kills every sandbox process and refuses new work', async () => {
  const p = new SandboxPool(ROOMY, OPTIONS);
  await p.run('p', 'export default () => 1;', request, null, bridge);
  await p.close();
  await assert.rejects(p.run('p', 'export default () => 1;', request, null, bridge), (e: any) => e.status === 503);
});

test('context.db calls are capped: at most 8 at once and 1000 in all per invocation', async () => {
  // (1,000 round trips through the parent once outlasted a 400 ms budget on a loaded machine: the
  // roomy pool's budget keeps this about counts)
  const slow = async () => {
    await new Promise((r) => setTimeout(r, 100));
    return '{"data":[]}';
  };
  const burst = await pool.run('p', `export default async (r, { db }) => {
    const results = await Promise.allSettled(Array.from({ length: 20 }, () => db.select('t')));
    return results.map((x) => (x.status === 'fulfilled' ? 'ok' : x.reason.code));
  };`, request, null, slow);
  const codes = burst.body as string[];
  assert.equal(codes.filter((c) => c === 'ok').length, 8);
  assert.equal(codes.filter((c) => c === 'too_many_calls').length, 12);
  const total = await pool.run('p', `export default async (r, { db }) => {
    let n = 0;
    try { for (;;) { await db.select('t'); n++; } } catch (e) { return { n, code: e.code, status: e.status }; }
  };`, request, null, async () => '{"data":[]}');
  assert.deepEqual(total.body, { n: 1000, code: 'too_many_calls', status: 429 });
});

test('a context.db call larger than 1 MiB is refused without reaching the database', async () => {
  let reached = 0;
  const res = await pool.run('p', `export default async (r, { db }) => {
    try { await db.insert('t', { big: 'x'.repeat(1100000) }); return 'sent'; } catch (e) { return e.code; }
  };`, request, null, async () => {
    reached++;
    return '{"data":[]}';
  });
  assert.equal(res.body, 'payload_too_large');
  assert.equal(reached, 0);
});

test('a bridge that fails on the host is a failed call inside the function, never a crash', async () => {
  const res = await pool.run('p', `export default async (r, { db }) => { try { await db.select('t'); } catch (e) { return [e.code, e.status]; } };`, request, null, async () => {
    throw new Error('schema "p_x" does not exist');
  });
  assert.deepEqual(res.body, ['internal_error', 500]);
  await stillServes();
});

test('a response larger than 4 MiB is function_response_too_large', async () => {
  await failsWith(run("export default () => 'x'.repeat(5 * 1024 * 1024);"), 'function_response_too_large');
  await stillServes();
});

test('un-awaited calls and a wedged throw: the killed process takes its late replies with it', async () => {
  const slowBridge = async () => {
    await new Promise((r) => setTimeout(r, 50));
    return '{"data":[]}';
  };
  const code = `export default (r, { db }) => { for (let i = 0; i < 20000; i++) db.select('t').catch(() => {}); throw new Proxy({}, { get() { for (;;) {} }, getPrototypeOf() { for (;;) {} } }); };`;
  await assert.rejects(quick.run('p', code, request, null, slowBridge), (e: unknown) => e instanceof FunctionFailure);
  await new Promise((r) => setTimeout(r, 200)); // late replies arrive after the kill
  await stillServes(quick);
});

test('a sandbox process that dies before it is ready fails its invocation instead of hanging', { timeout: 15000 }, async () => {
  const p = new SandboxPool(ROOMY, { ...OPTIONS, size: 1 });
  try {
    const pending = p.run('p', 'export default () => 1;', request, null, bridge);
    for (const w of (p as unknown as { all: Set<{ kill(): void }> }).all) w.kill();
    await assert.rejects(pending, (e: unknown) => e instanceof FunctionFailure);
    assert.equal((await p.run('p', 'export default () => 2;', request, null, bridge)).body, 2);
  } finally {
    await p.close();
  }
});
