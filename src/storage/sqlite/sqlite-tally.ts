// Db.tally on SQLite: a statement's rows read one at a time, only `keep` of them held (a write's
// RETURNING rows may be millions); the rest are counted, with those whose `zero` column is 0.
import type { RowTally } from '../engine.ts';

export function tallyRows(rows: Iterable<Record<string, unknown>>, keep: number, zero: string | null): RowTally {
  const out: RowTally = { rows: [], count: 0, zeros: 0 };
  for (const row of rows) {
    out.count++;
    if (zero !== null && row[zero] === 0) out.zeros++;
    if (out.rows.length < keep) out.rows.push(row);
  }
  return out;
}
