// MAX_RESULT_BYTES: the most a statement over a project's tables may hand back. A row can be wide
// for nothing (a column with a 1 MiB default makes each row of a few-byte insert 1 MiB), so a page
// of MAX_ROWS rows, read whole, was up to a gigabyte, and a few such reads at once ran the process
// out of heap (a hostile review). The rows are counted as they are read, before they are all held,
// by the length of each value's text as PostgreSQL sends it (the measure of postgres/prepared-run.ts):
// text and bytes by length, a number by its decimal digits, JSON by its compact text, NULL as 8.
// So both engines answer the same request alike but at the very edge (a timestamp's text differs
// by a few characters).
import { AppError } from '../errors.ts';

/** The code a worker thread reports the refusal under (sqlite-worker.ts), as AppError's. */
export const RESULT_TOO_LARGE = 'result_too_large';

export const resultTooLarge = () => new AppError(RESULT_TOO_LARGE);

const valueBytes = (v: unknown): number =>
  typeof v === 'string' ? v.length : typeof v === 'number' || typeof v === 'bigint' ? String(v).length : v instanceof Uint8Array ? v.byteLength : 8;

/** What is left of a budget once `row` is held; refused (413 result_too_large) below zero. */
export function spend(left: number, row: Readonly<Record<string, unknown>>): number {
  for (const k in row) left -= valueBytes(row[k]);
  if (left < 0) throw resultTooLarge();
  return left;
}

/** The first of `rows` only (a `get`): the statement is not read further. */
export function* first<T>(rows: Iterable<T>): Generator<T> {
  for (const row of rows) {
    yield row;
    return;
  }
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

/**
 * The length of a JSON text without the space PostgreSQL's jsonb output puts after each `,` and
 * `:` (the compact form the embedded engine stores), read once, strings skipped.
 */
export function compactJsonLength(text: string): number {
  let n = text.length;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // \ escapes the next character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if ((c === 0x2c || c === 0x3a) && text.charCodeAt(i + 1) === 0x20) n--;
  }
  return n;
}
