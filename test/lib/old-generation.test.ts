// The bound on the old generation's growth (lib/old-generation.ts), in fresh processes: V8's flags
// are the process's. A workload keeps about 35 MiB alive and passes objects through the old
// generation (each kept past two young collections, as requests in flight are). How far V8 lets
// the old space grow on its own depends on how fast it measures the program and its collections
// (40 to 220 MiB here, from one run to the next), so the bound is compared with the same setting
// at 4x, V8's largest factor: set from inside, the setting takes effect.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { growthFlag, growthFlagGiven, OLD_GENERATION_GROWTH_PERCENT } from '../../src/lib/old-generation.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The old space's largest size and its live size at the end, in MiB. */
function oldSpacePeak(percent: number): { peak: number; live: number } {
  const code = `
    const { getHeapSpaceStatistics, setFlagsFromString } = await import('node:v8');
    setFlagsFromString('${growthFlag(percent)}');
    const old = () => getHeapSpaceStatistics().find((s) => s.space_name === 'old_space');
    const keep = Array.from({ length: 100000 }, (_, i) => ({ i, s: 'k'.repeat(150) + i }));
    const window = new Array(20000);
    let peak = 0;
    for (let i = 0, n = 0; i < 1500; i++) {
      for (let k = 0; k < 1000; k++) window[n++ % window.length] = { i, k, s: 'x'.repeat(200) + k };
      peak = Math.max(peak, old().space_size);
      await new Promise((r) => setImmediate(r));
    }
    gc();
    console.log(JSON.stringify({ peak: peak / 1048576, live: old().space_used_size / 1048576, kept: keep.length }));
  `;
  // plain node: under tsx's loader the same workload's old space stays small whatever the setting
  const r = spawnSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', code], { cwd: ROOT, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout.trim().split('\n').at(-1)!);
}

test('bounded at OLD_GENERATION_GROWTH_PERCENT, the old space stays within a fraction of what 4x lets it grow to', () => {
  const wide = oldSpacePeak(300);
  const bounded = oldSpacePeak(OLD_GENERATION_GROWTH_PERCENT);
  assert.ok(wide.peak > 3 * wide.live, `at 4x: ${wide.peak.toFixed(0)} MiB for ${wide.live.toFixed(0)} live (the checks below can fail)`);
  assert.ok(bounded.peak < wide.peak / 1.8, `bounded: ${bounded.peak.toFixed(0)} MiB against ${wide.peak.toFixed(0)}`);
  assert.ok(bounded.peak < 3 * bounded.live, `bounded: ${bounded.peak.toFixed(0)} MiB for ${bounded.live.toFixed(0)} live`);
});

test('a setting given on node’s command line stands: the service does not override it', () => {
  assert.equal(growthFlagGiven(['--heap-growing-percent=20']), true);
  assert.equal(growthFlagGiven(['--heap_growing_percent', '20']), true);
  assert.equal(growthFlagGiven(['--max-old-space-size=512', '--heap-growing-percent-x']), false);
  assert.equal(growthFlagGiven([]), false);
});
