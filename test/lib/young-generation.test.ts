// The bound on V8's young generation (lib/young-generation.ts), in fresh processes: the flags are
// the process's. A workload that keeps much of what it allocates alive for a while (as requests in
// flight do) makes V8 grow the semi-spaces to its own bound of 16 MiB. Started with the launchers'
// flag, they never pass SEMI_SPACE_MIB, even within one task; with the softer bound from inside,
// they stop at it when the work yields between collections, and grow again after a full collection
// shrank them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { semiSpaceFlagGiven, SEMI_SPACE_FLAG, SEMI_SPACE_MIB } from '../../src/lib/young-generation.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/**
 * The largest semi-space seen (MiB, rounded up: V8 reports a page header less) while chunks of
 * about 0.5 MiB are allocated, each its own task, with a window of 8 MiB kept alive; `oneTask`: all
 * in one synchronous task. `after` runs before a second, identical workload.
 */
function semiSpacePeak(opts: { nodeFlags?: string[]; setup?: string; oneTask?: boolean; after?: string }): number[] {
  const code = `
    const { boundYoungGeneration, semiSpaceBytes } = await import('./src/lib/young-generation.ts');
    ${opts.setup ?? ''}
    async function work() {
      const live = new Array(32000);
      let peak = 0;
      for (let i = 0, n = 0; i < 400; i++) {
        for (let k = 0; k < 2000; k++) live[n++ % live.length] = { i, k, s: 'x'.repeat(200) + k };
        peak = Math.max(peak, semiSpaceBytes());
        ${opts.oneTask ? '' : 'await new Promise((r) => setImmediate(r));'}
      }
      return Math.ceil(peak / 1048576);
    }
    const peaks = [await work()];
    ${opts.after ? `${opts.after}; peaks.push(await work());` : ''}
    console.log(JSON.stringify(peaks));
  `;
  const args = [...(opts.nodeFlags ?? []), '--import', 'tsx', '--input-type=module', '-e', code];
  const r = spawnSync(process.execPath, args, { cwd: ROOT, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout.trim().split('\n').at(-1)!);
}

test('unbounded, the workload grows the semi-spaces past the bound (the checks below can fail)', () => {
  assert.ok(semiSpacePeak({ oneTask: true })[0]! > SEMI_SPACE_MIB);
  assert.ok(semiSpacePeak({})[0]! > SEMI_SPACE_MIB);
});

test('started with the launchers\' flag, the semi-spaces reach the bound and never pass it, even within one task', () => {
  assert.deepEqual(semiSpacePeak({ nodeFlags: [SEMI_SPACE_FLAG], oneTask: true }), [SEMI_SPACE_MIB]);
});

test('the softer bound from inside: the semi-spaces reach it and stop; after a full collection shrank them, they grow to it again', () => {
  const peaks = semiSpacePeak({
    nodeFlags: ['--expose-gc'],
    setup: `const bound = boundYoungGeneration(${SEMI_SPACE_MIB});`,
    // V8 shrinks them in a full collection once allocation has been slow for a few seconds
    after: `for (let t = 0; t < 20 && semiSpaceBytes() > 1048576; t++) { await new Promise((r) => setTimeout(r, 500)); gc(); }
      if (semiSpaceBytes() > 1048576) throw new Error('not shrunk')`,
  });
  assert.deepEqual(peaks, [SEMI_SPACE_MIB, SEMI_SPACE_MIB]);
});

test('held (start-up), the semi-spaces do not grow even within one task; the bound set after lets them grow to it', () => {
  const code = `
    const { boundYoungGeneration, holdYoungGeneration, semiSpaceBytes } = await import('./src/lib/young-generation.ts');
    const mib = () => Math.ceil(semiSpaceBytes() / 1048576);
    holdYoungGeneration();
    const held = mib();
    const live = new Array(32000);
    let peak = 0;
    const work = async (yieldEach) => {
      for (let i = 0, n = 0; i < 400; i++) {
        for (let k = 0; k < 2000; k++) live[n++ % live.length] = { i, k, s: 'x'.repeat(200) + k };
        peak = Math.max(peak, mib());
        if (yieldEach) await new Promise((r) => setImmediate(r));
      }
      return peak;
    };
    const inTask = await work(false);
    boundYoungGeneration(${SEMI_SPACE_MIB});
    console.log(JSON.stringify([held, inTask, await work(true)]));
  `;
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { cwd: ROOT, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  const [held, inTask, bounded] = JSON.parse(r.stdout.trim().split('\n').at(-1)!) as number[];
  assert.ok(held! < SEMI_SPACE_MIB, `${held} MiB when held`);
  assert.equal(inTask, held, 'no growth while held, even within one task');
  assert.equal(bounded, SEMI_SPACE_MIB);
});

test('stopped, the softer bound lets V8 grow them again', () => {
  assert.ok(semiSpacePeak({ setup: `boundYoungGeneration(${SEMI_SPACE_MIB}).stop();` })[0]! > SEMI_SPACE_MIB);
});

test('the softer bound stands aside when node was given its own, on the command line or in NODE_OPTIONS', () => {
  assert.equal(semiSpaceFlagGiven([], undefined), false);
  assert.equal(semiSpaceFlagGiven(['--expose-gc'], '--max-old-space-size=512'), false);
  assert.equal(semiSpaceFlagGiven([SEMI_SPACE_FLAG], undefined), true);
  assert.equal(semiSpaceFlagGiven([], `--trace-warnings  --max_semi_space_size=16`), true);
  assert.equal(semiSpaceFlagGiven(['--max-semi-space-size', '8'], ''), true);
});
