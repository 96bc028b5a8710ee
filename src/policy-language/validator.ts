// Type-checks a parsed expression against a table's columns and returns the typed tree.
// Every node gets a type; conversions become explicit `cast` nodes; string literals used as
// dates/times become temporal literals; NULL literals take the type of their context.
import { AUTH_FIELDS, type ColumnType, type Expr, type IntervalUnit, type TypedExpr, type ValueType } from './ast.js';
import { PolicyError } from './errors.js';
import { LIKE_PATTERN_MAX_CHARS } from '../lib/like-limits.ts';
import { charLength } from '../lib/validate.ts';
import { parseTemporal } from './literals.js';
import { guard, parsePolicy } from './parser.js';
import { checkCall, resultType } from './validate-functions.js';

export interface ColumnInfo {
  name: string;
  type: ColumnType;
}

export function validatePolicy(text: string, columns: ColumnInfo[]): TypedExpr {
  const expr = parsePolicy(text);
  return guard(() => new Checker(text, columns).root(expr));
}

type Purpose = 'eq' | 'order' | 'value';
const NUMERIC = new Set<ValueType>(['integer', 'number']);
const TEMPORAL = new Set<ValueType>(['timestamp', 'date']);
const SUB_DAY = new Set<IntervalUnit>(['SECOND', 'MINUTE', 'HOUR']);

export class Checker {
  private readonly columns: Map<string, ColumnType>;

  constructor(
    readonly src: string,
    columns: ColumnInfo[],
  ) {
    this.columns = new Map(columns.map((c) => [c.name.toLowerCase(), c.type]));
  }

  root(e: Expr): TypedExpr {
    const t = this.check(e);
    if (t.type !== 'boolean' && t.type !== 'null') {
      throw this.err(`The expression must be a condition (true/false) but it is ${article(t.type)} value`, e);
    }
    return this.coerce(t, 'boolean', e);
  }

  /** the message always names the offending text */
  err(message: string, node: { pos: number; end: number }): PolicyError {
    const offending = this.src.slice(node.pos, node.end);
    const text = message.includes(offending) ? message : `${offending}: ${message[0]!.toLowerCase()}${message.slice(1)}`;
    return new PolicyError(text, offending, node.pos);
  }

  check(e: Expr): TypedExpr {
    const span = { pos: e.pos, end: e.end };
    switch (e.kind) {
      case 'literal': {
        const type: ValueType = e.valueType === 'string' ? 'text' : e.valueType;
        return { ...e, type } as TypedExpr;
      }
      case 'column': {
        const type = this.columns.get(e.name);
        if (!type) throw this.err(`Unknown column ${this.src.slice(e.pos, e.end)}: only the table's own columns can be used`, e);
        return { ...e, type };
      }
      case 'auth':
        return { ...e, type: AUTH_FIELDS[e.field] };
      case 'unit':
        throw this.err(`A unit (${e.unit}) can only appear after INTERVAL n or as the first argument of TIMESTAMPDIFF`, e);
      case 'interval':
        throw this.err('INTERVAL can only be added to or subtracted from a date or timestamp (or used in DATE_ADD/DATE_SUB)', e);
      case 'cast':
        throw this.err('Internal cast node in parser output', e);
      case 'unary': {
        const operand = this.check(e.operand);
        if (e.op === 'NOT') return { ...span, kind: 'unary', op: 'NOT', operand: this.bool(operand, e.operand), type: 'boolean' };
        const o = this.numeric(operand, e.operand, `${e.op === '-' ? 'Unary minus' : 'Unary plus'}`);
        return { ...span, kind: 'unary', op: e.op, operand: o, type: o.type };
      }
      case 'arith':
        return this.arith(e);
      case 'compare': {
        const [left, right] = this.unify([this.check(e.left), this.check(e.right)], [e.left, e.right], e.op === '=' || e.op === '<>' ? 'eq' : 'order', e);
        return { ...span, kind: 'compare', op: e.op, left: left!, right: right!, type: 'boolean' };
      }
      case 'logical':
        return { ...span, kind: 'logical', op: e.op, operands: e.operands.map((o) => this.bool(this.check(o), o)), type: 'boolean' };
      case 'is': {
        const operand = this.check(e.operand);
        const o = e.test === 'NULL' ? operand : this.bool(operand, e.operand);
        return { ...span, kind: 'is', operand: o, test: e.test, negated: e.negated, type: 'boolean' };
      }
      case 'in': {
        const all = this.unify([e.operand, ...e.list].map((x) => this.check(x)), [e.operand, ...e.list], 'eq', e);
        return { ...span, kind: 'in', operand: all[0]!, list: all.slice(1), negated: e.negated, type: 'boolean' };
      }
      case 'between': {
        const src = [e.operand, e.low, e.high];
        const [operand, low, high] = this.unify(src.map((x) => this.check(x)), src, 'order', e);
        return { ...span, kind: 'between', operand: operand!, low: low!, high: high!, negated: e.negated, type: 'boolean' };
      }
      case 'like':
        return this.like(e);
      case 'case':
        return this.caseExpr(e);
      case 'call':
        return checkCall(this, e);
    }
  }

  private like(e: Expr & { kind: 'like' }): TypedExpr {
    const operand = this.text(this.check(e.operand), e.operand, 'LIKE');
    const pattern = this.text(this.check(e.pattern), e.pattern, 'LIKE');
    if (e.pattern.kind === 'literal' && e.pattern.valueType === 'string' && charLength(e.pattern.value) > LIKE_PATTERN_MAX_CHARS) {
      throw this.err(`The LIKE pattern is longer than ${LIKE_PATTERN_MAX_CHARS} characters`, e.pattern);
    }
    return { pos: e.pos, end: e.end, kind: 'like', operand, pattern, negated: e.negated, caseSensitive: e.caseSensitive, type: 'boolean' };
  }

  private caseExpr(e: Expr & { kind: 'case' }): TypedExpr {
    let operand: TypedExpr | undefined;
    let whens: TypedExpr[];
    if (e.operand) {
      const src = [e.operand, ...e.whens.map((w) => w.when)];
      const all = this.unify(src.map((x) => this.check(x)), src, 'eq', e);
      operand = all[0];
      whens = all.slice(1);
    } else {
      whens = e.whens.map((w) => this.bool(this.check(w.when), w.when));
    }
    const resultSrc = [...e.whens.map((w) => w.then), ...(e.else ? [e.else] : [])];
    const results = this.unify(resultSrc.map((x) => this.check(x)), resultSrc, 'value', e);
    return {
      pos: e.pos,
      end: e.end,
      kind: 'case',
      operand,
      whens: whens.map((when, i) => ({ when, then: results[i]! })),
      else: e.else ? results[results.length - 1] : undefined,
      type: resultType(results),
    };
  }

  private arith(e: Expr & { kind: 'arith' }): TypedExpr {
    const span = { pos: e.pos, end: e.end };
    if ((e.op === '+' || e.op === '-') && (e.left.kind === 'interval' || e.right.kind === 'interval')) {
      if (e.right.kind !== 'interval' && e.op === '-') throw this.err('An INTERVAL cannot be subtracted from; write date - INTERVAL n unit', e);
      if (e.left.kind === 'interval' && e.right.kind === 'interval') throw this.err('Two INTERVALs cannot be combined', e);
      const [base, iv] = e.right.kind === 'interval' ? [e.left, e.right] : [e.right, e.left as Expr & { kind: 'interval' }];
      return this.dateAdd(span, base, iv, e.op === '-');
    }
    const left = this.numeric(this.check(e.left), e.left, `"${e.op}"`);
    const right = this.numeric(this.check(e.right), e.right, `"${e.op}"`);
    if (e.op === '%') {
      if (left.type === 'number' || right.type === 'number') throw this.err('"%" requires integer operands', e);
      return { ...span, kind: 'arith', op: e.op, left, right, type: 'integer' };
    }
    const type: ValueType = e.op === '/' || left.type === 'number' || right.type === 'number' ? 'number' : 'integer';
    return { ...span, kind: 'arith', op: e.op, left, right, type };
  }

  /** base +/- INTERVAL n unit, normalised to a DATE_ADD call (negated value for subtraction) */
  dateAdd(span: { pos: number; end: number }, baseExpr: Expr, iv: Expr & { kind: 'interval' }, subtract: boolean): TypedExpr {
    let base = this.temporal(this.check(baseExpr), baseExpr, 'Date arithmetic');
    let value = this.coerce(this.check(iv.value), 'integer', iv.value, 'The INTERVAL amount');
    if (subtract && value.kind === 'literal' && value.valueType === 'integer' && value.value !== -(2n ** 63n)) value = { ...value, value: -value.value };
    else if (subtract) value = { kind: 'unary', op: '-', operand: value, pos: iv.value.pos, end: iv.value.end, type: 'integer' };
    let type: ValueType = base.type;
    if (base.type === 'date' && SUB_DAY.has(iv.unit)) {
      base = this.coerce(base, 'timestamp', baseExpr);
      type = 'timestamp';
    }
    const interval: TypedExpr = { kind: 'interval', value, unit: iv.unit, pos: iv.pos, end: iv.end, type: 'interval' };
    return { ...span, kind: 'call', name: 'DATE_ADD', nameEnd: span.pos, args: [base, interval], type };
  }

  // ---- argument helpers (also used by validate-functions.ts)

  bool(t: TypedExpr, e: Expr): TypedExpr {
    if (t.type !== 'boolean' && t.type !== 'null') throw this.err(`Expected a condition (true/false) but found ${article(t.type)} value`, e);
    return this.coerce(t, 'boolean', e);
  }

  numeric(t: TypedExpr, e: Expr, what: string): TypedExpr {
    if (t.type === 'null') return this.coerce(t, 'integer', e);
    if (!NUMERIC.has(t.type)) throw this.err(`${what} expects a number but found ${article(t.type)} value`, e);
    return t;
  }

  /** text, or an integer converted to its decimal text */
  text(t: TypedExpr, e: Expr, what: string): TypedExpr {
    if (t.type === 'text' || t.type === 'null' || t.type === 'integer') return this.coerce(t, 'text', e);
    throw this.err(`${what} expects text but found ${article(t.type)} value`, e);
  }

  integer(t: TypedExpr, e: Expr, what: string): TypedExpr {
    return this.coerce(t, 'integer', e, what);
  }

  temporal(t: TypedExpr, e: Expr, what: string): TypedExpr {
    if (TEMPORAL.has(t.type)) return t;
    if (t.type === 'null') return this.coerce(t, 'timestamp', e);
    if (t.kind === 'literal' && t.valueType === 'string') return this.temporalLiteral(t, e);
    throw this.err(`${what} expects a date or timestamp but found ${article(t.type)} value`, e);
  }

  json(t: TypedExpr, e: Expr, what: string): TypedExpr {
    if (t.type === 'json' || t.type === 'null') return this.coerce(t, 'json', e);
    throw this.err(`${what} expects a json value but found ${article(t.type)} value`, e);
  }

  temporalLiteral(t: TypedExpr & { kind: 'literal'; valueType: 'string' }, e: Expr): TypedExpr {
    const parsed = parseTemporal(t.value);
    if (!parsed) throw this.err(`${this.src.slice(e.pos, e.end)} is not a valid date or date-time (YYYY-MM-DD[ HH:MM[:SS[.fff]]][Z|±HH:MM])`, e);
    return { kind: 'literal', valueType: parsed.type, value: parsed.value, pos: t.pos, end: t.end, type: parsed.type };
  }

  /** converts t to `target` (NULL retyping, literal reading, date->timestamp, integer->text) or throws */
  coerce(t: TypedExpr, target: ValueType, e: Expr, what?: string): TypedExpr {
    if (t.type === target) return t;
    const span = { pos: t.pos, end: t.end };
    if (t.type === 'null') return retypeNull(t, target);
    if (t.kind === 'literal' && t.valueType === 'string' && TEMPORAL.has(target)) {
      return this.coerce(this.temporalLiteral(t, e), target, e, what);
    }
    if (t.type === 'date' && target === 'timestamp') return { ...span, kind: 'cast', to: 'timestamp', operand: t, type: 'timestamp' };
    if (t.type === 'integer' && target === 'number') return t;
    if (t.type === 'integer' && target === 'text') return { ...span, kind: 'cast', to: 'text', operand: t, type: 'text' };
    throw this.err(`${what ?? this.src.slice(e.pos, e.end)} must be ${article(target)} value but is ${article(t.type)} value`, e);
  }

  /**
   * MySQL's booleans are the integers 1 and 0, and `JSON_CONTAINS(...) = 1` is the usual idiom. Where
   * booleans meet numbers in one comparison: if every boolean is a TRUE/FALSE literal, they become
   * 1/0 (`qty = TRUE` is `qty = 1`); otherwise every number must be the integer literal 0 or 1, which
   * becomes FALSE/TRUE (`flag = 1` is `flag = TRUE`). Any other number is refused rather than
   * silently never matching (`flag = 2`, `flag = qty`).
   */
  private booleansAsNumbers(ts: TypedExpr[], es: Expr[]): TypedExpr[] {
    if (!ts.some((t) => t.type === 'boolean') || !ts.some((t) => NUMERIC.has(t.type))) return ts;
    if (ts.every((t) => t.type !== 'boolean' || isBoolLiteral(t))) {
      return ts.map((t) => (isBoolLiteral(t) ? boolToInt(t as TypedExpr & { kind: 'literal' }) : t));
    }
    return ts.map((t, i) => {
      if (!NUMERIC.has(t.type)) return t;
      if (isZeroOrOne(t)) return intToBool(t as TypedExpr & { kind: 'literal' });
      throw this.err(`${this.src.slice(es[i]!.pos, es[i]!.end)} cannot be compared with a boolean: a boolean equals 1 (TRUE) or 0 (FALSE), so only those two numbers are accepted`, es[i]!);
    });
  }

  /** brings operands to one common type (comparison, IN, BETWEEN, CASE, COALESCE...) */
  unify(ts: TypedExpr[], es: Expr[], purpose: Purpose, whole: Expr): TypedExpr[] {
    // GREATEST/LEAST (an 'order' call) and value choices (CASE results, COALESCE, IF) keep booleans apart
    if (purpose === 'eq' || (purpose === 'order' && whole.kind !== 'call')) ts = this.booleansAsNumbers(ts, es);
    const isStrLit = (t: TypedExpr) => t.kind === 'literal' && t.valueType === 'string';
    const anchors = ts.filter((t) => t.type !== 'null' && !isStrLit(t));
    const hasStrLit = ts.some(isStrLit);
    let target: ValueType;
    const mismatch = () => {
      const kinds = [...new Set(ts.filter((t) => t.type !== 'null').map((t) => (isStrLit(t) ? 'text' : t.type)))];
      return this.err(`Cannot ${purpose === 'value' ? 'mix' : 'compare'} ${kinds.join(' and ')} values in ${this.src.slice(whole.pos, whole.end)}`, whole);
    };
    if (anchors.length === 0) target = hasStrLit ? 'text' : 'null';
    else if (anchors.every((t) => NUMERIC.has(t.type))) {
      if (hasStrLit) throw mismatch();
      target = anchors.some((t) => t.type === 'number') ? 'number' : 'integer';
    } else if (anchors.every((t) => TEMPORAL.has(t.type))) {
      ts = ts.map((t, i) => (isStrLit(t) ? this.temporalLiteral(t as TypedExpr & { kind: 'literal'; valueType: 'string' }, es[i]!) : t));
      target = ts.some((t) => t.type === 'timestamp') ? 'timestamp' : 'date';
    } else {
      target = anchors[0]!.type;
      if (anchors.some((t) => t.type !== target) || (hasStrLit && target !== 'text')) throw mismatch();
    }
    if (target === 'interval') throw mismatch();
    if (target === 'json' && purpose !== 'value') throw this.err(`json values cannot be compared; use JSON_UNQUOTE(JSON_EXTRACT(...)) or JSON_CONTAINS in ${this.src.slice(whole.pos, whole.end)}`, whole);
    if (target === 'boolean' && purpose === 'order' && whole.kind === 'call') throw mismatch();
    if (target === 'null') return ts;
    return ts.map((t, i) => this.coerce(t, target, es[i]!));
  }
}

const isBoolLiteral = (t: TypedExpr) => t.kind === 'literal' && t.valueType === 'boolean';
const isZeroOrOne = (t: TypedExpr) => t.kind === 'literal' && t.valueType === 'integer' && (t.value === 0n || t.value === 1n);

/** TRUE -> 1, FALSE -> 0, and back */
function boolToInt(t: TypedExpr & { kind: 'literal' }): TypedExpr {
  return { ...t, valueType: 'integer', value: t.value ? 1n : 0n, type: 'integer' };
}
function intToBool(t: TypedExpr & { kind: 'literal' }): TypedExpr {
  return { ...t, valueType: 'boolean', value: t.value === 1n, type: 'boolean' };
}

/** gives a NULL-typed subtree the type its context needs */
function retypeNull(t: TypedExpr, target: ValueType): TypedExpr {
  const out = { ...t, type: target } as TypedExpr;
  if (out.kind === 'case') {
    out.whens = out.whens.map((w) => ({ when: w.when, then: w.then.type === 'null' ? retypeNull(w.then, target) : w.then }));
    if (out.else && out.else.type === 'null') out.else = retypeNull(out.else, target);
  } else if (out.kind === 'call') {
    const valueArgsFrom = out.name === 'IF' ? 1 : 0;
    out.args = out.args.map((a, i) => (i >= valueArgsFrom && a.type === 'null' ? retypeNull(a, target) : a));
  }
  return out;
}

export function article(type: ValueType | string): string {
  const word = type === 'number' ? 'number' : type;
  return /^[aeiou]/.test(word) ? `an ${word}` : `a ${word}`;
}
