// Column filters (`col=[not.]op.value`) and logic trees (`or=(a.eq.1,and(b.is.null,c.lt.3))`).
// The logic-tree reader is a small hand-written scanner: linear time, recursion bounded by MAX_DEPTH.
import { invalidFilter, patternTooLong, tooComplex, unknownColumn } from './errors.ts';
import { LIKE_PATTERN_MAX_CHARS } from '../lib/like-limits.ts';
import { charLength } from '../lib/validate.ts';
import {
  type ColumnInfo,
  type FilterOp,
  type IsValue,
  type Value,
  FILTER_OPS,
  IS_VALUES,
  checkOperator,
  coerceIs,
  coerceOperand,
  coerceValue,
} from './values.ts';

export type Filter =
  | { kind: 'cond'; column: string; op: FilterOp; negated: boolean; value: Value | Value[] | IsValue }
  | { kind: 'and' | 'or'; negated: boolean; items: Filter[] };

/** Nesting depth of one logic parameter (`or=(...)` is depth 1). */
export const MAX_DEPTH = 16;
/** Conditions in one logic parameter. */
export const MAX_TREE_CONDITIONS = 100;
/** Conditions in the whole query (column filters plus every logic tree). */
export const MAX_CONDITIONS = 200;
/** Items of one `in` list. */
export const MAX_IN_ITEMS = 1000;

export const LOGIC_KEYS: ReadonlySet<string> = new Set(['and', 'or', 'not.and', 'not.or']);

export interface FilterContext {
  columns: ReadonlyMap<string, ColumnInfo>;
  /** Conditions seen so far in the whole query. */
  conditions: number;
}

function lookup(ctx: FilterContext, name: string): ColumnInfo {
  const col = ctx.columns.get(name);
  if (!col) throw unknownColumn(name);
  return col;
}

function countCondition(ctx: FilterContext, param: string): void {
  ctx.conditions++;
  if (ctx.conditions > MAX_CONDITIONS) throw tooComplex(param, 'too_many_conditions', MAX_CONDITIONS);
}

function buildCond(col: ColumnInfo, op: FilterOp, negated: boolean, operand: string | string[]): Filter {
  if (op === 'in') {
    checkOperator(col, op);
    const items = operand as string[];
    return { kind: 'cond', column: col.name, op, negated, value: items.map((t) => coerceValue(col, t)) };
  }
  const text = operand as string;
  if (op === 'is') return { kind: 'cond', column: col.name, op, negated, value: coerceIs(col, text) };
  return { kind: 'cond', column: col.name, op, negated, value: coerceOperand(col, op, text) };
}

/**
 * Operand checks that need no schema, so they come with the syntax: an `is` operand is a keyword
 * (`fail`s as malformed otherwise), and a like/ilike pattern is bounded before any database work.
 */
function checkOperand(param: string, column: string, op: FilterOp, operand: string, fail: (reason: string) => never): void {
  if (op === 'is' && !IS_VALUES.has(operand.trim().toLowerCase())) fail("'is' takes null, not_null, true, false or unknown");
  if ((op === 'like' || op === 'ilike') && operand.length > LIKE_PATTERN_MAX_CHARS && charLength(operand) > LIKE_PATTERN_MAX_CHARS)
    throw patternTooLong(param, column, LIKE_PATTERN_MAX_CHARS);
}

/** A cursor over one parameter value. */
class Scanner {
  i = 0;
  constructor(
    readonly s: string,
    readonly param: string,
  ) {}
  get eof(): boolean {
    return this.i >= this.s.length;
  }
  peek(): string {
    return this.s[this.i] ?? '';
  }
  skipWs(): void {
    while (this.i < this.s.length && (this.s[this.i] === ' ' || this.s[this.i] === '\t' || this.s[this.i] === '\n' || this.s[this.i] === '\r')) this.i++;
  }
  startsWith(word: string): boolean {
    return this.s.startsWith(word, this.i);
  }
  /** Reads up to (not including) the first character of `stops`, or the end. */
  readUntil(stops: string): string {
    const from = this.i;
    while (this.i < this.s.length && !stops.includes(this.s[this.i]!)) this.i++;
    return this.s.slice(from, this.i);
  }
  fail(reason: string): never {
    throw invalidFilter(this.param, this.s, reason, this.i);
  }
  /**
   * One value inside a list or logic tree, PostgREST style: a double-quoted string (backslash escapes
   * any character) when it is well formed and followed by `,` or `)`; otherwise the raw text up to the
   * next `,` or `)`.
   */
  readElement(): string {
    const save = this.i;
    this.skipWs();
    if (this.peek() === '"') {
      const quoted = this.readQuoted();
      if (quoted !== null) {
        this.skipWs();
        const c = this.peek();
        if (c === ',' || c === ')') return quoted;
      }
    }
    this.i = save;
    return this.readUntil(',)');
  }
  private readQuoted(): string | null {
    const s = this.s;
    let i = this.i + 1;
    let out = '';
    let from = i;
    while (i < s.length) {
      const c = s[i];
      if (c === '\\') {
        if (i + 1 >= s.length) return null;
        out += s.slice(from, i) + s[i + 1];
        i += 2;
        from = i;
      } else if (c === '"') {
        out += s.slice(from, i);
        this.i = i + 1;
        return out;
      } else {
        i++;
      }
    }
    return null;
  }
  /** `(` element (`,` element)* `)`; `()` is the empty list. */
  readList(): string[] {
    this.skipWs();
    if (this.peek() !== '(') this.fail("an 'in' list must be parenthesised: in.(a,b)");
    this.i++;
    const items: string[] = [];
    this.skipWs();
    if (this.peek() === ')') {
      this.i++;
      return items;
    }
    for (;;) {
      items.push(this.readElement());
      if (items.length > MAX_IN_ITEMS) throw tooComplex(this.param, 'in_list_too_long', MAX_IN_ITEMS);
      const c = this.peek();
      this.i++;
      if (c === ',') continue;
      if (c === ')') return items;
      this.i--;
      this.fail("unbalanced parentheses in an 'in' list");
    }
  }
}

/** Splits `[not.]op.rest` (the op part of a filter); `rest` is what follows the op's dot. */
function splitOp(text: string): { negated: boolean; op: FilterOp; restAt: number } | { error: string } {
  let at = 0;
  let negated = false;
  if (text.startsWith('not.')) {
    negated = true;
    at = 4;
  }
  const dot = text.indexOf('.', at);
  const op = dot < 0 ? text.slice(at) : text.slice(at, dot);
  if (op === '') return { error: 'missing operator' };
  if (!FILTER_OPS.has(op)) return { error: `unknown operator '${op.length > 40 ? `${op.slice(0, 40)}…` : op}'` };
  if (dot < 0) return { error: `operator '${op}' needs a value: ${op}.value` };
  return { negated, op: op as FilterOp, restAt: dot + 1 };
}

/** A filter as written, before its column and value are checked (the parse is schema-blind). */
export type RawFilter =
  | { kind: 'cond'; param: string; column: string; op: FilterOp; negated: boolean; operand: string | string[] }
  | { kind: 'and' | 'or'; negated: boolean; items: RawFilter[] };

/** Syntax of a query-string column filter: key = column, value = `[not.]op.value`. */
export function scanColumnFilter(key: string, value: string, ctx: FilterContext): RawFilter {
  if (key === '') throw invalidFilter(key, value, 'empty column name');
  const split = splitOp(value);
  if ('error' in split) throw invalidFilter(key, value, split.error);
  countCondition(ctx, key);
  if (split.op === 'in') {
    const sc = new Scanner(value, key);
    sc.i = split.restAt;
    const items = sc.readList();
    sc.skipWs();
    if (!sc.eof) sc.fail("unexpected text after the 'in' list");
    return { kind: 'cond', param: key, column: key, op: 'in', negated: split.negated, operand: items };
  }
  // Top-level values are raw (PostgREST): quotes, commas and parentheses are part of the value.
  const operand = value.slice(split.restAt);
  checkOperand(key, key, split.op, operand, (reason) => {
    throw invalidFilter(key, value, reason, split.restAt);
  });
  return { kind: 'cond', param: key, column: key, op: split.op, negated: split.negated, operand };
}

/** Syntax of a logic parameter: key `and` | `or` | `not.and` | `not.or`, value `(item,item,...)`. */
export function scanLogicFilter(key: string, value: string, ctx: FilterContext): RawFilter {
  const negated = key.startsWith('not.');
  const kind = key.endsWith('and') ? 'and' : 'or';
  const sc = new Scanner(value, key);
  const tree = { conditions: 0 };
  sc.skipWs();
  if (sc.peek() !== '(') sc.fail(`expected '(' after ${key}=`);
  sc.i++;
  const items = readItems(sc, ctx, tree, 1);
  sc.skipWs();
  if (!sc.eof) sc.fail('unexpected text after the closing parenthesis');
  return { kind, negated, items };
}

/** Checks columns, operators and values of a scanned filter (recursion bounded by MAX_DEPTH). */
export function resolveFilter(raw: RawFilter, ctx: FilterContext): Filter {
  if (raw.kind !== 'cond') return { kind: raw.kind, negated: raw.negated, items: raw.items.map((i) => resolveFilter(i, ctx)) };
  return buildCond(lookup(ctx, raw.column), raw.op, raw.negated, raw.operand);
}

/** Items after an opening `(`, through the matching `)`. */
function readItems(sc: Scanner, ctx: FilterContext, tree: { conditions: number }, depth: number): RawFilter[] {
  if (depth > MAX_DEPTH) throw tooComplex(sc.param, 'nesting_too_deep', MAX_DEPTH);
  const items: RawFilter[] = [];
  for (;;) {
    sc.skipWs();
    items.push(readItem(sc, ctx, tree, depth));
    sc.skipWs();
    const c = sc.peek();
    if (c === ',') {
      sc.i++;
      continue;
    }
    if (c === ')') {
      sc.i++;
      return items;
    }
    if (c === '') sc.fail('unbalanced parentheses: missing )');
    sc.fail("expected ',' or ')'");
  }
}

const SUBTREES: ReadonlyArray<[string, 'and' | 'or', boolean]> = [
  ['not.and(', 'and', true],
  ['not.or(', 'or', true],
  ['and(', 'and', false],
  ['or(', 'or', false],
];

function readItem(sc: Scanner, ctx: FilterContext, tree: { conditions: number }, depth: number): RawFilter {
  for (const [word, kind, negated] of SUBTREES) {
    if (sc.startsWith(word)) {
      sc.i += word.length;
      return { kind, negated, items: readItems(sc, ctx, tree, depth + 1) };
    }
  }
  // column.[not.]op.value
  const field = sc.readUntil('.,()');
  if (field.trim() === '') sc.fail('empty column name');
  if (sc.peek() !== '.') sc.fail(`expected column.operator.value at '${field.length > 40 ? field.slice(0, 40) : field}'`);
  sc.i++;
  let negated = false;
  let op = sc.readUntil('.,()');
  if (op === 'not' && sc.peek() === '.') {
    negated = true;
    sc.i++;
    op = sc.readUntil('.,()');
  }
  if (op === '') sc.fail('missing operator');
  if (!FILTER_OPS.has(op)) sc.fail(`unknown operator '${op.length > 40 ? `${op.slice(0, 40)}…` : op}'`);
  if (sc.peek() !== '.') sc.fail(`operator '${op}' needs a value: ${op}.value`);
  sc.i++;
  tree.conditions++;
  if (tree.conditions > MAX_TREE_CONDITIONS) throw tooComplex(sc.param, 'too_many_conditions_in_logic_tree', MAX_TREE_CONDITIONS);
  countCondition(ctx, sc.param);
  const at = sc.i;
  const operand = op === 'in' ? sc.readList() : sc.readElement();
  if (typeof operand === 'string')
    checkOperand(sc.param, field, op as FilterOp, operand, (reason) => {
      sc.i = at;
      return sc.fail(reason);
    });
  return { kind: 'cond', param: sc.param, column: field, op: op as FilterOp, negated, operand };
}
