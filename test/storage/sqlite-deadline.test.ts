// The statement deadline of the embedded engine's connections (native/sqlite-deadline.c): the
// watchdog keeps only the connections with a deadline in its list. With many connections open,
// armed and disarmed in any order and some closed while armed, a statement past its deadline is
// still interrupted, and one on a connection whose deadline was cleared, or on another
// connection, runs to its end.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type Database from 'better-sqlite3';
import { openConnection } from '../../src/storage/sqlite/sqlite-connection.ts';
import { sqliteDeadlineLibrary } from '../../src/storage/sqlite/sqlite-build.ts';
import { deadlineSetter } from '../../src/storage/sqlite/sqlite-deadline.ts';

/** A statement that runs for about `rows` steps of a recursive CTE (a few hundred ms for 3 million). */
const SLOW = 'WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?) SELECT count(*) AS c FROM n';

function slow(db: Database.Database, rows: number): { ms: number; error: string | null } {
  const t0 = performance.now();
  try {
    db.prepare(SLOW).get(rows);
    return { ms: performance.now() - t0, error: null };
  } catch (err) {
    return { ms: performance.now() - t0, error: (err as { code?: string }).code ?? String(err) };
  }
}

test('many connections armed and disarmed in any order, some closed while armed: a deadline still interrupts its own statement only', () => {
  const dir = mkdtempSync(join(tmpdir(), 'bp-deadline-'));
  const extension = sqliteDeadlineLibrary();
  const conns = Array.from({ length: 60 }, (_, i) => {
    const db = openConnection(join(dir, `p${i}.db`), { extension });
    return { db, set: deadlineSetter(db) };
  });
  try {
    // arm every connection, then disarm every third from the middle of the list and the ends
    for (const c of conns) c.set(60_000);
    for (let i = 0; i < conns.length; i += 3) conns[(i * 7) % conns.length]!.set(0);
    // close some while armed: the watchdog must never touch them again
    for (const i of [1, 2, 59, 30]) conns[i]!.db.close();
    const open = conns.filter((c) => c.db.open);
    for (const c of open) c.set(0);
    for (const c of open.filter((_, i) => i % 2 === 0)) c.set(60_000);

    const target = open[5]!;
    target.set(50);
    const cut = slow(target.db, 50_000_000);
    assert.equal(cut.error, 'SQLITE_INTERRUPT');
    assert.ok(cut.ms < 1500, `interrupted after ${cut.ms.toFixed(0)} ms`);
    target.set(0);

    // another armed connection with a distant deadline, and a cleared one, run to the end
    assert.equal(slow(open[6]!.db, 300_000).error, null);
    assert.equal(slow(target.db, 300_000).error, null, 'cleared: runs to its end');
    // a deadline set again on a connection that was disarmed and re-armed several times
    for (let k = 0; k < 5; k++) (target.set(60_000), target.set(0));
    target.set(50);
    assert.equal(slow(target.db, 50_000_000).error, 'SQLITE_INTERRUPT');
    target.set(0);
    // set again while armed: the later deadline is the one kept (a shorter one interrupts)
    const other = open[8]!;
    other.set(60_000);
    other.set(50);
    assert.equal(slow(other.db, 50_000_000).error, 'SQLITE_INTERRUPT');
    other.set(0);
    assert.equal(slow(other.db, 300_000).error, null);
  } finally {
    for (const c of conns) if (c.db.open) c.db.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a fraction of a millisecond is a deadline, not none (as an integer it would be 0)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'bp-deadline-'));
  const db = openConnection(join(dir, 'p.db'), { extension: sqliteDeadlineLibrary() });
  try {
    const set = deadlineSetter(db);
    set(0.4);
    assert.equal(slow(db, 50_000_000).error, 'SQLITE_INTERRUPT');
    set(0);
    // straight to the extension, bound as a double
    db.prepare('SELECT bp_set_deadline(?)').get(0.4);
    assert.equal(slow(db, 50_000_000).error, 'SQLITE_INTERRUPT');
    set(0);
    assert.equal(slow(db, 300_000).error, null);
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
