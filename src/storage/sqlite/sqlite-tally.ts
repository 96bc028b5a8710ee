// Db.tally on SQLite: a statement's rows read one at a time, only `keep` of them held (a write's
// RETURNING rows may be millions); the rest are counted.
import type { RowTally } from '../engine.ts';

export function tallyRows(rows: Iterable<Record<string, unknown>>, keep: number): RowTally {
  const out: RowTally = { rows: [], count: 0 };
  for (const row of rows) {
    out.count++;
    if (out.rows.length < keep) out.rows.push(row);
  }
  return out;
}
