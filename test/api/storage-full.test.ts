// The embedded engine on a full disk: writes answer 507 storage_full, reads go on. The data
// directory is a small tmpfs of the test's own, filled to the last byte by a filler file (SQLite
// reports the failed write as SQLITE_FULL, in a statement or at COMMIT). Mounting needs root, which
// CI has; elsewhere the test is skipped, loudly.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestApp, expectError } from '../support/app.ts';
import { dataPlane } from '../support/data-plane.ts';

const root = typeof process.getuid === 'function' && process.getuid() === 0;
if (!root) process.stderr.write('\n!!! WARNING: not root: the full-disk test (a tmpfs mount) is SKIPPED !!!\n\n');

/** Writes zeros until the filesystem refuses (ENOSPC). */
function fill(dir: string): void {
  const fd = openSync(join(dir, 'filler'), 'w');
  const chunk = Buffer.alloc(64 * 1024);
  try {
    for (let size = chunk.length; size >= 1; size = Math.floor(size / 2)) {
      for (;;) {
        try {
          writeSync(fd, chunk, 0, size);
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
          break;
        }
      }
    }
  } finally {
    closeSync(fd);
  }
}

test('[sqlite] a full disk answers writes with 507 storage_full; reads keep working', { skip: !root && 'needs root to mount a tmpfs' }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'bp-full-'));
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=4m', 'tmpfs', dir]);
  try {
    const t = await startTestApp('sqlite', { DATA_DIR: dir });
    try {
      const d = await dataPlane(t);
      await d.createTable('notes', [{ name: 'body', type: 'text' }]);
      assert.equal((await d.rest('POST', 'notes', { body: { body: 'before' } })).status, 201);
      assert.equal((await d.rest('GET', 'notes')).status, 200);
      fill(dir);

      const single = await d.rest('POST', 'notes', { body: { body: 'x'.repeat(20000) } });
      const err = expectError(single, 507, 'storage_full');
      assert.equal(err.details, null);
      assert.match(String(single.headers['x-request-id']), /^[0-9a-f-]{36}$/);
      // a bulk insert in one transaction: nothing of it is written
      const bulk = await d.rest('POST', 'notes', { body: Array.from({ length: 50 }, (_, i) => ({ body: `${i} ${'y'.repeat(2000)}` })) });
      expectError(bulk, 507, 'storage_full');

      const read = await d.rest('GET', 'notes?select=body');
      assert.equal(read.status, 200);
      assert.deepEqual(read.body, [{ body: 'before' }]);
      assert.equal((await t.req('GET', '/health')).status, 200);
    } finally {
      await t.close();
    }
  } finally {
    execFileSync('umount', ['-l', dir]);
    rmSync(dir, { recursive: true, force: true });
  }
});
