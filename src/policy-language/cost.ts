// What one row's policies may cost. PostgreSQL checks for cancellation between rows, never inside
// one row's expression, and the embedded engine's functions are single calls, so a row whose
// policies call a bounded but costly function many times runs to its end past any statement
// timeout: 181 JSON_CONTAINS in one expression held a backend 7.5 s past a 1 s timeout (a hostile
// review), and a table may have many policies. Each call of a function whose work grows with its
// text or document weighs about the milliseconds its worst input costs on PostgreSQL here (inputs
// are bounded: 1 MiB texts, documents PostgreSQL prints within 4 MiB, call-bounds.ts); a table's
// policies together may weigh at most MAX_POLICY_COST, checked when a policy is created or changed.
import type { Expr, TypedExpr } from './ast.js';

type AnyExpr = Expr | TypedExpr;

export const MAX_POLICY_COST = 2000;

/** Worst-case weight of one call, by function; calls not named here (numbers, dates, NULL handling) weigh nothing. */
const CALL_COST: Readonly<Record<string, number>> = {
  JSON_CONTAINS: 100, // CONTAINS_MAX_PRODUCT, and the length of both documents' text
  LOCATE: 40, // SEARCH_MAX_PRODUCT
  REPLACE: 40,
  JSON_EXTRACT: 20, // the whole document read (embedded) or rendered (PostgreSQL)
  JSON_UNQUOTE: 20,
  JSON_LENGTH: 20,
  LOWER: 10, // Unicode case mapping of up to 1 MiB
  UPPER: 10,
  CONCAT: 5,
  SUBSTRING: 5,
  LEFT: 5,
  RIGHT: 5,
  TRIM: 5,
  LENGTH: 5,
  CHAR_LENGTH: 5,
  FIND_IN_SET: 5,
};
/** LIKE folds the case of both sides before it matches */
const LIKE_COST = 20;

/**
 * A call's weight. Checked, JSON_CONTAINS(doc, c, path) and JSON_LENGTH(doc, path) read the path
 * through a JSON_EXTRACT of their own (validate-functions.ts); only parsed (a policy that no longer
 * fits its table), they have the path among their arguments and weigh it too.
 */
function callCost(name: string, args: number): number {
  const withPath = (name === 'JSON_CONTAINS' && args === 3) || (name === 'JSON_LENGTH' && args === 2);
  return (CALL_COST[name] ?? 0) + (withPath ? CALL_COST.JSON_EXTRACT! : 0);
}

/** The weight of an expression, checked or only parsed: the sum of its calls' weights, every branch counted. */
export function policyCost(e: AnyExpr): number {
  let cost = e.kind === 'call' ? callCost(e.name, e.args.length) : e.kind === 'like' ? LIKE_COST : 0;
  for (const child of children(e)) cost += policyCost(child);
  return cost;
}

function children(e: AnyExpr): AnyExpr[] {
  const out: AnyExpr[] = [];
  const add = (v: unknown) => {
    if (Array.isArray(v)) v.forEach(add);
    else if (isNode(v)) out.push(v);
    else if (v !== null && typeof v === 'object' && 'when' in v && 'then' in v) [v.when, v.then].forEach(add);
  };
  for (const v of Object.values(e)) add(v);
  return out;
}

const isNode = (v: unknown): v is AnyExpr => v !== null && typeof v === 'object' && 'kind' in v && typeof (v as { kind: unknown }).kind === 'string';
