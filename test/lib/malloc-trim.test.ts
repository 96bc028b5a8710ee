// The C allocator's free pages go back to the system at an idle spell's end (lib/malloc-trim.ts,
// native/memory-trim.c): freed, 50 MiB of SQLite pages stay resident until trimmed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { trimMalloc } from '../../src/lib/malloc-trim.ts';

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
