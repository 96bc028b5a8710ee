// limit / offset query parameters, the Range request header, MAX_ROWS capping and Content-Range.
import { RestQueryError, invalidRange } from './errors.ts';

/** `limit` / `offset`: one or more ASCII digits forming a safe integer (surrounding whitespace tolerated). */
export function parseNonNegativeInt(param: 'limit' | 'offset', raw: string): number {
  const t = raw.trim();
  if (t === '') throw invalidRange(param, raw, 'empty');
  if (t.startsWith('-')) throw invalidRange(param, raw, 'negative');
  for (let i = 0; i < t.length; i++) {
    const c = t.charCodeAt(i);
    if (c < 48 || c > 57) throw invalidRange(param, raw, 'not_an_integer');
  }
  const n = Number(t);
  if (!Number.isSafeInteger(n)) throw invalidRange(param, raw, 'too_large');
  return n;
}

function rangeNotSatisfiable(header: string, reason: string): RestQueryError {
  return new RestQueryError('range_not_satisfiable', { range: header.length > 120 ? `${header.slice(0, 120)}…` : header, reason });
}

// Fixed pattern (never built from input), linear: optional unit, digits, '-', optional digits.
const RANGE = /^(?:items=)?(\d+)-(\d*)$/;

/**
 * The page to read. The query's limit/offset and the Range header (`first-last`, `first-`, optionally
 * `items=` prefixed) are intersected, as PostgREST does; the page never holds more than maxRows rows.
 * A malformed Range header is ignored (PostgREST); `last < first` or a bound beyond
 * Number.MAX_SAFE_INTEGER is 416 range_not_satisfiable.
 */
export function resolveRange(opts: { limit: number | null; offset: number; rangeHeader?: string; maxRows: number }): {
  limit: number;
  offset: number;
} {
  const { maxRows } = opts;
  if (!Number.isSafeInteger(maxRows) || maxRows < 1) throw new Error('resolveRange: maxRows must be a positive integer');
  let start = opts.offset;
  let end = opts.limit === null ? Infinity : opts.offset + opts.limit - 1; // inclusive
  const header = opts.rangeHeader?.trim();
  if (header) {
    const m = RANGE.exec(header);
    if (m) {
      const first = Number(m[1]);
      const last = m[2] === '' ? Infinity : Number(m[2]);
      if (!Number.isSafeInteger(first) || (last !== Infinity && !Number.isSafeInteger(last))) {
        throw rangeNotSatisfiable(header, 'bound_too_large');
      }
      if (last < first) throw rangeNotSatisfiable(header, 'last_before_first');
      start = Math.max(start, first);
      end = Math.min(end, last);
    }
  }
  const limit = end === Infinity ? maxRows : Math.max(0, Math.min(maxRows, end - start + 1));
  return { limit, offset: start };
}

/** `Content-Range` value: "0-9/123", "*\/0" for an empty page, "0-9/*" when the total is unknown. */
export function contentRange(offset: number, rowCount: number, total: number | null): string {
  const span = rowCount > 0 ? `${offset}-${offset + rowCount - 1}` : '*';
  return `${span}/${total === null ? '*' : total}`;
}
