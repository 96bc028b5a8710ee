// Dialect-free compiler: walks a validated TypedExpr and produces a boolean SQL fragment plus
// bound parameters. Engines differ only through the hooks at the bottom (parameters, collation,
// NULL typing, JSON paths) and a table of SQL templates for the functions whose semantics need
// engine-specific SQL. User text never reaches the SQL: identifiers go through `columnRef`,
// values become parameters, and keywords/operators come from this file's own vocabulary.
import { AUTH_FIELDS, type IntervalUnit, type TypedExpr, type ValueType } from './ast.js';
import { MAX_STRING_BYTES } from './errors.js';
import { parseJsonPath, type JsonPathStep } from './literals.js';

export interface AuthContext {
  id: number;
  email: string;
  role: string | null;
  /** whether the address was proven through a link sent to it: `email` alone is only a claim */
  email_verified: boolean;
}
export interface CompileContext {
  auth: AuthContext | null;
  now: Date;
  columnRef?: (name: string) => string;
}
export interface CompiledSql {
  sql: string;
  params: unknown[];
}

/** A compiled piece: SQL text and its parameters in textual order. `simple` pieces may be repeated. */
export interface Frag {
  sql: string;
  params: unknown[];
  simple?: boolean;
}

export type ParamType = Exclude<ValueType, 'interval' | 'null'>;

/**
 * Templates for constructs whose SQL differs per engine. `$0`, `$1`... are the arguments; an
 * argument used more than once is evaluated once (see `tpl`). `%UNIT%` is replaced by the unit,
 * `%OP%` by the operator, `%K%` by the interval unit's multiplier (seconds, days or months).
 *
 * Out-of-range rule (both engines): a result outside its type's range is NULL, never an error:
 * integer results outside the signed 64-bit range (int_*), number results that overflow to
 * ±Infinity (num_*; a product or quotient below the smallest normal double is 0), dates and
 * timestamps outside years 0001-9999 (date_add_*), ROUND results that do not fit the type.
 * PostgreSQL folds constant sub-expressions while planning, so a guard that prevents an error must
 * depend on nothing but the guarded expression's own inputs.
 */
export type TemplateKey =
  | 'lower' | 'upper' | 'like' | 'like_exact' | 'div' | 'mod'
  | 'substring2' | 'substring3' | 'left' | 'right' | 'locate2' | 'locate3' | 'replace' | 'find_in_set'
  | 'int_arith' | 'int_neg' | 'int_abs' | 'to_num' | 'num_add' | 'num_est' | 'num_mul' | 'num_div'
  | 'round_int' | 'round_num1' | 'round_num2'
  | 'date_of' | 'date_to_ts' | 'date_add_date' | 'date_add_ts' | 'date_add_date_months' | 'date_add_ts_months' | 'datediff'
  | 'tsdiff_fixed' | 'tsdiff_month' | 'tsdiff_year'
  | 'json_unquote' | 'json_length' | 'json_contains' | 'to_json';

export const UNIT_SECONDS: Record<IntervalUnit, number> = {
  SECOND: 1, MINUTE: 60, HOUR: 3600, DAY: 86400, WEEK: 604800, MONTH: 0, YEAR: 0,
};
/** interval amounts are bounded before any engine computes with them: beyond these the result is surely outside 0001-9999 */
export const INTERVAL_LIMITS = { seconds: 316224000000, days: 3660000, months: 120000 };

const bytes = (x: string) => `CAST(octet_length(${x}) AS bigint)`;
/**
 * REPLACE(s, f, t), NULL when the result would exceed MAX_STRING_BYTES. Its size is known before it
 * is built: |s| + n * (|t| - |f|) with n * |f| = |s| - |replace(s, f, '')| (removing only shrinks),
 * compared multiplied by |f| so that f = '' (s unchanged, on both engines) needs no division.
 */
const REPLACE = (replace: string) => {
  const removed = replace.replaceAll('$2', "''");
  return `CASE WHEN ${bytes('$0')} * octet_length($1) + (${bytes('$0')} - octet_length(${removed})) * (octet_length($2) - octet_length($1)) <= ${MAX_STRING_BYTES} * ${bytes('$1')} THEN ${replace} END`;
};

export abstract class PolicyCompiler {
  protected abstract readonly templates: Record<TemplateKey, string>;
  private ctx!: CompileContext;

  compile(expr: TypedExpr, ctx: CompileContext): CompiledSql {
    this.ctx = ctx;
    const f = this.visit(expr);
    return { sql: f.sql, params: f.params };
  }

  // ---- hooks
  /** a bound parameter of the given type */
  protected abstract param(value: unknown, type: ParamType): Frag;
  /** forces binary (code point) ordering on a text operand */
  /** An integer operand read as a double (PostgreSQL promotes implicitly; SQLite compares exactly). */
  protected asDouble(f: Frag): Frag {
    return this.tpl('CAST($0 AS REAL)', [f]);
  }

  /** Operands of one comparison: when integers meet numbers, every integer is read as a double. */
  private peers(nodes: TypedExpr[]): Frag[] {
    const frags = nodes.map((n) => this.visit(n));
    const mixed = nodes.some((n) => n.type === 'number') && nodes.some((n) => n.type === 'integer');
    return mixed ? frags.map((f, i) => (nodes[i]!.type === 'integer' ? this.asDouble(f) : f)) : frags;
  }

  /**
   * Appended to the sub-select that binds a repeated argument once. It must stop the planner from
   * inlining the bound expression into every use: inlining makes planning and evaluation
   * exponential in the nesting depth even though the SQL text is linear.
   */
  protected readonly bindFence: string = '';

  protected collateText(f: Frag): Frag {
    return f;
  }
  protected nullLiteral(_type: ValueType): string {
    return 'NULL';
  }
  /** how a unit is spelled inside the date_add templates */
  protected unitWord(unit: IntervalUnit): string {
    return unit;
  }
  protected abstract jsonExtract(doc: Frag, steps: JsonPathStep[]): Frag;
  /** GREATEST/LEAST: NULL if any argument is NULL */
  protected abstract greatestLeast(fn: 'GREATEST' | 'LEAST', args: Frag[], type: ValueType): Frag;

  // ---- helpers for subclasses
  protected quoteIdent(name: string): string {
    return `"${name.replace(/"/g, '""')}"`;
  }

  /** fills a template; arguments used more than once and not simple are bound once in a sub-select */
  protected tpl(template: string, args: Frag[], vars?: string | Record<string, string>): Frag {
    if (typeof vars === 'string') vars = { UNIT: vars };
    for (const [k, v] of Object.entries(vars ?? {})) template = template.replace(new RegExp(`%${k}%`, 'g'), v);
    const pieces = template.split(/\$(\d+)/);
    const uses = new Map<number, number>();
    for (let k = 1; k < pieces.length; k += 2) uses.set(Number(pieces[k]), (uses.get(Number(pieces[k])) ?? 0) + 1);
    const bound = [...uses].filter(([i, n]) => n > 1 && !args[i]!.simple).map(([i]) => i);
    let sql = '';
    const params: unknown[] = [];
    for (let k = 0; k < pieces.length; k++) {
      if (k % 2 === 0) {
        sql += pieces[k];
        continue;
      }
      const i = Number(pieces[k]);
      const slot = bound.indexOf(i);
      if (slot >= 0) sql += `"BPL"."V${slot}"`;
      else {
        sql += args[i]!.sql;
        params.push(...args[i]!.params);
      }
    }
    if (bound.length === 0) return { sql, params };
    const cols = bound.map((i, slot) => `${args[i]!.sql} AS "V${slot}"`).join(', ');
    return {
      sql: `(SELECT ${sql} FROM (SELECT ${cols}${this.bindFence}) AS "BPL")`,
      params: [...params, ...bound.flatMap((i) => args[i]!.params)],
    };
  }

  protected join(parts: Frag[], sep: string, open = '(', close = ')'): Frag {
    return { sql: open + parts.map((p) => p.sql).join(sep) + close, params: parts.flatMap((p) => p.params) };
  }

  // ---- the walk
  protected visit(e: TypedExpr): Frag {
    switch (e.kind) {
      case 'literal':
        if (e.valueType === 'null' || e.value === null) return { sql: this.nullLiteral(e.type), params: [], simple: true };
        return this.param(e.value, e.type as ParamType);
      case 'column': {
        const sql = this.ctx.columnRef ? this.ctx.columnRef(e.name) : this.quoteIdent(e.name);
        return { sql, params: [], simple: true };
      }
      case 'auth': {
        const a = this.ctx.auth;
        const value = a === null ? null : e.field === 'id' ? BigInt(a.id) : a[e.field];
        return this.param(value, AUTH_FIELDS[e.field]);
      }
      case 'unary': {
        const o = this.visit(e.operand);
        if (e.op === '+') return o;
        if (e.op === '-' && e.type === 'integer') return this.tpl(this.templates.int_neg, [o]);
        return this.tpl(e.op === 'NOT' ? '(NOT $0)' : '(- $0)', [o]);
      }
      case 'arith':
        return this.arith(e);
      case 'compare': {
        let args = this.peers([e.left, e.right]);
        if (e.op !== '=' && e.op !== '<>' && e.left.type === 'text') args = args.map((a) => this.collateText(a));
        return this.tpl(`($0 ${e.op} $1)`, args);
      }
      case 'logical':
        return this.balanced(e.operands.map((o) => this.visit(o)), ` ${e.op} `);
      case 'is':
        return this.tpl(`($0 IS ${e.negated ? 'NOT ' : ''}${e.test})`, [this.visit(e.operand)]);
      case 'in': {
        // the REST `in.()`: no value is in the empty list, NULL included (PostgreSQL has no `IN ()`)
        if (e.list.length === 0) return { sql: e.negated ? '(1=1)' : '(1=0)', params: [], simple: true };
        const [operand, ...items] = this.peers([e.operand, ...e.list]);
        return this.join([operand!, { sql: e.negated ? 'NOT IN' : 'IN', params: [] }, this.join(items, ', ')], ' ');
      }
      case 'between': {
        let args = this.peers([e.operand, e.low, e.high]);
        if (e.operand.type === 'text') args = args.map((a) => this.collateText(a));
        return this.tpl(`($0 ${e.negated ? 'NOT BETWEEN' : 'BETWEEN'} $1 AND $2)`, args);
      }
      case 'like': {
        const f = this.tpl(this.templates[e.caseSensitive ? 'like_exact' : 'like'], [this.visit(e.operand), this.visit(e.pattern)]);
        return e.negated ? this.tpl('(NOT $0)', [f]) : f;
      }
      case 'case': {
        const parts: Frag[] = [{ sql: 'CASE', params: [] }];
        if (e.operand) parts.push(this.visit(e.operand));
        for (const w of e.whens) parts.push({ sql: 'WHEN', params: [] }, this.visit(w.when), { sql: 'THEN', params: [] }, this.visit(w.then));
        if (e.else) parts.push({ sql: 'ELSE', params: [] }, this.visit(e.else));
        parts.push({ sql: 'END', params: [] });
        return this.join(parts, ' ', '', '');
      }
      case 'cast': {
        const o = this.visit(e.operand);
        if (e.to === 'text') return this.tpl('CAST($0 AS TEXT)', [o]);
        if (e.to === 'timestamp') return this.tpl(this.templates.date_to_ts, [o]);
        if (e.to === 'date') return this.tpl(this.templates.date_of, [o]);
        return this.tpl(this.templates.to_json, [o]);
      }
      case 'call':
        return this.call(e);
      case 'interval':
      case 'unit':
        throw new Error(`internal: ${e.kind} compiled outside its construct`);
    }
  }

  private arith(e: TypedExpr & { kind: 'arith' }): Frag {
    const t = this.templates;
    const ints = e.left.type !== 'number' && e.right.type !== 'number';
    if (e.op === '%') return this.tpl(t.mod, [this.visit(e.left), this.visit(e.right)]);
    if (ints && e.op === '/') return this.tpl(t.div, [this.visit(e.left), this.visit(e.right)]);
    if (ints) return this.tpl(t.int_arith, [this.visit(e.left), this.visit(e.right)], { OP: e.op });
    // number arithmetic: integer operands are converted first
    const [a, b] = [e.left, e.right].map((x) => {
      const f = this.visit(x);
      return x.type === 'number' ? f : { ...this.tpl(t.to_num, [f]), simple: f.simple };
    }) as [Frag, Frag];
    if (e.op === '+' || e.op === '-') return this.tpl(t.num_add, [a, b], { OP: e.op });
    const d = e.op === '/' ? { ...this.tpl('NULLIF($0, 0)', [b]), simple: b.simple } : b;
    // the magnitude estimate $2 is spelled out over $0 and $1 so that each operand is bound once:
    // passing it as a third argument would copy both operands and double the SQL at every level
    const est = `(${t.num_est.replace(/%OP%/g, e.op)})`;
    return this.tpl((e.op === '*' ? t.num_mul : t.num_div).replace(/\$2/g, est), [a, d]);
  }

  /** a || b || ..., NULL beyond MAX_STRING_BYTES: the sizes are added up before anything is copied */
  private concat(parts: Frag[]): Frag {
    const refs = parts.map((_, i) => `$${i}`);
    return this.tpl(`CASE WHEN ${refs.map(bytes).join(' + ')} <= ${MAX_STRING_BYTES} THEN (${refs.join(' || ')}) END`, parts);
  }

  /** NULL beyond MAX_STRING_BYTES, for results whose size is only known once built (case mapping grows up to 3x) */
  private boundString(f: Frag): Frag {
    return this.tpl(`CASE WHEN octet_length($0) <= ${MAX_STRING_BYTES} THEN $0 END`, [f]);
  }

  /** AND/OR lists are emitted as a balanced tree so engines' expression-depth limits are not hit */
  private balanced(parts: Frag[], op: string): Frag {
    if (parts.length <= 4) return this.join(parts, op);
    const mid = Math.ceil(parts.length / 2);
    return this.join([this.balanced(parts.slice(0, mid), op), this.balanced(parts.slice(mid), op)], op);
  }

  private call(e: TypedExpr & { kind: 'call' }): Frag {
    const t = this.templates;
    const args = () => e.args.map((a) => this.visit(a));
    const a0type = e.args[0]?.type;
    switch (e.name) {
      case 'LOWER': return this.boundString(this.tpl(t.lower, args()));
      case 'UPPER': return this.boundString(this.tpl(t.upper, args()));
      case 'TRIM': return this.tpl('trim($0)', args());
      case 'LENGTH': return this.tpl('length($0)', args());
      case 'CONCAT': return e.args.length === 1 ? args()[0]! : this.concat(args());
      case 'SUBSTRING': return this.tpl(e.args.length === 3 ? t.substring3 : t.substring2, args());
      case 'LEFT': return this.tpl(t.left, args());
      case 'RIGHT': return this.tpl(t.right, args());
      case 'LOCATE': return this.tpl(e.args.length === 3 ? t.locate3 : t.locate2, args());
      case 'REPLACE': return this.tpl(REPLACE(t.replace), args());
      case 'FIND_IN_SET': return this.tpl(t.find_in_set, args());
      case 'COALESCE': return this.join(args(), ', ', 'COALESCE(');
      case 'NULLIF': return this.tpl('NULLIF($0, $1)', args());
      case 'IF': return this.tpl('CASE WHEN $0 THEN $1 ELSE $2 END', args());
      case 'GREATEST':
      case 'LEAST': return this.greatestLeast(e.name, args(), e.type);
      case 'ABS': return this.tpl(a0type === 'integer' ? t.int_abs : 'abs($0)', args());
      case 'FLOOR': return a0type === 'integer' ? args()[0]! : this.tpl('floor($0)', args());
      case 'CEIL': return a0type === 'integer' ? args()[0]! : this.tpl('ceil($0)', args());
      case 'ROUND':
        if (a0type === 'integer') return e.args.length === 1 ? args()[0]! : this.tpl(t.round_int, args());
        return this.tpl(e.args.length === 1 ? t.round_num1 : t.round_num2, args());
      case 'NOW': return this.param(this.ctx.now.toISOString(), 'timestamp');
      case 'CURDATE': return this.param(this.ctx.now.toISOString().slice(0, 10), 'date');
      case 'DATE': return a0type === 'date' ? args()[0]! : this.tpl(t.date_of, args());
      case 'DATE_ADD': {
        const iv = e.args[1] as TypedExpr & { kind: 'interval' };
        const base = this.visit(e.args[0]!);
        const months = iv.unit === 'MONTH' || iv.unit === 'YEAR';
        const k = months ? (iv.unit === 'YEAR' ? 12 : 1) : UNIT_SECONDS[iv.unit] / (e.type === 'date' ? 86400 : 1);
        const key = e.type === 'date' ? (months ? 'date_add_date_months' : 'date_add_date') : months ? 'date_add_ts_months' : 'date_add_ts';
        return this.tpl(t[key], [base, this.visit(iv.value)], { UNIT: this.unitWord(iv.unit), K: String(k) });
      }
      case 'DATEDIFF': return this.tpl(t.datediff, args());
      case 'TIMESTAMPDIFF': {
        const unit = (e.args[0] as { unit: IntervalUnit }).unit;
        const ab = e.args.slice(1).map((a) => this.visit(a));
        if (unit === 'MONTH') return this.tpl(t.tsdiff_month, ab);
        if (unit === 'YEAR') return this.tpl(t.tsdiff_year, ab);
        return this.tpl(t.tsdiff_fixed, ab, String(UNIT_SECONDS[unit]));
      }
      case 'JSON_EXTRACT': {
        const path = e.args[1] as { value: string };
        return this.jsonExtract(this.visit(e.args[0]!), parseJsonPath(path.value) as JsonPathStep[]);
      }
      case 'JSON_UNQUOTE': return this.tpl(t.json_unquote, args());
      case 'JSON_LENGTH': return this.tpl(t.json_length, args());
      case 'JSON_CONTAINS': return this.tpl(t.json_contains, args());
    }
    throw new Error(`internal: no SQL for function ${e.name}`);
  }
}
