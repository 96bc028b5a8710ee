// PostgREST query grammar -> a validated, typed, engine-free structure. No SQL here: the filter
// becomes a policy expression (filter-to-policy.ts), which the engine's policy compiler compiles.
//
// Decisions (observable behaviour):
// - Every query key other than select, order, limit, offset, on_conflict, columns, and, or, not.and,
//   not.or is a column filter; a key that is not a column is 400 unknown_column. A column named like a
//   reserved key (e.g. `and`) can be filtered only inside a logic tree.
// - Filters: every filter's syntax (400 invalid_filter) is checked before columns (400 unknown_column)
//   and values (422 invalid_value). Top-level values are raw (quotes, commas, parens are literal); only `in` lists and logic-tree values honour "double quotes" with
//   backslash escapes. `in.()` is the empty list (matches nothing).
// - Syntax (400 invalid_filter) is what needs no schema: operators, `in` lists, logic trees, and the
//   `is` operand, a keyword: null | not_null | true | false | unknown, case-insensitive (`is.maybe`:
//   400, as PostgREST). Whether a well-formed value fits the column is 422 invalid_value naming the
//   column: `eq.abc` on an integer, invalid JSON on a json column, `is.true` on a non-boolean column,
//   like/ilike on a non-text column.
// - like / ilike patterns longer than LIKE_PATTERN_MAX_CHARS (256) characters (code points, after
//   URL decoding and unquoting) are 400 pattern_too_long { param, column, limit }, checked with the
//   syntax, so before any query runs, at the top level and inside logic trees.
// - Booleans accept true/false/t/f/1/0 (case-insensitive). Integers: decimal digits, safe integers.
//   Numbers: finite decimals with optional exponent (no NaN/Infinity). Numeric, boolean, date and
//   timestamp values may carry surrounding whitespace; text values are exact.
// - Timestamps: ISO-8601 date or date-time, offset optional (none = UTC), years 0001-9999, normalised
//   to YYYY-MM-DDTHH:MM:SS.sssZ (sub-millisecond digits truncated). Dates: exactly YYYY-MM-DD.
// - json columns: eq / neq / is only; the value must be valid JSON text and is passed through as-is.
// - like / ilike: text columns only; `*` becomes `%`. NUL characters in any value: 422.
// - select: `*` anywhere means all columns (null) unless aliased extras are present, then `*` expands
//   to every column in table order followed by the extras. Aliases are identifiers. Duplicate output
//   names, casts, embeds, JSON paths: 400 invalid_select.
// - Repeated single-valued params (select, limit, offset, on_conflict, columns): 400; `order` may repeat
//   (items are concatenated); filters may repeat (ANDed).
// - `columns` accepts double-quoted names (postgrest-js sends `columns="a","b"`); `on_conflict`,
//   `select`, `order` and filters do not unquote (a quoted name is unknown_column).
// - Bounds: any key or value over 8 KiB (UTF-8), more than 1000 params, 200 conditions in total,
//   100 conditions or depth 16 in one logic param, 1000 `in` items, 500 select or 100 order items:
//   400 query_too_complex.
// - Range header: malformed is ignored; last < first or a bound beyond 2^53-1 is 416.
import { invalidParam, invalidRange, invalidSelect, tooComplex, unknownColumn } from './errors.ts';
import { type Filter, type FilterContext, type RawFilter, LOGIC_KEYS, resolveFilter, scanColumnFilter, scanLogicFilter } from './filter-parser.ts';
import { type OrderItem, parseOrder } from './order-parser.ts';
import { parseNonNegativeInt } from './range.ts';
import { type SelectItem, parseSelect } from './select-parser.ts';
import type { ColumnInfo } from './values.ts';

export { RestQueryError } from './errors.ts';
export type { ColumnType, ColumnInfo, FilterOp, IsValue, Value } from './values.ts';
export type { Filter } from './filter-parser.ts';
export { filterToPolicy } from './filter-to-policy.ts';
export type { SelectItem } from './select-parser.ts';
export type { OrderItem } from './order-parser.ts';
export { parsePrefer, type Prefer } from './prefer.ts';
export { resolveRange, contentRange } from './range.ts';
export { MAX_CONDITIONS, MAX_DEPTH, MAX_IN_ITEMS, MAX_TREE_CONDITIONS } from './filter-parser.ts';

export interface ParsedQuery {
  /** All column filters and and=/or= params ANDed together; null when there are none. */
  filter: Filter | null;
  /** null = `*`. */
  select: SelectItem[] | null;
  order: OrderItem[];
  limit: number | null;
  offset: number;
  onConflict: string[] | null;
  columns: string[] | null;
}

export const MAX_PARAM_BYTES = 8 * 1024;
export const MAX_PARAMS = 1000;

const SINGLE = new Set(['select', 'limit', 'offset', 'on_conflict', 'columns']);

function byteLength(s: string): number {
  return s.length > MAX_PARAM_BYTES ? MAX_PARAM_BYTES + 1 : Buffer.byteLength(s, 'utf8');
}

/** `a,b` -> names, each a column; duplicates collapse. `unquote`: also accept `"a"`. */
function parseNameList(param: 'on_conflict' | 'columns', raw: string, columns: ReadonlyMap<string, ColumnInfo>, unquote: boolean): string[] {
  const out: string[] = [];
  const parts = raw.split(',');
  if (parts.length > columns.size + 100) throw tooComplex(param, 'too_many_names', columns.size + 100);
  for (const part of parts) {
    let name = part.trim();
    if (unquote && name.length >= 2 && name.startsWith('"') && name.endsWith('"')) name = name.slice(1, -1);
    if (name === '') throw invalidParam(param, raw, 'empty column name');
    if (!columns.has(name)) throw unknownColumn(name);
    if (!out.includes(name)) out.push(name);
  }
  return out;
}

export function parseQuery(params: URLSearchParams, columns: ColumnInfo[]): ParsedQuery {
  const byName = new Map(columns.map((c) => [c.name, c] as const));
  const ctx: FilterContext = { columns: byName, conditions: 0 };
  const raw: RawFilter[] = [];
  const single = new Map<string, string>();
  const orders: string[] = [];
  let count = 0;
  for (const [key, value] of params) {
    if (++count > MAX_PARAMS) throw tooComplex('', 'too_many_parameters', MAX_PARAMS);
    if (byteLength(key) > MAX_PARAM_BYTES || byteLength(value) > MAX_PARAM_BYTES) {
      throw tooComplex(key, 'parameter_too_long', MAX_PARAM_BYTES);
    }
    if (SINGLE.has(key)) {
      if (single.has(key)) {
        const reason = 'given more than once';
        if (key === 'select') throw invalidSelect(value, reason);
        if (key === 'limit' || key === 'offset') throw invalidRange(key, value, reason);
        throw invalidParam(key, value, reason);
      }
      single.set(key, value);
    } else if (key === 'order') {
      orders.push(value);
    } else if (LOGIC_KEYS.has(key)) {
      raw.push(scanLogicFilter(key, value, ctx));
    } else {
      raw.push(scanColumnFilter(key, value, ctx));
    }
  }

  // Syntax of every filter first (schema-blind, as PostgREST), then columns and values.
  const filters: Filter[] = raw.map((f) => resolveFilter(f, ctx));
  const order: OrderItem[] = [];
  for (const raw of orders) {
    order.push(...parseOrder(raw, byName));
    if (order.length > 100) throw tooComplex('order', 'too_many_order_items', 100);
  }
  const selectRaw = single.get('select');
  const limitRaw = single.get('limit');
  const offsetRaw = single.get('offset');
  const onConflictRaw = single.get('on_conflict');
  const columnsRaw = single.get('columns');
  return {
    filter: filters.length === 0 ? null : filters.length === 1 ? filters[0]! : { kind: 'and', negated: false, items: filters },
    select: selectRaw === undefined ? null : parseSelect(selectRaw, columns),
    order,
    limit: limitRaw === undefined ? null : parseNonNegativeInt('limit', limitRaw),
    offset: offsetRaw === undefined ? 0 : parseNonNegativeInt('offset', offsetRaw),
    onConflict: onConflictRaw === undefined ? null : parseNameList('on_conflict', onConflictRaw, byName, false),
    columns: columnsRaw === undefined ? null : parseNameList('columns', columnsRaw, byName, true),
  };
}
