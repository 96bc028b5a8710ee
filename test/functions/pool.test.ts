// The sandbox processes: what isolated-vm cannot contain inside one process (V8 aborting on some
// out-of-memory paths, a thrown value that wedges a thread, WebAssembly memory outside the heap
// limit; see the `todo` cases in sandbox.test.ts) costs one sandbox process and one invocation,
// never the service.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { SandboxPool } from '../../src/functions/pool.ts';
import { FunctionFailure, FunctionInvalid } from '../../src/functions/sandbox.ts';

const LIMITS = { memoryMb: 32, timeoutMs: 400 };
const pool = new SandboxPool(LIMITS, 2);
after(() => pool.close());

const request = { method: 'GET', path: '/', query: {}, headers: {}, body: null };
const bridge = async (json: string) => JSON.stringify({ data: JSON.parse(json) });
const run = (code: string) => pool.run(code, request, null, bridge);

async function failsWith(p: Promise<unknown>, code: string): Promise<void> {
  await assert.rejects(p, (e: unknown) => e instanceof FunctionFailure && e.code === code);
}

async function stillServes(): Promise<void> {
  assert.deepEqual(await run('export default () => ({ ok: true });'), { status: 200, headers: {}, body: { ok: true } });
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
  ['an infinite loop', 'export default () => { for (;;) {} };', 'function_timeout'],
];
for (const [what, code, expected] of FATAL) {
  test(`${what}: ${expected}, and the next invocation runs`, async () => {
    await failsWith(run(code), expected);
    await stillServes();
  });
}

test('deploy-time checks run in a sandbox process too: a module body that aborts V8 or wedges is refused', async () => {
  await assert.rejects(pool.check('const m = new Map(); for (let i = 0; i < 1e8; i++) m.set(i, i); export default () => 1;'), (e: unknown) => e instanceof FunctionFailure || e instanceof FunctionInvalid);
  await assert.rejects(pool.check('throw new Proxy({}, { get() { for (;;) {} }, getPrototypeOf() { for (;;) {} } }); export default () => 1;'), (e: unknown) => e instanceof FunctionFailure || e instanceof FunctionInvalid);
  await pool.check('export default () => 1;');
  await stillServes();
});

test('concurrent invocations beyond the pool size wait their turn', async () => {
  const results = await Promise.all(Array.from({ length: 6 }, (_, i) => run(`export default () => ${i};`)));
  assert.deepEqual(results.map((r) => r.body), [0, 1, 2, 3, 4, 5]);
});

test('close kills every sandbox process and refuses new work', async () => {
  const p = new SandboxPool(LIMITS, 2);
  await p.run('export default () => 1;', request, null, bridge);
  await p.close();
  await assert.rejects(p.run('export default () => 1;', request, null, bridge), (e: any) => e.status === 503);
});
