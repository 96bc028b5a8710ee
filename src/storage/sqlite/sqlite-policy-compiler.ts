// SQLite flavour of the policy compiler. Where SQLite's SQL cannot match the reference semantics
// (Unicode case mapping, MySQL string functions, calendar arithmetic, jsonb behaviour) it calls the
// deterministic bp_* functions that registerSqliteFunctions() installs on every connection.
import { PolicyCompiler, type Frag, type ParamType, type TemplateKey } from '../../policy-language/compiler.js';
import type { ValueType } from '../../policy-language/ast.js';
import { jsonPathText, type JsonPathStep } from '../../policy-language/literals.js';

export class SqlitePolicyCompiler extends PolicyCompiler {
  protected readonly templates: Record<TemplateKey, string> = {
    lower: 'bp_lower($0)',
    upper: 'bp_upper($0)',
    like: 'bp_like($0, $1)',
    like_exact: 'bp_like($0, $1, 0)', // the third argument turns case folding off
    div: '(CAST($0 AS REAL) / $1)', // SQLite yields NULL on division by zero
    mod: '($0 % $1)',
    // checked arithmetic in JS: 64-bit overflow and ±Infinity are NULL (as on PostgreSQL)
    int_arith: "bp_int('%OP%', $0, $1)",
    int_neg: "bp_int('-', 0, $0)",
    int_abs: "bp_int('abs', $0, 0)",
    to_num: '$0',
    num_add: "bp_num('%OP%', $0, $1)",
    num_est: 'NULL',
    num_mul: "bp_num('*', $0, $1)",
    num_div: "bp_num('/', $0, $1)",
    substring2: 'bp_substring($0, $1)',
    substring3: 'bp_substring($0, $1, $2)',
    left: 'bp_left($0, $1)',
    right: 'bp_right($0, $1)',
    locate2: 'bp_locate($0, $1)',
    locate3: 'bp_locate($0, $1, $2)',
    replace: 'bp_replace($0, $1, $2)',
    find_in_set: 'bp_find_in_set($0, $1)',
    round_int: 'bp_round_int($0, $1)',
    round_num1: 'bp_round($0)',
    round_num2: 'bp_round($0, $1)',
    date_of: 'substr($0, 1, 10)',
    date_to_ts: "($0 || 'T00:00:00.000Z')",
    date_add_date: "bp_date_add($0, $1, '%UNIT%')",
    date_add_ts: "bp_date_add($0, $1, '%UNIT%')",
    date_add_date_months: "bp_date_add($0, $1, '%UNIT%')",
    date_add_ts_months: "bp_date_add($0, $1, '%UNIT%')",
    datediff: 'CAST(julianday($0) - julianday($1) AS INTEGER)',
    tsdiff_fixed: "bp_timestampdiff('%UNIT%', $0, $1)",
    tsdiff_month: "bp_timestampdiff('MONTH', $0, $1)",
    tsdiff_year: "bp_timestampdiff('YEAR', $0, $1)",
    json_unquote: 'bp_json_unquote($0)',
    json_length: 'bp_json_length($0)',
    json_contains: 'bp_json_contains($0, $1)',
    // SQL NULL stays NULL (as PostgreSQL's to_jsonb), never the JSON value null; a number as its
    // shortest text, as PostgreSQL's float8 output (json_quote printed 17 digits, another value)
    to_json: 'bp_to_json($0)',
  };

  protected param(value: unknown, type: ParamType): Frag {
    let v = value;
    if (v !== null && type === 'integer') v = BigInt(v as bigint);
    if (v !== null && type === 'boolean') v = v ? 1n : 0n;
    return { sql: '?', params: [v], simple: true };
  }

  protected jsonExtract(doc: Frag, steps: JsonPathStep[]): Frag {
    // in JS rather than `->`: jsonb keeps the last of duplicate keys, SQLite the first
    return this.tpl('bp_json_extract($0, $1)', [doc, this.param(jsonPathText(steps), 'text')]);
  }

  protected greatestLeast(fn: 'GREATEST' | 'LEAST', args: Frag[], _type: ValueType): Frag {
    // SQLite's multi-argument max()/min() already return NULL when any argument is NULL
    return this.join(args, ', ', fn === 'GREATEST' ? 'max(' : 'min(');
  }
}
