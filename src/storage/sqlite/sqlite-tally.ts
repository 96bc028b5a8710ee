// Db.tally on SQLite: a statement's rows read one at a time, only `keep` of them held (a write's
// RETURNING rows may be millions), within MAX_RESULT_BYTES; the rest are counted.
import type { RowTally } from '../engine.ts';
import { spend } from '../result-budget.ts';

export function tallyRows(rows: Iterable<Record<string, unknown>>, keep: number, maxBytes: number): RowTally {
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
