// `select=a,b,alias:c` and `*`. Casts, embedded resources and JSON paths are refused.
import { invalidSelect, tooComplex, unknownColumn } from './errors.ts';
import type { ColumnInfo } from './values.ts';

export interface SelectItem {
  column: string;
  alias: string;
}

/** Output names (aliases): a plain identifier, like a column name but mixed case allowed. */
const ALIAS = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;
export const MAX_SELECT_ITEMS = 500;

/**
 * Parses a select list. Returns null for "all columns" (`*`, empty, or `*` plus redundant plain
 * columns); `*` plus aliased items expands `*` to every column in table order, then the extras.
 */
export function parseSelect(raw: string, columns: readonly ColumnInfo[]): SelectItem[] | null {
  if (raw.trim() === '') return null;
  const byName = new Map(columns.map((c) => [c.name, c] as const));
  const parts = raw.split(',');
  if (parts.length > MAX_SELECT_ITEMS) throw tooComplex('select', 'too_many_select_items', MAX_SELECT_ITEMS);
  let star = false;
  const items: SelectItem[] = [];
  for (const part of parts) {
    const t = part.trim();
    if (t === '') throw invalidSelect(raw, 'empty item');
    if (t === '*') {
      star = true;
      continue;
    }
    if (t.includes('::')) throw invalidSelect(t, 'casts are not supported');
    if (t.includes('(') || t.includes(')')) throw invalidSelect(t, 'embedded resources are not supported');
    if (t.includes('->')) throw invalidSelect(t, 'JSON paths are not supported');
    if (t.startsWith('...')) throw invalidSelect(t, 'spreads are not supported');
    const colon = t.indexOf(':');
    let alias: string;
    let name: string;
    if (colon >= 0) {
      alias = t.slice(0, colon).trim();
      name = t.slice(colon + 1).trim();
      if (!ALIAS.test(alias)) throw invalidSelect(t, 'an alias must be an identifier: [A-Za-z_][A-Za-z0-9_]*');
      // assigning `__proto__` on a plain object (a client's row) replaces its prototype
      if (alias === '__proto__') throw invalidSelect(t, "'__proto__' cannot be an output name");
      if (name === '') throw invalidSelect(t, 'missing column after the alias');
    } else {
      alias = name = t;
    }
    if (!byName.has(name)) throw unknownColumn(name);
    items.push({ column: name, alias });
  }
  const out: SelectItem[] = star ? columns.map((c) => ({ column: c.name, alias: c.name })) : [];
  const seen = new Set(out.map((i) => i.alias));
  let extras = 0;
  for (const item of items) {
    if (star && item.alias === item.column) continue; // `*,a`: a is already there
    if (seen.has(item.alias)) throw invalidSelect(item.alias, `duplicate output name '${item.alias}'`);
    seen.add(item.alias);
    out.push(item);
    extras++;
  }
  if (star && extras === 0) return null;
  return out;
}
