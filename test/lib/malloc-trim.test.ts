// The C allocator's free pages go back to the system at an idle spell's end (lib/malloc-trim.ts,
// native/memory-trim.c): freed, 50 MiB of SQLite pages stay resident until trimmed. So do the
// pages of read-only file mappings, and the process goes on.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { memoryTrimLibrary, trimMalloc } from '../../src/lib/malloc-trim.ts';

const glibc = Boolean((process.report.getReport() as { header?: { glibcVersionRuntime?: string } }).header?.glibcVersionRuntime);
const residentMiB = () => process.memoryUsage().rss / 1048576;

test('trimMalloc gives the free pages of the C allocator back to the system', { skip: !glibc && 'malloc_trim is glibc-only' }, () => {
  trimMalloc(); // what start-up left
  const keep = new Database(':memory:'); // allocated after: the freed pages are not all at the heap's top
  const db = new Database(':memory:');
  db.exec("CREATE TABLE t (v TEXT); WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 100000) INSERT INTO t SELECT printf('%.500c', 'x') FROM c");
  keep.exec('CREATE TABLE k (v); INSERT INTO k VALUES (1)');
  db.close();
  const freed = residentMiB();
  assert.equal(trimMalloc(), true);
  const trimmed = residentMiB();
  assert.ok(freed - trimmed > 10, `resident ${freed.toFixed(1)} MiB before the trim, ${trimmed.toFixed(1)} after`);
  keep.close();
});

// In a child process of its own: the test runner's pages are not this test's to drop. The fixture
// (fixtures/cow-page.c) writes a page of its own read-only data, as a breakpoint or the loader's
// relocations do: a copy the drop must keep.
const CHILD = `
const { readFileSync } = require('node:fs');
const m = require(process.argv[1]);
const cow = require(process.argv[2]);
const fileKiB = () => Number(/RssFile:\\s+(\\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))[1]);
const written = cow.write() === 0 && String.fromCharCode(cow.read());
const before = fileKiB();
const dropped = m.dropFilePages();
const after = fileKiB();
const kept = String.fromCharCode(cow.read());
// the process goes on: code of the binary and of libraries runs again from the page cache
const crypto = require('node:crypto'), zlib = require('node:zlib');
const digest = crypto.createHash('sha256').update('baseplate').digest('hex');
const round = zlib.inflateSync(zlib.deflateSync(Buffer.from('x'.repeat(100000)))).length;
const json = JSON.parse(JSON.stringify({ a: [1, 2, { b: 'ü' }] }));
process.stdout.write(JSON.stringify({ written, kept, before, after, dropped, digest, round, json, again: m.dropFilePages() > 0 }));
`;

/** The fixture, compiled as the service's native modules are (a C compiler is needed for those too). */
function cowFixture(): string {
  const dir = mkdtempSync(join(tmpdir(), 'bp-cow-'));
  const out = join(dir, 'cow-page.node');
  execFileSync('cc', ['-shared', '-fPIC', '-O2', '-o', out, fileURLToPath(new URL('./fixtures/cow-page.c', import.meta.url))]);
  return out;
}

test("dropFilePages takes the read-only file pages out of the process's resident memory, keeps a written one, and the process goes on", { skip: process.platform !== 'linux' && 'Linux only' }, () => {
  const fixture = cowFixture();
  let out;
  try {
    out = JSON.parse(execFileSync(process.execPath, ['-e', CHILD, memoryTrimLibrary(), fixture], { encoding: 'utf8' }));
  } finally {
    rmSync(dirname(fixture), { recursive: true, force: true });
  }
  assert.equal(out.written, 'W');
  assert.equal(out.kept, 'W', 'a written page of read-only data is kept, not read again from the file');
  assert.ok(out.dropped > 10 * 1048576, `${out.dropped} bytes of pages dropped`);
  assert.ok(out.before - out.after > 5 * 1024, `file-backed resident ${out.before} KiB before, ${out.after} after`);
  assert.equal(out.digest, createHash('sha256').update('baseplate').digest('hex'));
  assert.equal(out.round, 100000);
  assert.deepEqual(out.json, { a: [1, 2, { b: 'ü' }] });
  assert.equal(out.again, true);
});
