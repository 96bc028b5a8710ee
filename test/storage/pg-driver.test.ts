// The pg driver is loaded without Node's fetch implementation (storage/postgres/pg-driver.ts): on
// Node 20, pg would construct a `Response` to tell a Cloudflare Worker from Node, loading undici
// into every PostgreSQL-engine process. Checked in a fresh process, since this one may have loaded
// it already; the global `Response` must be back and working afterwards.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

function inFreshProcess(code: string): unknown {
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { cwd: ROOT, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout.trim().split('\n').at(-1)!);
}

const undiciLoaded = `process.moduleLoadList.some((m) => m.includes('undici'))`;

test('loading pg through pg-driver.ts loads no fetch implementation, and Response is left as it was', () => {
  const out = inFreshProcess(`
    const before = Object.getOwnPropertyDescriptor(globalThis, 'Response');
    const { pg } = await import('./src/storage/postgres/pg-driver.ts');
    const after = Object.getOwnPropertyDescriptor(globalThis, 'Response');
    const loaded = ${undiciLoaded};
    const same = before.get === after.get && before.set === after.set && before.value === after.value && before.enumerable === after.enumerable;
    const works = (await new Response('ok').text()) === 'ok';
    console.log(JSON.stringify({ loaded, same, works, pool: typeof pg.Pool, parser: typeof pg.types.getTypeParser }));
  `);
  assert.deepEqual(out, { loaded: false, same: true, works: true, pool: 'function', parser: 'function' });
});

test('the check can fail: pg imported directly does load it on this Node', { skip: Number(process.versions.node.split('.')[0]) >= 21 && 'Node 21+ has navigator: pg never constructs a Response there' }, () => {
  const out = inFreshProcess(`await import('pg'); console.log(JSON.stringify(${undiciLoaded}));`);
  assert.equal(out, true);
});
