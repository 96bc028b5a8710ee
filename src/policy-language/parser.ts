// Recursive-descent parser (schema-blind). Nesting is bounded while parsing (MAX_DEPTH), so no
// input can exhaust the JS stack; AND/OR chains become flat n-ary nodes.
import type { ArithmeticOp, AuthField, ComparisonOp, Expr, IntervalUnit } from './ast.js';
import { INTERVAL_UNITS } from './ast.js';
import { MAX_DEPTH, MAX_EXPRESSION_LENGTH, PolicyError } from './errors.js';
import { lookupFunction } from './functions.js';
import { FORBIDDEN_KEYWORDS, LANGUAGE_KEYWORDS } from './keywords.js';
import { tokenize, type Token } from './lexer.js';

/** Counts parser steps (token visits); the fuzz suite uses it to prove parsing is linear. */
export const parserStats = { steps: 0 };

export function parsePolicy(text: string): Expr {
  if (typeof text !== 'string') throw new PolicyError('The expression must be a string', '', 0);
  if (text.length > MAX_EXPRESSION_LENGTH) {
    throw new PolicyError(
      `The expression is ${text.length} characters long; the limit is ${MAX_EXPRESSION_LENGTH} (the excess starts at "${text.slice(MAX_EXPRESSION_LENGTH, MAX_EXPRESSION_LENGTH + 20)}")`,
      text.slice(MAX_EXPRESSION_LENGTH, MAX_EXPRESSION_LENGTH + 20),
      MAX_EXPRESSION_LENGTH,
    );
  }
  if (text.trim() === '') throw new PolicyError('The expression is empty', '', 0);
  return guard(() => new Parser(text, tokenize(text)).parseAll());
}

export const INTERNAL_ERROR_MESSAGE = 'Internal error while reading the expression';

/** the public contract: bad input only ever produces a PolicyError */
export function guard<T>(f: () => T): T {
  try {
    return f();
  } catch (e) {
    if (e instanceof PolicyError) throw e;
    throw new PolicyError(INTERNAL_ERROR_MESSAGE, '', 0);
  }
}

class Parser {
  private i = 0;
  private depth = 0;
  /** node heights for the operator-chain limit */
  private heights = new WeakMap<object, number>();

  constructor(
    private readonly src: string,
    private readonly tokens: Token[],
  ) {}

  parseAll(): Expr {
    const e = this.expr();
    const t = this.peek();
    if (t.type !== 'eof') {
      throw this.error(`Unexpected ${describe(t)} after the end of the expression`, t);
    }
    return e;
  }

  // ---- token helpers
  private peek(k = 0): Token {
    parserStats.steps++;
    return this.tokens[Math.min(this.i + k, this.tokens.length - 1)]!;
  }
  private next(): Token {
    const t = this.peek();
    if (this.i < this.tokens.length - 1) this.i++;
    return t;
  }
  private isWord(t: Token, w: string) {
    return t.type === 'ident' && t.value === w;
  }
  private isOp(t: Token, op: string) {
    return t.type === 'op' && t.value === op;
  }
  private acceptWord(w: string): Token | undefined {
    return this.isWord(this.peek(), w) ? this.next() : undefined;
  }
  private acceptOp(op: string): Token | undefined {
    return this.isOp(this.peek(), op) ? this.next() : undefined;
  }
  private expectOp(op: string, context: string): Token {
    const t = this.peek();
    if (!this.isOp(t, op)) throw this.error(`Expected "${op}" ${context} but found ${describe(t)}`, t);
    return this.next();
  }
  private expectWord(w: string, context: string): Token {
    const t = this.peek();
    if (!this.isWord(t, w)) throw this.error(`Expected ${w} ${context} but found ${describe(t)}`, t);
    return this.next();
  }
  private error(message: string, t: Token): PolicyError {
    if (t.type === 'ident' && FORBIDDEN_KEYWORDS.has(t.value)) {
      return new PolicyError(`SQL keyword ${t.text} is not allowed in a policy expression`, t.text, t.pos);
    }
    return new PolicyError(message, t.type === 'eof' ? '' : t.text, t.pos);
  }
  private enter(t: Token) {
    if (++this.depth > MAX_DEPTH) {
      throw new PolicyError(`The expression is nested more than ${MAX_DEPTH} levels deep at "${t.text}" (offset ${t.pos})`, t.text, t.pos);
    }
  }
  private leave() {
    this.depth--;
  }
  /** records a node's height; chains of binary operators count toward the nesting limit */
  private mk<T extends Expr>(node: T, children: Expr[]): T {
    let h = 0;
    for (const c of children) h = Math.max(h, this.heights.get(c) ?? 0);
    h += 1;
    if (h > MAX_DEPTH) {
      const text = this.src.slice(node.pos, node.end);
      throw new PolicyError(
        `The expression is nested more than ${MAX_DEPTH} levels deep in ${text}`,
        text,
        node.pos,
      );
    }
    this.heights.set(node, h);
    return node;
  }

  // ---- grammar, lowest precedence first
  private expr(): Expr {
    return this.logical('OR');
  }

  private logical(op: 'OR' | 'AND'): Expr {
    const sub = () => (op === 'OR' ? this.logical('AND') : this.not());
    const first = sub();
    if (!this.isWord(this.peek(), op)) return first;
    const operands = [first];
    while (this.acceptWord(op)) operands.push(sub());
    const last = operands[operands.length - 1]!;
    return this.mk({ kind: 'logical', op, operands, pos: first.pos, end: last.end }, operands);
  }

  private not(): Expr {
    const t = this.peek();
    if (this.isWord(t, 'NOT')) {
      this.next();
      this.enter(t);
      const operand = this.not();
      this.leave();
      return this.mk({ kind: 'unary', op: 'NOT', operand, pos: t.pos, end: operand.end }, [operand]);
    }
    return this.predicate();
  }

  private predicate(): Expr {
    let left = this.additive();
    for (;;) {
      const t = this.peek();
      if (t.type === 'op' && ['=', '<>', '<', '<=', '>', '>='].includes(t.value)) {
        this.next();
        const right = this.additive();
        left = this.mk({ kind: 'compare', op: t.value as ComparisonOp, left, right, pos: left.pos, end: right.end }, [left, right]);
        continue;
      }
      if (this.isWord(t, 'IS')) {
        this.next();
        const negated = !!this.acceptWord('NOT');
        const w = this.peek();
        if (!(this.isWord(w, 'NULL') || this.isWord(w, 'TRUE') || this.isWord(w, 'FALSE'))) {
          throw this.error(`Expected NULL, TRUE or FALSE after IS but found ${describe(w)}`, w);
        }
        this.next();
        const test = w.value as 'NULL' | 'TRUE' | 'FALSE';
        left = this.mk({ kind: 'is', operand: left, test, negated, pos: left.pos, end: w.end }, [left]);
        continue;
      }
      let negated = false;
      let kw = t;
      if (this.isWord(t, 'NOT')) {
        kw = this.peek(1);
        if (!(this.isWord(kw, 'IN') || this.isWord(kw, 'LIKE') || this.isWord(kw, 'BETWEEN'))) {
          throw this.error(`Expected IN, LIKE or BETWEEN after NOT but found ${describe(kw)}`, kw);
        }
        this.next();
        negated = true;
      }
      if (this.isWord(kw, 'IN')) {
        this.next();
        const open = this.expectOp('(', 'after IN');
        this.enter(open);
        const list: Expr[] = [this.expr()];
        while (this.acceptOp(',')) list.push(this.expr());
        const close = this.expectOp(')', 'to close the IN list');
        this.leave();
        left = this.mk({ kind: 'in', operand: left, list, negated, pos: left.pos, end: close.end }, [left, ...list]);
        continue;
      }
      if (this.isWord(kw, 'LIKE')) {
        this.next();
        const pattern = this.additive();
        if (this.isWord(this.peek(), 'ESCAPE')) {
          const e = this.peek();
          throw new PolicyError('LIKE ... ESCAPE is not supported; the escape character is always "\\"', e.text, e.pos);
        }
        left = this.mk({ kind: 'like', operand: left, pattern, negated, caseSensitive: false, pos: left.pos, end: pattern.end }, [left, pattern]);
        continue;
      }
      if (this.isWord(kw, 'BETWEEN')) {
        this.next();
        const low = this.additive();
        this.expectWord('AND', 'in BETWEEN ... AND ...');
        const high = this.additive();
        left = this.mk({ kind: 'between', operand: left, low, high, negated, pos: left.pos, end: high.end }, [left, low, high]);
        continue;
      }
      return left;
    }
  }

  private additive(): Expr {
    let left = this.multiplicative();
    for (;;) {
      const t = this.peek();
      if (!(this.isOp(t, '+') || this.isOp(t, '-'))) return left;
      this.next();
      const right = this.multiplicative();
      left = this.mk({ kind: 'arith', op: t.value as ArithmeticOp, left, right, pos: left.pos, end: right.end }, [left, right]);
    }
  }

  private multiplicative(): Expr {
    let left = this.unary();
    for (;;) {
      const t = this.peek();
      if (!(this.isOp(t, '*') || this.isOp(t, '/') || this.isOp(t, '%'))) return left;
      this.next();
      const right = this.unary();
      left = this.mk({ kind: 'arith', op: t.value as ArithmeticOp, left, right, pos: left.pos, end: right.end }, [left, right]);
    }
  }

  private unary(): Expr {
    const e = this.unaryRaw();
    if (e.kind === 'literal' && e.valueType === 'integer') checkInteger(e, this.src);
    return e;
  }

  /** integer literals are range-checked by the caller, after "-" has been folded in */
  private unaryRaw(): Expr {
    const t = this.peek();
    if (!(this.isOp(t, '-') || this.isOp(t, '+'))) return this.primary();
    this.next();
    this.enter(t);
    const operand = this.unaryRaw();
    this.leave();
    // fold "-<number>" so that -9223372036854775808 is a valid integer literal
    if (operand.kind === 'literal' && operand.pos === t.end && (operand.valueType === 'integer' || operand.valueType === 'number')) {
      if (t.value === '+') return { ...operand, pos: t.pos };
      return operand.valueType === 'integer'
        ? { ...operand, value: -operand.value, pos: t.pos }
        : { ...operand, value: -operand.value, pos: t.pos };
    }
    if (operand.kind === 'literal' && operand.valueType === 'integer') checkInteger(operand, this.src);
    return this.mk({ kind: 'unary', op: t.value as '-' | '+', operand, pos: t.pos, end: operand.end }, [operand]);
  }

  private primary(): Expr {
    const t = this.peek();
    switch (t.type) {
      case 'number': {
        this.next();
        if (t.isInteger) return { kind: 'literal', valueType: 'integer', value: BigInt(t.value), pos: t.pos, end: t.end };
        const value = Number(t.value);
        if (!Number.isFinite(value)) throw new PolicyError(`Number ${t.text} is out of range`, t.text, t.pos);
        return { kind: 'literal', valueType: 'number', value, pos: t.pos, end: t.end };
      }
      case 'string':
        this.next();
        return { kind: 'literal', valueType: 'string', value: t.value, pos: t.pos, end: t.end };
      case 'auth':
        this.next();
        return { kind: 'auth', field: t.value as AuthField, pos: t.pos, end: t.end };
      case 'qident':
        this.next();
        if (this.isOp(this.peek(), '(')) throw this.error(`Backtick-quoted ${t.text} cannot be called as a function`, t);
        return { kind: 'column', name: t.value.toLowerCase(), pos: t.pos, end: t.end };
      case 'op':
        if (t.value === '(') {
          this.next();
          this.enter(t);
          const inner = this.expr();
          const close = this.expectOp(')', 'to close "("');
          this.leave();
          const node = { ...inner, pos: t.pos, end: close.end } as Expr;
          this.heights.set(node, this.heights.get(inner) ?? 0);
          return node;
        }
        throw this.error(`Unexpected ${describe(t)}`, t);
      case 'eof':
        throw this.error('The expression ends too early', t);
      default:
        return this.word(t);
    }
  }

  private word(t: Token): Expr {
    const w = t.value;
    const lit = (node: Expr) => {
      this.next();
      return node;
    };
    if (w === 'NULL') return lit({ kind: 'literal', valueType: 'null', value: null, pos: t.pos, end: t.end });
    if (w === 'TRUE' || w === 'FALSE') return lit({ kind: 'literal', valueType: 'boolean', value: w === 'TRUE', pos: t.pos, end: t.end });
    if (w === 'CASE') return this.caseExpr();
    if (w === 'INTERVAL') return this.interval();
    if (w === 'CURRENT_TIMESTAMP' || w === 'CURRENT_DATE') {
      this.next();
      let end = t.end;
      if (this.isOp(this.peek(), '(') && this.isOp(this.peek(1), ')')) {
        this.next();
        end = this.next().end;
      }
      const name = w === 'CURRENT_TIMESTAMP' ? 'NOW' : 'CURDATE';
      return { kind: 'call', name, nameEnd: t.end, args: [], pos: t.pos, end };
    }
    if (this.isOp(this.peek(1), '(')) return this.call(t);
    if (LANGUAGE_KEYWORDS.has(w)) throw this.error(`Unexpected keyword ${t.text}`, t);
    if (FORBIDDEN_KEYWORDS.has(w)) throw this.error('', t);
    this.next();
    return { kind: 'column', name: t.text.toLowerCase(), pos: t.pos, end: t.end };
  }

  private call(t: Token): Expr {
    const spec = lookupFunction(t.value);
    if (!spec) {
      if (FORBIDDEN_KEYWORDS.has(t.value) || LANGUAGE_KEYWORDS.has(t.value)) throw this.error(`Unexpected keyword ${t.text}`, t);
      throw new PolicyError(`Function ${t.text} is not allowed in a policy expression`, t.text, t.pos);
    }
    this.next();
    const open = this.next();
    this.enter(open);
    const args: Expr[] = [];
    if (!this.isOp(this.peek(), ')')) {
      do {
        if (spec.name === 'TIMESTAMPDIFF' && args.length === 0) args.push(this.unit('as the first argument of TIMESTAMPDIFF'));
        else args.push(this.expr());
      } while (this.acceptOp(','));
    }
    const close = this.expectOp(')', `to close ${t.text}(`);
    this.leave();
    if (args.length < spec.minArgs || args.length > spec.maxArgs) {
      const want =
        spec.minArgs === spec.maxArgs
          ? `${spec.minArgs}`
          : spec.maxArgs === Infinity
            ? `at least ${spec.minArgs}`
            : `${spec.minArgs} to ${spec.maxArgs}`;
      throw new PolicyError(`${t.text} takes ${want} argument(s) but was given ${args.length}`, t.text, t.pos);
    }
    return this.mk({ kind: 'call', name: spec.name, nameEnd: t.end, args, pos: t.pos, end: close.end }, args);
  }

  private unit(context: string): Expr {
    const u = this.peek();
    if (u.type === 'ident' && (INTERVAL_UNITS as readonly string[]).includes(u.value)) {
      this.next();
      return { kind: 'unit', unit: u.value as IntervalUnit, pos: u.pos, end: u.end };
    }
    throw this.error(`Expected a unit (${INTERVAL_UNITS.join(', ')}) ${context} but found ${describe(u)}`, u);
  }

  private interval(): Expr {
    const t = this.next();
    this.enter(t);
    const value = this.additive();
    const u = this.unit('after INTERVAL n') as { unit: IntervalUnit; end: number };
    this.leave();
    return this.mk({ kind: 'interval', value, unit: u.unit, pos: t.pos, end: u.end }, [value]);
  }

  private caseExpr(): Expr {
    const t = this.next();
    this.enter(t);
    let operand: Expr | undefined;
    if (!this.isWord(this.peek(), 'WHEN')) operand = this.expr();
    const whens: { when: Expr; then: Expr }[] = [];
    while (this.acceptWord('WHEN')) {
      const when = this.expr();
      this.expectWord('THEN', 'after CASE ... WHEN ...');
      whens.push({ when, then: this.expr() });
    }
    if (whens.length === 0) throw this.error(`Expected WHEN in CASE but found ${describe(this.peek())}`, this.peek());
    const elseExpr = this.acceptWord('ELSE') ? this.expr() : undefined;
    const end = this.expectWord('END', 'to close CASE');
    this.leave();
    const children = [...(operand ? [operand] : []), ...whens.flatMap((w) => [w.when, w.then]), ...(elseExpr ? [elseExpr] : [])];
    return this.mk({ kind: 'case', operand, whens, else: elseExpr, pos: t.pos, end: end.end }, children);
  }
}

function checkInteger<T extends Expr & { kind: 'literal'; valueType: 'integer'; value: bigint }>(node: T, src: string): T {
  if (node.value > 9223372036854775807n || node.value < -9223372036854775808n) {
    const text = src.slice(node.pos, node.end);
    throw new PolicyError(`Integer ${text} is out of the 64-bit range`, text, node.pos);
  }
  return node;
}

function describe(t: Token): string {
  if (t.type === 'eof') return 'the end of the expression';
  return `"${t.text}"`;
}
