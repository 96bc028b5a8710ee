// MAX_RESULT_BYTES: the most a statement over a project's tables may hand back. A row can be wide
// for nothing (a column with a 1 MiB default makes each row of a few-byte insert 1 MiB), so a page
// of MAX_ROWS rows, read whole, was up to a gigabyte, and a few such reads at once ran the process
// out of heap (a hostile review). The rows are counted as they are read, before they are all held:
// text (and bytes) by length, any other value as 8.
import { AppError } from '../errors.ts';

/** The code a worker thread reports the refusal under (sqlite-worker.ts), as AppError's. */
export const RESULT_TOO_LARGE = 'result_too_large';

export const resultTooLarge = () => new AppError(RESULT_TOO_LARGE);

const valueBytes = (v: unknown): number => (typeof v === 'string' ? v.length : v instanceof Uint8Array ? v.byteLength : 8);

/** What is left of a budget once `row` is held; refused (413 result_too_large) below zero. */
export function spend(left: number, row: Readonly<Record<string, unknown>>): number {
  for (const k in row) left -= valueBytes(row[k]);
  if (left < 0) throw resultTooLarge();
  return left;
}

/** A statement's rows, read one at a time within `maxBytes`. */
export function collectRows<T extends Record<string, unknown>>(rows: Iterable<T>, maxBytes: number): T[] {
  const out: T[] = [];
  let left = maxBytes;
  for (const row of rows) {
    left = spend(left, row);
    out.push(row);
  }
  return out;
}
