// A statement's rows on SQLite, the same on the main thread (sqlite-db.ts) and in the workers
// (sqlite-worker.ts): run to its end, or tallied (Db.tally: a write's RETURNING rows may be
// millions, only `keep` of them held, the rest counted), always within MAX_RESULT_BYTES.
import type Database from 'better-sqlite3';
import type { RowTally } from '../engine.ts';
import { collectRows, first, spend } from '../result-budget.ts';

export type Mode = 'all' | 'get' | 'run';

type Row = Record<string, unknown>;

/** One statement run to its end; its rows (`all`) or first row (`get`) within `maxBytes` (Infinity: a platform statement). */
export function execute(st: Database.Statement, args: readonly unknown[], mode: Mode, maxBytes: number): unknown {
  if (mode === 'run') {
    if (st.reader) return { changes: st.all(...args).length };
    return { changes: st.run(...args).changes };
  }
  if (!st.reader) {
    st.run(...args);
    return mode === 'all' ? [] : undefined;
  }
  if (maxBytes === Number.POSITIVE_INFINITY) return mode === 'all' ? st.all(...args) : st.get(...args);
  const rows = st.iterate(...args) as Iterable<Row>;
  return mode === 'all' ? collectRows(rows, maxBytes) : collectRows(first(rows), maxBytes)[0];
}

export function tallyRows(rows: Iterable<Row>, keep: number, maxBytes: number): RowTally {
  const out: RowTally = { rows: [], count: 0 };
  let left = maxBytes;
  for (const row of rows) {
    out.count++;
    if (out.rows.length < keep) {
      left = spend(left, row);
      out.rows.push(row);
    }
  }
  return out;
}
