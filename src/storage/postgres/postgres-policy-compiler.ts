// PostgreSQL flavour of the policy compiler. Every parameter carries an explicit cast; text
// ordering uses COLLATE "C" (code point order, as SQLite's BINARY); case mapping uses ICU's root
// locale so that it does not depend on the database's locale; calendar arithmetic is done on UTC
// wall-clock time so it does not depend on the session's TimeZone.
import { INTERVAL_LIMITS as LIM, PolicyCompiler, type Frag, type ParamType, type TemplateKey } from '../../policy-language/compiler.js';
import type { ValueType } from '../../policy-language/ast.js';
import { jsonPathText, type JsonPathStep } from '../../policy-language/literals.js';
import { LIKE_PATTERN_MAX_CHARS } from '../../lib/like-limits.js';
import { CONTAINS_MAX_PRODUCT, ContainsTooComplex } from '../../policy-language/json-value.js';
import { SEARCH_MAX_PRODUCT, SearchTooLarge } from '../../policy-language/call-bounds.js';
import { assertSql } from './postgres-db.js';

const PG_TYPES: Record<ValueType, string> = {
  text: 'text', integer: 'bigint', number: 'double precision', boolean: 'boolean',
  timestamp: 'timestamptz', date: 'date', json: 'jsonb', null: 'text', interval: 'text',
};
// bigint -> integer for substr/left/right, clamped (NULL stays NULL)
const INT = (x: string) => `CAST(CASE WHEN ${x} > 2147483647 THEN 2147483647 WHEN ${x} < -2147483647 THEN -2147483647 ELSE ${x} END AS integer)`;
// numeric -> bigint, NULL outside the 64-bit range (LEAST/GREATEST skip NULL, NULLIF restores it)
const FIT = (x: string) => `CAST(NULLIF(NULLIF(LEAST(GREATEST(${x}, -9223372036854775809), 9223372036854775808), 9223372036854775808), -9223372036854775809) AS bigint)`;
// numeric -> double precision, NULL where it would round to ±Infinity (x has at most 16 significant digits)
const FITF = (x: string) => `CASE WHEN abs(${x}) < 1.7976931348623158e308 THEN CAST(${x} AS double precision) END`;
const D = (x: string) => `double precision '${x}'`;
const [DBL_MIN, P1022] = [D(String(2 ** -1022)), D(String(2 ** 1022))];
// x / 4, exactly (NULL for tiny x, which the callers never reach: the guard depends on x alone)
const Q = (x: string) => `(CASE WHEN abs(${x}) >= 1e-300 THEN ${x} * 0.25 END)`;
// $0 op $1 for doubles, $2 = |$0 op $1| estimated in numeric: below DBL_MIN -> 0, overflow -> NULL
const MULDIV = (op: string) =>
  `CASE WHEN $2 < 1e-309 THEN 0 WHEN $2 < 1e-307 THEN CASE WHEN abs($0 ${op} $1) < ${DBL_MIN} THEN 0 ELSE $0 ${op} $1 END ` +
  `WHEN $2 < 1e300 THEN $0 ${op} $1 WHEN $2 < 4e308 THEN CASE WHEN abs(${Q('$0')} ${op} $1) < ${P1022} THEN $0 ${op} $1 END END`;
// date arithmetic: the amount is bounded first (a guard on $1 alone), then the result is range-checked
// (%K% = seconds, days or months per unit; N = the amount in those, bigint even when $1 is an integer)
const BOUND = (lim: number, sql: string) => `CASE WHEN CAST($1 AS numeric) * %K% BETWEEN -${lim} AND ${lim} THEN ${sql} END`;
const N = '($1 * CAST(%K% AS bigint))';
const MONTH_NO = (x: string) => `(extract(year from ${x}) * 12 + extract(month from ${x}) + ${N})`;
// Guards must be IMMUTABLE: PostgreSQL folds constant subexpressions of a CASE branch at plan time
// unless the WHEN before it folded to false, so a STABLE guard (extract from timestamptz is STABLE)
// lets an out-of-range constant reach the arithmetic it was meant to protect. Hence epoch and
// calendar fields are always read from the UTC wall-clock timestamp (IMMUTABLE).
// A call past its bound (policy-language/call-bounds.ts) fails before it runs: bp_assert is
// volatile, so never evaluated ahead of its branch, and raises the bound's code
const FAIL = (code: string) => assertSql('false', code);
/** searching `needle` in `text` is past SEARCH_MAX_PRODUCT (lengths in characters) */
const SEARCH = (needle: string, text: string) => `CAST(length(${text}) AS bigint) * length(${needle}) > ${SEARCH_MAX_PRODUCT}`;
// `@>` only where the documents' text lengths bound its work (json-value.ts, CONTAINS_MAX_PRODUCT)
const CONTAINS = `CASE WHEN CAST(length(CAST($0 AS text)) AS bigint) * length(CAST($1 AS text)) > ${CONTAINS_MAX_PRODUCT} THEN ${FAIL(ContainsTooComplex.CODE)} = 0 ELSE $0 @> $1 END`;
const UTC = (x: string) => `(${x} AT TIME ZONE 'UTC')`;
const MONTHS = `((extract(year from ${UTC('$1')}) - extract(year from ${UTC('$0')})) * 12 + extract(month from ${UTC('$1')}) - extract(month from ${UTC('$0')}))`;
const REST = (x: string) => `(${UTC(x)} - date_trunc('month', ${UTC(x)}))`;
const MONTHDIFF = `(${MONTHS} + CASE WHEN ${MONTHS} > 0 AND ${REST('$1')} < ${REST('$0')} THEN -1 WHEN ${MONTHS} < 0 AND ${REST('$1')} > ${REST('$0')} THEN 1 ELSE 0 END)`;
const ICU = (x: string) => `(${x} COLLATE "und-x-icu")`;
// a pattern ending in a lone escape character: the escape matches itself (as in SQLite's bp_like)
const CLOSE_ESCAPE = (x: string) => `regexp_replace(${x}, '^((\\\\.|[^\\\\])*)\\\\$', '\\1\\\\\\\\')`;
// a computed pattern beyond the shared bound matches nothing (NULL), as SQLite's bp_like
const LIKE = (value: string, pattern: string) =>
  `CASE WHEN length($1) <= ${LIKE_PATTERN_MAX_CHARS} THEN ((${value} COLLATE "C") LIKE (${CLOSE_ESCAPE(pattern)} COLLATE "C") ESCAPE '\\') END`;

export class PostgresPolicyCompiler extends PolicyCompiler {
  // PostgreSQL pulls a plain FROM sub-select up into its parent; OFFSET 0 is its documented fence
  protected override readonly bindFence = ' OFFSET 0';
  protected readonly templates: Record<TemplateKey, string> = {
    lower: `(lower(${ICU('$0')}) COLLATE "C")`,
    upper: `(upper(${ICU('$0')}) COLLATE "C")`,
    like: LIKE(`lower(${ICU('$0')})`, `lower(${ICU('$1')})`),
    like_exact: LIKE('$0', '$1'),
    div: '(CAST($0 AS double precision) / NULLIF($1, 0))',
    int_arith: FIT('(CAST($0 AS numeric) %OP% $1)'),
    int_neg: FIT('(- CAST($0 AS numeric))'),
    int_abs: FIT('abs(CAST($0 AS numeric))'),
    to_num: 'CAST($0 AS double precision)',
    num_add: `CASE WHEN abs($0) < 1 OR abs($1) < 1 THEN $0 %OP% $1 WHEN abs(${Q('$0')} %OP% ${Q('$1')}) < ${P1022} THEN $0 %OP% $1 END`,
    num_est: 'abs(CAST($0 AS numeric) %OP% CAST($1 AS numeric))',
    num_mul: MULDIV('*'),
    num_div: MULDIV('/'),
    mod: '($0 % NULLIF($1, 0))',
    substring2: `CASE WHEN $1 > 0 THEN substr($0, ${INT('$1')}) WHEN $1 < 0 THEN CASE WHEN $1 < -length($0) THEN left($0, 0) ELSE right($0, -${INT('$1')}) END WHEN $1 = 0 THEN left($0, 0) END`,
    substring3: `CASE WHEN $2 < 1 THEN left($0, 0) ELSE left(CASE WHEN $1 > 0 THEN substr($0, ${INT('$1')}) WHEN $1 < 0 THEN CASE WHEN $1 < -length($0) THEN left($0, 0) ELSE right($0, -${INT('$1')}) END WHEN $1 = 0 THEN left($0, 0) END, ${INT('$2')}) END`,
    left: `CASE WHEN $1 < 1 THEN left($0, 0) ELSE left($0, ${INT('$1')}) END`,
    right: `CASE WHEN $1 < 1 THEN right($0, 0) ELSE right($0, ${INT('$1')}) END`,
    locate2: `CASE WHEN ${SEARCH('$0', '$1')} THEN ${FAIL(SearchTooLarge.CODE)} ELSE strpos($1, $0) END`,
    locate3: `CASE WHEN $0 IS NULL OR $1 IS NULL OR $2 IS NULL THEN NULL WHEN ${SEARCH('$0', '$1')} THEN ${FAIL(SearchTooLarge.CODE)} WHEN $2 < 1 OR $2 > length($1) + 1 THEN 0 WHEN strpos(substr($1, ${INT('$2')}), $0) = 0 THEN 0 ELSE strpos(substr($1, ${INT('$2')}), $0) + $2 - 1 END`,
    replace: `CASE WHEN ${SEARCH('$1', '$0')} THEN CAST(${FAIL(SearchTooLarge.CODE)} AS text) ELSE replace($0, $1, $2) END`,
    find_in_set: `CASE WHEN $0 IS NULL OR $1 IS NULL THEN NULL ELSE COALESCE(array_position(string_to_array($1, ','), $0), 0) END`,
    round_int: FIT(`round(CAST($0 AS numeric), ${INT('$1')})`),
    round_num1: FITF('round(CAST($0 AS numeric))'),
    round_num2: FITF(`round(CAST($0 AS numeric), ${INT('$1')})`),
    date_of: `CAST(${UTC('$0')} AS date)`,
    date_to_ts: `(CAST($0 AS timestamp) AT TIME ZONE 'UTC')`,
    date_add_date: BOUND(LIM.days, `CASE WHEN ($0 - DATE '0001-01-01') + ${N} BETWEEN 0 AND 3652058 THEN $0 + CAST(${N} AS integer) END`),
    date_add_ts: BOUND(LIM.seconds, `CASE WHEN extract(epoch from ${UTC('$0')}) + ${N} BETWEEN -62135596800 AND 253402300799.999999 THEN ((${UTC('$0')} + make_interval(secs => ${N})) AT TIME ZONE 'UTC') END`),
    date_add_date_months: BOUND(LIM.months, `CASE WHEN ${MONTH_NO('$0')} BETWEEN 13 AND 120000 THEN CAST(($0 + make_interval(months => CAST(${N} AS integer))) AS date) END`),
    date_add_ts_months: BOUND(LIM.months, `CASE WHEN ${MONTH_NO(UTC('$0'))} BETWEEN 13 AND 120000 THEN ((${UTC('$0')} + make_interval(months => CAST(${N} AS integer))) AT TIME ZONE 'UTC') END`),
    datediff: '($0 - $1)',
    tsdiff_fixed: 'CAST(trunc((extract(epoch from $1) - extract(epoch from $0)) / %UNIT%) AS bigint)',
    tsdiff_month: `CAST(${MONTHDIFF} AS bigint)`,
    tsdiff_year: `CAST(trunc(${MONTHDIFF} / 12) AS bigint)`,
    json_unquote: "($0 #>> '{}')",
    json_length: "CASE WHEN jsonb_typeof($0) = 'array' THEN jsonb_array_length($0) WHEN jsonb_typeof($0) = 'object' THEN (SELECT count(*) FROM jsonb_object_keys($0)) WHEN $0 IS NOT NULL THEN 1 END",
    json_contains: CONTAINS,
    to_json: 'to_jsonb($0)',
  };

  protected asDouble(f: Frag): Frag {
    return f; // PostgreSQL compares bigint with double precision as double already
  }

  protected param(value: unknown, type: ParamType): Frag {
    let v = value;
    if (typeof v === 'bigint') v = Number.isSafeInteger(Number(v)) ? Number(v) : v.toString();
    return { sql: `?::${PG_TYPES[type]}`, params: [v], simple: true };
  }

  protected collateText(f: Frag): Frag {
    return { sql: `(${f.sql} COLLATE "C")`, params: f.params };
  }

  protected nullLiteral(type: ValueType): string {
    return `NULL::${PG_TYPES[type]}`;
  }

  protected jsonExtract(doc: Frag, steps: JsonPathStep[]): Frag {
    if (steps.length === 0) return doc;
    // strict mode + silent: a step that does not fit (index on a non-array, key on a non-object) is NULL
    const path = this.param(`strict ${jsonPathText(steps)}`, 'text');
    return this.tpl("jsonb_path_query_first($0, CAST($1 AS jsonpath), '{}', true)", [doc, path]);
  }

  protected greatestLeast(fn: 'GREATEST' | 'LEAST', args: Frag[], type: ValueType): Frag {
    // PostgreSQL's GREATEST/LEAST skip NULLs; the reference semantics (MySQL) return NULL
    const refs = args.map((_, i) => (type === 'text' ? `($${i} COLLATE "C")` : `$${i}`));
    const anyNull = args.map((_, i) => `$${i} IS NULL`).join(' OR ');
    return this.tpl(`CASE WHEN ${anyNull} THEN NULL ELSE ${fn}(${refs.join(', ')}) END`, args);
  }
}
