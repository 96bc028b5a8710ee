// Errors of the PostgREST query grammar. A RestQueryError is an AppError of the service's one
// table (src/error-table.ts), so the app's error handler renders it as the flat PostgREST shape
// { code, message, details, hint } with its status; its own type lets callers and tests tell a
// query the grammar refused from any other failure.
import { AppError, type AppErrorArgs } from '../errors.ts';

export class RestQueryError extends AppError {
  constructor(...args: AppErrorArgs) {
    super(...args);
    this.name = 'RestQueryError';
  }
}

/** Offending text echoed in `details` is clipped so an 8 KiB value is never mirrored back whole. */
export const MAX_ECHO = 120;
export function clip(text: string): string {
  return text.length > MAX_ECHO ? `${text.slice(0, MAX_ECHO)}…` : text;
}

/** The part of `text` around `position` (all of it when short). */
export function around(text: string, position: number): string {
  if (text.length <= MAX_ECHO) return text;
  const from = Math.max(0, Math.min(position - MAX_ECHO / 2, text.length - MAX_ECHO));
  return `${from > 0 ? '…' : ''}${text.slice(from, from + MAX_ECHO)}${from + MAX_ECHO < text.length ? '…' : ''}`;
}

/**
 * 400 invalid_filter: malformed filter / logic-tree syntax. details: { param, text (the value, or the
 * part around the error when long), reason, position? (offset of the error in the value) }.
 */
export function invalidFilter(param: string, text: string, reason: string, position?: number): RestQueryError {
  return new RestQueryError('invalid_filter', { param: clip(param), text: around(text, position ?? 0), reason, position });
}

/** 400 pattern_too_long: a like/ilike pattern longer than `limit` characters (code points). */
export function patternTooLong(param: string, column: string, limit: number): RestQueryError {
  return new RestQueryError('pattern_too_long', { param: clip(param), column: clip(column), limit });
}

/** 400 unknown_column: a name that is not a column of the table. */
export function unknownColumn(column: string): RestQueryError {
  return new RestQueryError('unknown_column.query', { shown: clip(column), column });
}

/** 422 invalid_value: a filter value that does not fit the column's type or operator. */
export function invalidValue(column: string, reason: string): RestQueryError {
  return new RestQueryError('invalid_value', { column, reason });
}

/** 400 invalid_select. */
export function invalidSelect(text: string, reason: string): RestQueryError {
  return new RestQueryError('invalid_select', { text: clip(text), reason });
}

/** 400 invalid_order. */
export function invalidOrder(text: string, reason: string): RestQueryError {
  return new RestQueryError('invalid_order', { text: clip(text), reason });
}

/** 400 invalid_param: on_conflict / columns syntax, or a single-valued parameter given twice. */
export function invalidParam(param: string, text: string, reason: string): RestQueryError {
  return new RestQueryError('invalid_param', { param, text: clip(text), reason });
}

/** 400 invalid_range: bad limit / offset. */
export function invalidRange(param: string, text: string, reason: string): RestQueryError {
  return new RestQueryError('invalid_range', { param, text: clip(text), reason });
}

/** 400 query_too_complex: a bound on size or complexity was exceeded. */
export function tooComplex(param: string, reason: string, limit: number): RestQueryError {
  return new RestQueryError('query_too_complex', { param: clip(param), reason, limit });
}
