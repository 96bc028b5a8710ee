// Filters in the passthrough's grammar (col=[not.]op.value), built from the filter bar's rows.
import type { Column } from '../../api/types.ts';

export const OPERATORS = [
  ['eq', '='],
  ['neq', '≠'],
  ['gt', '>'],
  ['gte', '≥'],
  ['lt', '<'],
  ['lte', '≤'],
  ['like', 'like'],
  ['ilike', 'ilike'],
  ['in', 'in'],
  ['is', 'is'],
] as const;
export type Operator = (typeof OPERATORS)[number][0];

export const IS_VALUES = ['null', 'not_null', 'true', 'false'] as const;

export interface Filter {
  key: number;
  column: string;
  op: Operator;
  not: boolean;
  value: string;
}

/** An `in` list item, double-quoted when the grammar needs it (commas, parentheses, quotes). */
function listItem(v: string): string {
  const t = v.trim();
  return /[,()"\\\s]/.test(t) || t === '' ? `"${t.replace(/[\\"]/g, (c) => `\\${c}`)}"` : t;
}

export function filterParam(f: Filter): [string, string] {
  const value = f.op === 'in' ? `(${f.value.split(',').map(listItem).join(',')})` : f.value;
  return [f.column, `${f.not ? 'not.' : ''}${f.op}.${value}`];
}

/** Operators that make sense for a column type (the server refuses the rest with a clear 4xx anyway). */
export function operatorsFor(col: Column | undefined): Operator[] {
  if (!col) return OPERATORS.map(([o]) => o);
  if (col.type === 'boolean') return ['eq', 'neq', 'is'];
  if (col.type === 'json') return ['eq', 'neq', 'is'];
  if (col.type === 'text') return ['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'like', 'ilike', 'in', 'is'];
  return ['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'in', 'is'];
}
