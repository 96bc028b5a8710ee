// The PocketBase peer's set-up, run for real when its binary is already in the peers' cache (which
// `npm run bench -- --peers` fills): nothing is installed here and no network is used. A few seconds.
// No timing is asserted: only that the bulk-loaded rows are served under the rule, an insert is
// accepted, and drop() leaves no process and no data directory behind.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { pocketbaseBin, preparePocketbase } from '../../bench/peers/pocketbase.ts';
import { cannon } from '../../bench/cannon.ts';
import { takeFailures } from '../../bench/workload.ts';

const bin = pocketbaseBin();
const usable = process.platform === 'linux' && process.arch === 'x64' && existsSync(bin);
if (!usable) console.warn(`!!! PocketBase peer set-up test skipped: no binary at ${bin} (npm run bench -- --peers installs it)`);

const dataDirs = () => new Set(readdirSync(tmpdir()).filter((n) => n.startsWith('bp-bench-pocketbase-')));

test('PocketBase peer: the bulk-loaded rows served under its rule, an insert accepted, nothing left after drop()', { skip: !usable && `no PocketBase binary at ${bin}`, timeout: 120_000 }, async () => {
  const before = dataDirs();
  const prepared = await preparePocketbase(bin);
  const ours = [...dataDirs()].filter((n) => !before.has(n));
  assert.equal(ours.length, 1);
  let pid = 0;
  try {
    const peer = await prepared.start(`${tmpdir()}/${ours[0]}/peer.log`); // start() itself checks the first read
    pid = peer.server.pid;
    assert.match(peer.name, /^PocketBase 0\.22\./);
    assert.equal(await peer.read.send(1), true);
    assert.equal(await peer.insert.send(1), true);
    // under autocannon, every answer is the read's first one byte for byte, every insert a 200
    const fails: string[] = [];
    for (const endpoint of [peer.read, peer.insert]) {
      const run = await cannon(await endpoint.cannon(), { seconds: 1, concurrency: 2 }, 0, (f) => fails.push(f));
      assert.ok(run.requests > 10 && run.errors === 0, `${JSON.stringify(run)} ${fails.join('; ')}`);
    }
    assert.deepEqual(takeFailures(), []);
  } finally {
    await prepared.drop();
  }
  assert.throws(() => process.kill(pid, 0), { code: 'ESRCH' });
  assert.equal(existsSync(`${tmpdir()}/${ours[0]}`), false);
});
