// Coercion of filter value text to a column's type. Hand-written scanners only: no RegExp is ever
// built from user input and none of the fixed checks can backtrack.
import { invalidValue, RestQueryError } from './errors.ts';
import { parseDate, parseTimestamp } from '../lib/temporal.ts';
import { parseJsonDocument } from '../policy-language/json-value.ts';

const farExponent = (text: string) => {
  const doc = parseJsonDocument(text);
  return 'error' in doc && doc.error.startsWith('number out of range');
};

export { parseDate, parseTimestamp };

export type ColumnType = 'text' | 'integer' | 'number' | 'boolean' | 'timestamp' | 'date' | 'json';
export interface ColumnInfo {
  name: string;
  type: ColumnType;
}
/** A filter value coerced to its column's type. Timestamps are `YYYY-MM-DDTHH:MM:SS.sssZ`, dates `YYYY-MM-DD`, json the text as-is. */
export type Value = string | number | boolean | null;

export type FilterOp = 'eq' | 'neq' | 'gt' | 'gte' | 'lt' | 'lte' | 'like' | 'ilike' | 'in' | 'is';
export type IsValue = 'null' | 'not_null' | 'true' | 'false' | 'unknown';

export const FILTER_OPS: ReadonlySet<string> = new Set<FilterOp>(['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'like', 'ilike', 'in', 'is']);

const isDigit = (c: number): boolean => c >= 48 && c <= 57;

/** Whether `s[from, to)` is one or more ASCII digits. */
function allDigits(s: string, from = 0, to = s.length): boolean {
  if (to <= from) return false;
  for (let i = from; i < to; i++) if (!isDigit(s.charCodeAt(i))) return false;
  return true;
}

/** `[+-]?\d+`, a safe integer. Surrounding whitespace is tolerated (as PostgreSQL's int input does). */
export function parseInteger(text: string): number | 'not_an_integer' | 'integer_out_of_range' {
  const t = text.trim();
  const start = t.startsWith('+') || t.startsWith('-') ? 1 : 0;
  if (!allDigits(t, start)) return 'not_an_integer';
  const n = Number(t);
  if (!Number.isSafeInteger(n)) return 'integer_out_of_range';
  return n === 0 ? 0 : n; // no -0
}

/** A finite decimal: `[+-]? (digits [. digits?] | . digits) ([eE] [+-]? digits)?`. No NaN / Infinity / hex. */
export function parseNumber(text: string): number | null {
  const t = text.trim();
  let i = 0;
  const n = t.length;
  if (i < n && (t[i] === '+' || t[i] === '-')) i++;
  let intDigits = 0;
  while (i < n && isDigit(t.charCodeAt(i))) (i++, intDigits++);
  let fracDigits = 0;
  if (i < n && t[i] === '.') {
    i++;
    while (i < n && isDigit(t.charCodeAt(i))) (i++, fracDigits++);
  }
  if (intDigits + fracDigits === 0) return null;
  if (i < n && (t[i] === 'e' || t[i] === 'E')) {
    i++;
    if (i < n && (t[i] === '+' || t[i] === '-')) i++;
    let expDigits = 0;
    while (i < n && isDigit(t.charCodeAt(i))) (i++, expDigits++);
    if (expDigits === 0) return null;
  }
  if (i !== n) return null;
  const v = Number(t);
  if (!Number.isFinite(v)) return null;
  return v === 0 ? 0 : v;
}

/** Booleans: true/false/t/f/1/0, case-insensitive, trimmed. */
export function parseBoolean(text: string): boolean | null {
  switch (text.trim().toLowerCase()) {
    case 'true':
    case 't':
    case '1':
      return true;
    case 'false':
    case 'f':
    case '0':
      return false;
    default:
      return null;
  }
}

/** Nesting a json value may have, in a body (checked as the body is parsed) or a filter: values are
 * canonicalised and serialised recursively, and no caller may drive that past the stack. */
export const MAX_JSON_DEPTH = 128;

/** Whether arrays and objects in `root` nest deeper than `max` levels (iterative: any depth is safe). */
export function nestsDeeperThan(root: unknown, max: number): boolean {
  const stack: [unknown, number][] = [[root, 0]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (depth >= max) return true;
    for (const child of Array.isArray(v) ? v : Object.values(v)) stack.push([child, depth + 1]);
  }
  return false;
}

/** Rejects NUL characters, which no engine stores in text. */
function assertNoNul(column: string, text: string): void {
  if (text.includes('\u0000')) throw invalidValue(column, 'contains_nul');
}

/** Coerces one value's text to the column's type; throws 422 invalid_value naming the column. */
export function coerceValue(col: ColumnInfo, text: string): Value {
  assertNoNul(col.name, text);
  switch (col.type) {
    case 'text':
      return text;
    case 'integer': {
      const r = parseInteger(text);
      if (typeof r === 'string') throw invalidValue(col.name, r);
      return r;
    }
    case 'number': {
      const r = parseNumber(text);
      if (r === null) throw invalidValue(col.name, 'not_a_number');
      return r;
    }
    case 'boolean': {
      const r = parseBoolean(text);
      if (r === null) throw invalidValue(col.name, 'not_a_boolean');
      return r;
    }
    case 'timestamp': {
      const r = parseTimestamp(text);
      if (r === null) throw invalidValue(col.name, 'not_a_timestamp');
      return r;
    }
    case 'date': {
      const r = parseDate(text);
      if (r === null) throw invalidValue(col.name, 'not_a_date');
      return r;
    }
    case 'json': {
      let value: unknown;
      try {
        value = JSON.parse(text);
      } catch {
        throw invalidValue(col.name, 'not_json');
      }
      if (nestsDeeperThan(value, MAX_JSON_DEPTH))
        throw new RestQueryError('too_deep.json_value', { column: col.name, limit: MAX_JSON_DEPTH });
      // a number PostgreSQL's numeric cannot read (json-value.ts MAX_EXPONENT)
      if (/\d[eE]/.test(text) && farExponent(text)) throw invalidValue(col.name, 'number_out_of_range');
      return text;
    }
    default:
      throw invalidValue(col.name, 'unsupported_column_type');
  }
}

/** Checks that `op` applies to the column's type; throws 422 invalid_value otherwise. */
export function checkOperator(col: ColumnInfo, op: FilterOp): void {
  if ((op === 'like' || op === 'ilike') && col.type !== 'text') throw invalidValue(col.name, `${op}_requires_text_column`);
  if (col.type === 'json' && op !== 'eq' && op !== 'neq' && op !== 'is') throw invalidValue(col.name, `${op}_not_supported_on_json`);
}

/** `is` operands, a keyword of the filter grammar (case-insensitive): anything else is 400 invalid_filter. */
export const IS_VALUES: ReadonlySet<string> = new Set<IsValue>(['null', 'not_null', 'true', 'false', 'unknown']);

/** `is` operand (already checked against IS_VALUES): true, false and unknown need a boolean column. */
export function coerceIs(col: ColumnInfo, text: string): IsValue {
  const v = text.trim().toLowerCase() as IsValue;
  if (v !== 'null' && v !== 'not_null' && col.type !== 'boolean') throw invalidValue(col.name, 'is_boolean_requires_boolean_column');
  return v;
}

/** like/ilike: the PostgREST `*` wildcard becomes `%`; the pattern stays a string. */
export function likePattern(col: ColumnInfo, text: string): string {
  assertNoNul(col.name, text);
  return text.replaceAll('*', '%');
}

/** The value of a single-valued operator (everything but `in` and `is`). */
export function coerceOperand(col: ColumnInfo, op: Exclude<FilterOp, 'in' | 'is'>, text: string): Value {
  checkOperator(col, op);
  if (op === 'like' || op === 'ilike') return likePattern(col, text);
  return coerceValue(col, text);
}
