// Column types and their values: checking JSON input against a type, and the parameter a value is
// written as (see the storage table in the README; reading back is the engine's Dialect.decodeValue).
import type { ColumnType, SqlParam } from '../storage/engine.ts';
import { parseDate, parseTimestamp } from '../lib/temporal.ts';
import { canonicalJson } from '../lib/jsonb.ts';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../rest-query/values.ts';
import { badJsonText, hasLoneSurrogate, hasNul } from '../lib/text.ts';
import { jsonbTextLength, parseJsonDocument } from '../policy-language/json-value.ts';

export const COLUMN_TYPES: readonly ColumnType[] = ['text', 'integer', 'number', 'boolean', 'timestamp', 'date', 'json'];

export const MAX_TEXT_BYTES = 1024 * 1024;
/**
 * A JSON value's text as PostgreSQL prints it (`jsonb::text`: numbers without exponents, a space
 * after each `,` and `:`), which the policy functions render: `5e-324` is 326 characters there,
 * so a 1 MiB document of them rendered 48 MB at every call (a hostile review). Spaces alone at most
 * double the text.
 */
export const MAX_JSON_RENDERED = 4 * MAX_TEXT_BYTES;

const renderedLength = (text: string): number => {
  const doc = parseJsonDocument(text);
  return 'value' in doc ? jsonbTextLength(doc.value) : Number.POSITIVE_INFINITY;
};

function someNumber(value: unknown, bad: (n: number) => boolean): boolean {
  if (typeof value === 'number') return bad(value);
  if (Array.isArray(value)) return value.some((v) => someNumber(v, bad));
  if (value !== null && typeof value === 'object') return Object.values(value).some((v) => someNumber(v, bad));
  return false;
}

export type CheckResult = { ok: true; value: unknown } | { ok: false; reason: string };

/** Checks a JSON value against a column type; null passes (nullability is checked separately). */
export function checkValue(type: ColumnType, value: unknown): CheckResult {
  if (value === null) return { ok: true, value: null };
  switch (type) {
    case 'text':
      if (typeof value !== 'string') return { ok: false, reason: 'expected_text' };
      if (Buffer.byteLength(value, 'utf8') > MAX_TEXT_BYTES) return { ok: false, reason: 'too_long' };
      if (hasNul(value)) return { ok: false, reason: 'nul_character' };
      if (hasLoneSurrogate(value)) return { ok: false, reason: 'unpaired_surrogate' };
      return { ok: true, value };
    case 'integer':
      if (typeof value !== 'number' || !Number.isSafeInteger(value)) return { ok: false, reason: 'expected_integer' };
      return { ok: true, value };
    case 'number':
      if (typeof value !== 'number' || !Number.isFinite(value)) return { ok: false, reason: 'expected_number' };
      return { ok: true, value };
    case 'boolean':
      if (typeof value !== 'boolean') return { ok: false, reason: 'expected_boolean' };
      return { ok: true, value };
    case 'timestamp': {
      const ts = typeof value === 'string' ? parseTimestamp(value, { requireZone: true }) : null;
      return ts === null ? { ok: false, reason: 'expected_timestamp' } : { ok: true, value: ts };
    }
    case 'date': {
      const d = typeof value === 'string' ? parseDate(value) : null;
      return d === null ? { ok: false, reason: 'expected_date' } : { ok: true, value: d };
    }
    case 'json': {
      // (a request body is bounded as it is parsed; a context.db call of a function is not)
      if (nestsDeeperThan(value, MAX_JSON_DEPTH)) return { ok: false, reason: 'too_deep' };
      const text = JSON.stringify(value);
      const bad = badJsonText(text, value);
      if (bad) return { ok: false, reason: bad };
      if (Buffer.byteLength(text, 'utf8') > MAX_TEXT_BYTES) return { ok: false, reason: 'too_long' };
      // a number past the double range was read as Infinity, which would be written as null
      if (text.includes('null') && someNumber(value, (n) => !Number.isFinite(n))) return { ok: false, reason: 'number_out_of_range' };
      if (/\d[eE]/.test(text) && renderedLength(text) > MAX_JSON_RENDERED) return { ok: false, reason: 'too_long' };
      return { ok: true, value };
    }
  }
}

/** A checked JSON value as a bound parameter. */
export function toParam(type: ColumnType, value: unknown): SqlParam {
  if (value === null || value === undefined) return null;
  if (type === 'json') return canonicalJson(value);
  return value as SqlParam;
}
