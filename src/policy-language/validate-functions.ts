// Type rules for each function of the catalogue (see functions.ts).
import type { Expr, TypedExpr, ValueType } from './ast.js';
import { parseJsonDocument } from './json-value.js';
import { parseJsonPath } from './literals.js';
import { article, type Checker } from './validator.js';

type CallExpr = Expr & { kind: 'call' };

export function checkCall(c: Checker, e: CallExpr): TypedExpr {
  const call = callOf(c, e);
  const typed = textCall(call) ?? choiceCall(call) ?? numberCall(call) ?? dateCall(call) ?? jsonCall(call);
  if (typed) return typed;
  throw c.err(`Function ${c.src.slice(e.pos, e.nameEnd)} is not allowed in a policy expression`, e);
}

/** The call being checked and the argument helpers its type rule uses. */
function callOf(c: Checker, e: CallExpr) {
  const span = { pos: e.pos, end: e.end };
  const make = (args: TypedExpr[], type: ValueType, callName = e.name): TypedExpr => ({
    ...span,
    kind: 'call',
    name: callName,
    nameEnd: e.nameEnd,
    args,
    type,
  });
  const what = (i: number) => `Argument ${i + 1} of ${c.src.slice(e.pos, e.nameEnd)}`;
  const arg = (i: number) => c.check(e.args[i]!);
  const text = (i: number) => c.text(arg(i), e.args[i]!, what(i));
  const int = (i: number) => c.integer(arg(i), e.args[i]!, what(i));
  const all = (f: (i: number) => TypedExpr) => e.args.map((_, i) => f(i));
  return { c, e, span, make, what, arg, text, int, all };
}
type Call = ReturnType<typeof callOf>;

function textCall({ e, make, text, int, all }: Call): TypedExpr | undefined {
  switch (e.name) {
    case 'LOWER':
    case 'UPPER':
    case 'TRIM':
      return make([text(0)], 'text');
    case 'LENGTH':
    case 'CHAR_LENGTH':
      return make([text(0)], 'integer', 'LENGTH');
    case 'CONCAT':
      return make(all(text), 'text');
    case 'SUBSTRING':
      return make(e.args.length === 3 ? [text(0), int(1), int(2)] : [text(0), int(1)], 'text');
    case 'LEFT':
    case 'RIGHT':
      return make([text(0), int(1)], 'text');
    case 'LOCATE':
      return make(e.args.length === 3 ? [text(0), text(1), int(2)] : [text(0), text(1)], 'integer');
    case 'REPLACE':
      return make(all(text), 'text');
    case 'FIND_IN_SET':
      return make(all(text), 'integer');
  }
  return undefined;
}

/** functions that pick one of their arguments */
function choiceCall({ c, e, make, arg, all }: Call): TypedExpr | undefined {
  switch (e.name) {
    case 'COALESCE':
    case 'IFNULL': {
      const args = c.unify(all(arg), e.args, 'value', e);
      return make(args, resultType(args), 'COALESCE');
    }
    case 'NULLIF': {
      const args = c.unify(all(arg), e.args, 'eq', e);
      return make(args, args[0]!.type === 'null' ? args[1]!.type : args[0]!.type);
    }
    case 'IF': {
      const cond = c.bool(arg(0), e.args[0]!);
      const values = c.unify([arg(1), arg(2)], [e.args[1]!, e.args[2]!], 'value', e);
      return make([cond, ...values], resultType(values));
    }
    case 'GREATEST':
    case 'LEAST': {
      let args = c.unify(all(arg), e.args, 'order', e);
      const type = resultType(args);
      if (type === 'boolean') throw c.err(`${c.src.slice(e.pos, e.nameEnd)} does not accept boolean values`, e);
      if (type === 'null') args = args.map((a, i) => c.coerce(a, 'integer', e.args[i]!));
      return make(args, type === 'null' ? 'integer' : type);
    }
  }
  return undefined;
}

function numberCall({ c, e, make, what, arg, int }: Call): TypedExpr | undefined {
  switch (e.name) {
    case 'ABS':
    case 'FLOOR':
    case 'CEIL': {
      const x = c.numeric(arg(0), e.args[0]!, what(0));
      return make([x], x.type);
    }
    case 'ROUND': {
      const x = c.numeric(arg(0), e.args[0]!, what(0));
      return make(e.args.length === 2 ? [x, int(1)] : [x], x.type);
    }
  }
  return undefined;
}

function dateCall({ c, e, span, make, what, arg }: Call): TypedExpr | undefined {
  switch (e.name) {
    case 'NOW':
    case 'UTC_TIMESTAMP':
      return make([], 'timestamp', 'NOW');
    case 'CURDATE':
      return make([], 'date');
    case 'DATE':
      return make([c.temporal(arg(0), e.args[0]!, what(0))], 'date');
    case 'DATE_ADD':
    case 'DATE_SUB': {
      const iv = e.args[1]!;
      if (iv.kind !== 'interval') throw c.err(`${what(1)} must be INTERVAL n unit`, iv);
      return c.dateAdd(span, e.args[0]!, iv, e.name === 'DATE_SUB');
    }
    case 'DATEDIFF':
      return make(
        [0, 1].map((i) => {
          const t = c.temporal(arg(i), e.args[i]!, what(i));
          return t.type === 'date' ? t : { pos: t.pos, end: t.end, kind: 'cast', to: 'date', operand: t, type: 'date' };
        }),
        'integer',
      );
    case 'TIMESTAMPDIFF': {
      const unit = e.args[0]!;
      if (unit.kind !== 'unit') throw c.err(`${what(0)} must be a unit`, unit);
      const ts = [1, 2].map((i) => c.coerce(c.temporal(arg(i), e.args[i]!, what(i)), 'timestamp', e.args[i]!));
      return make([{ ...unit, type: 'interval' }, ...ts], 'integer');
    }
  }
  return undefined;
}

function jsonCall({ c, e, span, make, what, arg }: Call): TypedExpr | undefined {
  switch (e.name) {
    case 'JSON_EXTRACT':
      return make([c.json(arg(0), e.args[0]!, what(0)), jsonPath(c, e, 1)], 'json');
    case 'JSON_UNQUOTE':
      return make([c.json(arg(0), e.args[0]!, what(0))], 'text');
    case 'JSON_LENGTH': {
      let doc = c.json(arg(0), e.args[0]!, what(0));
      if (e.args.length === 2) doc = { ...span, kind: 'call', name: 'JSON_EXTRACT', nameEnd: e.nameEnd, args: [doc, jsonPath(c, e, 1)], type: 'json' };
      return make([doc], 'integer');
    }
    case 'JSON_CONTAINS': {
      let target = c.json(arg(0), e.args[0]!, what(0));
      if (e.args.length === 3) target = { ...span, kind: 'call', name: 'JSON_EXTRACT', nameEnd: e.nameEnd, args: [target, jsonPath(c, e, 2)], type: 'json' };
      return make([target, jsonCandidate(c, arg(1), e.args[1]!, what(1))], 'boolean');
    }
  }
  return undefined;
}

function jsonPath(c: Checker, e: CallExpr, i: number): TypedExpr {
  const a = e.args[i]!;
  if (a.kind !== 'literal' || a.valueType !== 'string') throw c.err(`The JSON path of ${c.src.slice(e.pos, e.nameEnd)} must be a string literal such as '$.a.b[0]'`, a);
  const steps = parseJsonPath(a.value);
  if (typeof steps === 'string') throw c.err(`Invalid JSON path ${c.src.slice(a.pos, a.end)}: ${steps}`, a);
  return { ...a, type: 'text' };
}

/** JSON_CONTAINS candidate: json; a string literal holding a JSON document; other text -> JSON string; numbers -> JSON number */
function jsonCandidate(c: Checker, t: TypedExpr, e: Expr, what: string): TypedExpr {
  if (t.type === 'json' || t.type === 'null') return c.coerce(t, 'json', e);
  if (t.kind === 'literal' && t.valueType === 'string') {
    const doc = parseJsonDocument(t.value);
    if ('error' in doc) throw c.err(`${what} is not a valid JSON document: ${doc.error}`, e);
    return { ...t, type: 'json' };
  }
  if (t.type === 'text' || t.type === 'integer' || t.type === 'number') {
    return { pos: t.pos, end: t.end, kind: 'cast', to: 'json', operand: t, type: 'json' } as unknown as TypedExpr;
  }
  throw c.err(`${what} must be a JSON document but is ${article(t.type)} value`, e);
}

/**
 * The type of a value chosen among unified operands (COALESCE, IF, CASE, GREATEST...): the first
 * non-NULL type, except that one number operand makes the result a number, because unify leaves
 * integers untouched when the common type is number.
 */
export function resultType(args: readonly TypedExpr[]): ValueType {
  const types = args.map((a) => a.type).filter((t) => t !== 'null');
  if (types.includes('number')) return 'number';
  return types[0] ?? 'null';
}
