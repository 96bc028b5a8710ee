// The bound on V8's young generation (lib/young-generation.ts), in fresh processes: the flag it
// changes is the process's. A workload that keeps much of what it allocates alive for a while
// (as requests in flight do) makes V8 grow the young generation to its own bound (16 MiB
// semi-spaces); bounded, it stays at the bound; and the bound lets go when stopped.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const MiB = 1024 * 1024;

/** The largest young generation seen while the workload ran, in MiB, under `setup`. */
function youngPeak(setup: string): { peak: number } {
  const code = `
    const { boundYoungGeneration, youngGenerationBytes } = await import('./src/lib/young-generation.ts');
    ${setup}
    // chunks of about 0.5 MiB, a task each (as requests are), a window of 8 MiB kept alive
    const live = new Array(32000);
    let peak = 0;
    for (let i = 0, n = 0; i < 400; i++) {
      for (let k = 0; k < 2000; k++) live[n++ % live.length] = { i, k, s: 'x'.repeat(200) + k };
      peak = Math.max(peak, youngGenerationBytes());
      await new Promise((r) => setImmediate(r));
    }
    console.log(JSON.stringify({ peak: peak / ${MiB} }));
  `;
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { cwd: ROOT, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout.trim().split('\n').at(-1)!);
}

test('unbounded, the workload grows the young generation past 8 MiB (the check can fail)', () => {
  assert.ok(youngPeak('').peak > 8, 'V8 grew it');
});

test('bounded at 2 MiB semi-spaces, the young generation never exceeds 4 MiB', () => {
  assert.ok(youngPeak('const bound = boundYoungGeneration(2);').peak <= 4);
});

test('stopped, the bound lets V8 grow it again', () => {
  assert.ok(youngPeak('const bound = boundYoungGeneration(2); bound.stop();').peak > 8);
});
