// Errors of the PostgREST query grammar. A RestQueryError is an AppError (the service's single error
// vocabulary), so the app's error handler renders it as the flat PostgREST shape
// { code, message, details, hint } with its status.
import { AppError } from '../errors.ts';

export type RestQueryStatus = 400 | 416 | 422;

export class RestQueryError extends AppError {
  declare readonly status: RestQueryStatus;
  declare readonly code: string;
  declare readonly details: unknown;
  declare readonly hint: string | null;

  constructor(status: RestQueryStatus, code: string, message: string, details: unknown = null, hint: string | null = null) {
    super(status, code, message, details, hint);
    this.name = 'RestQueryError';
  }

  toJSON(): { code: string; message: string; details: unknown; hint: string | null } {
    return { code: this.code, message: this.message, details: this.details, hint: this.hint };
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
  const details: Record<string, unknown> = { param: clip(param), text: around(text, position ?? 0), reason };
  if (position !== undefined) details.position = position;
  return new RestQueryError(400, 'invalid_filter', `The filter '${clip(param)}' is malformed (${reason}).`, details);
}

/** 400 pattern_too_long: a like/ilike pattern longer than `limit` characters (code points). */
export function patternTooLong(param: string, column: string, limit: number): RestQueryError {
  return new RestQueryError(400, 'pattern_too_long', `The like pattern for '${clip(column)}' is longer than ${limit} characters.`, {
    param: clip(param),
    column: clip(column),
    limit,
  });
}

/** 400 unknown_column: a name that is not a column of the table. */
export function unknownColumn(column: string): RestQueryError {
  return new RestQueryError(400, 'unknown_column', `'${clip(column)}' is not a column of this table.`, { column });
}

/** 422 invalid_value: a filter value that does not fit the column's type or operator. */
export function invalidValue(column: string, reason: string): RestQueryError {
  return new RestQueryError(422, 'invalid_value', `The value for column '${column}' is invalid (${reason}).`, { column, reason });
}

/** 400 invalid_select. */
export function invalidSelect(text: string, reason: string): RestQueryError {
  return new RestQueryError(400, 'invalid_select', `The select item '${clip(text)}' is not supported (${reason}).`, {
    param: 'select',
    text: clip(text),
    reason,
  });
}

/** 400 invalid_order. */
export function invalidOrder(text: string, reason: string): RestQueryError {
  return new RestQueryError(400, 'invalid_order', `The order item '${clip(text)}' is malformed (${reason}).`, {
    param: 'order',
    text: clip(text),
    reason,
  });
}

/** 400 invalid_param: on_conflict / columns syntax, or a single-valued parameter given twice. */
export function invalidParam(param: string, text: string, reason: string): RestQueryError {
  return new RestQueryError(400, 'invalid_param', `The parameter '${param}' is invalid (${reason}).`, {
    param,
    text: clip(text),
    reason,
  });
}

/** 400 invalid_range: bad limit / offset. */
export function invalidRange(param: string, text: string, reason: string): RestQueryError {
  return new RestQueryError(400, 'invalid_range', `The parameter '${param}' must be a non-negative integer (${reason}).`, {
    param,
    text: clip(text),
    reason,
  });
}

/** 400 query_too_complex: a bound on size or complexity was exceeded. */
export function tooComplex(param: string, reason: string, limit: number): RestQueryError {
  return new RestQueryError(400, 'query_too_complex', `The query is too large or too complex (${reason}).`, {
    param: clip(param),
    reason,
    limit,
  });
}
