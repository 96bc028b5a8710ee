// Request bodies -> checked column values: the column whitelist, type checks per column, defaults
// (literal, now(), $auth.id, $auth.email), and NOT NULL.
import { AppError } from '../../errors.ts';
import type { ColumnDef } from '../tables.ts';
import type { AuthContext } from '../end-users.ts';
import { checkValue } from '../column-values.ts';

export type RowValues = Map<string, unknown>;

const unknownColumn = (name: string) => new AppError('unknown_column.row', { column: name.slice(0, 63) });

export function invalidValue(column: string, reason: string): AppError {
  return new AppError('invalid_value', { column, reason });
}

/**
 * The largest id a request may insert: ids are generated after the largest one, and at least 2^52
 * of them must remain exact JavaScript integers (up to 2^53 - 1), so that no caller who may insert
 * can use up a table's ids (an upsert may still name a larger existing id: MAX_SAFE_INTEGER).
 */
export const MAX_EXPLICIT_ID = 2 ** 52;

export const idTooLarge = () => new AppError('invalid_value.id_too_large', { max: MAX_EXPLICIT_ID });

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function defaultValue(c: ColumnDef, auth: AuthContext | null, now: Date): unknown {
  if (c.default === null || c.default === undefined) return null;
  if (c.default === 'now()' && (c.type === 'timestamp' || c.type === 'date')) {
    const iso = now.toISOString();
    return c.type === 'date' ? iso.slice(0, 10) : iso;
  }
  if (c.default === '$auth.id' && c.type === 'integer') return auth?.id ?? null;
  if (c.default === '$auth.email' && c.type === 'text') return auth?.email ?? null;
  return c.default;
}

export interface InputOptions {
  byName: ReadonlyMap<string, ColumnDef>;
  /** The largest explicit id accepted; null: `id` is read-only. */
  maxId: number | null;
  /** Restricts the accepted keys (the `columns=` parameter); other keys are ignored. */
  only: string[] | null;
}

/** Options for checkObject, built once per request (a bulk body checks every row with them). */
export function inputOptions(columns: ColumnDef[], maxId: number | null, only: string[] | null): InputOptions {
  return { byName: new Map(columns.map((c) => [c.name, c])), maxId, only };
}

/** Checks one object's keys and values; returns only the keys it carries. */
export function checkObject(body: unknown, opts: InputOptions): RowValues {
  if (!isPlainObject(body)) throw new AppError('invalid_body.expected_object');
  const out: RowValues = new Map();
  for (const key of Object.keys(body)) {
    if (opts.only && !opts.only.includes(key)) continue;
    const value = body[key];
    if (key === 'id') {
      if (opts.maxId === null) throw new AppError('read_only_column.id');
      if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) throw invalidValue('id', 'expected_positive_integer');
      if (value > opts.maxId) throw idTooLarge();
      out.set('id', value);
      continue;
    }
    const col = opts.byName.get(key);
    if (!col) throw unknownColumn(key);
    const checked = checkValue(col.type, value);
    if (!checked.ok) throw invalidValue(key, checked.reason);
    if (checked.value === null && !col.nullable) throw invalidValue(key, 'not_null');
    out.set(key, checked.value);
  }
  return out;
}

/**
 * Complete rows for an INSERT: keys in `present` that a row lacks become NULL (PostgREST bulk
 * semantics) unless `missingDefault`; columns nobody sent take their default.
 */
export function completeForInsert(rows: RowValues[], columns: ColumnDef[], present: Set<string>, missingDefault: boolean, auth: AuthContext | null, now: Date): RowValues[] {
  return rows.map((row) => {
    const full: RowValues = new Map();
    if (row.has('id')) full.set('id', row.get('id'));
    for (const c of columns) {
      let v: unknown;
      if (row.has(c.name)) v = row.get(c.name);
      else if (present.has(c.name) && !missingDefault) v = null;
      else v = defaultValue(c, auth, now);
      if (v === null && !c.nullable) throw invalidValue(c.name, 'not_null');
      full.set(c.name, v);
    }
    return full;
  });
}

/** PUT: every writable column; omitted ones take their default or NULL. */
export function completeForReplace(row: RowValues, columns: ColumnDef[], auth: AuthContext | null, now: Date): RowValues {
  const present = new Set<string>();
  return completeForInsert([row], columns, present, true, auth, now)[0]!;
}

export function parseBodyRows(body: unknown): { rows: unknown[]; isArray: boolean } {
  if (body === undefined) throw new AppError('invalid_body.missing');
  if (Array.isArray(body)) return { rows: body, isArray: true };
  return { rows: [body], isArray: false };
}

export { unknownColumn };
