// The passthrough's filter tree as a policy expression, so that one compiler (the engine's policy
// compiler) writes the SQL of REST filters and of policies alike. The tree's columns are already
// checked and its values coerced to their columns' types, so each condition maps onto typed nodes
// directly: columns become column nodes (quoted by the compiler), values become literals (bound
// parameters), and no text of the request reaches the SQL.
import type { ColumnType, ComparisonOp, TypedExpr } from '../policy-language/index.ts';
import { canonicalJson } from '../lib/jsonb.ts';
import type { Filter } from './filter-parser.ts';
import type { FilterOp, IsValue, Value } from './values.ts';

type Cond = Filter & { kind: 'cond' };

// spans locate policy source text in error messages; a translated tree has none and is never validated
const AT = { pos: 0, end: 0 };

const COMPARISONS: Record<Exclude<FilterOp, 'in' | 'is' | 'like' | 'ilike'>, ComparisonOp> = {
  eq: '=', neq: '<>', gt: '>', gte: '>=', lt: '<', lte: '<=',
};

/** `types`: the table's columns (id included); a column outside it is an internal error. */
export function filterToPolicy(filter: Filter, types: ReadonlyMap<string, ColumnType>): TypedExpr {
  const node: TypedExpr =
    filter.kind === 'cond'
      ? condition(filter, types)
      : { ...AT, kind: 'logical', op: filter.kind === 'and' ? 'AND' : 'OR', operands: filter.items.map((f) => filterToPolicy(f, types)), type: 'boolean' };
  return filter.negated ? { ...AT, kind: 'unary', op: 'NOT', operand: node, type: 'boolean' } : node;
}

function condition(f: Cond, types: ReadonlyMap<string, ColumnType>): TypedExpr {
  const type = types.get(f.column);
  if (type === undefined) throw new Error(`internal: a filter names '${f.column}', which is not a column of the table`);
  const column: TypedExpr = { ...AT, kind: 'column', name: f.column, type };
  const bool = { ...AT, negated: false, type: 'boolean' } as const;
  switch (f.op) {
    case 'is':
      return isTest(column, f.value as IsValue);
    case 'in':
      return { ...bool, kind: 'in', operand: column, list: (f.value as Value[]).map((v) => literal(type, v)) };
    case 'like':
    case 'ilike':
      return { ...bool, kind: 'like', operand: column, pattern: literal('text', f.value as Value), caseSensitive: f.op === 'like' };
    default:
      return { ...AT, kind: 'compare', op: COMPARISONS[f.op], left: column, right: literal(type, f.value as Value), type: 'boolean' };
  }
}

function isTest(operand: TypedExpr, v: IsValue): TypedExpr {
  const node = { ...AT, kind: 'is', operand, type: 'boolean' } as const;
  if (v === 'true' || v === 'false') return { ...node, test: v === 'true' ? 'TRUE' : 'FALSE', negated: false };
  // `unknown` is the boolean NULL
  return { ...node, test: 'NULL', negated: v === 'not_null' };
}

/** A coerced value (values.ts: never null) as a literal of its column's type. */
function literal(type: ColumnType, v: Value): TypedExpr {
  switch (type) {
    case 'integer':
      return { ...AT, kind: 'literal', valueType: 'integer', value: BigInt(v as number), type };
    case 'number':
      return { ...AT, kind: 'literal', valueType: 'number', value: v as number, type };
    case 'boolean':
      return { ...AT, kind: 'literal', valueType: 'boolean', value: v as boolean, type };
    case 'timestamp':
    case 'date':
      return { ...AT, kind: 'literal', valueType: type, value: v as string, type };
    case 'text':
      return { ...AT, kind: 'literal', valueType: 'string', value: v as string, type };
    case 'json':
      // SQLite compares json as text, and stores it canonical (column-values.ts): so is the value
      return { ...AT, kind: 'literal', valueType: 'string', value: canonicalJson(JSON.parse(v as string)), type };
  }
}
