// `order=a.desc.nullslast,b,c.asc.nullsfirst`.
import { invalidOrder, tooComplex, unknownColumn } from './errors.ts';
import type { ColumnInfo } from './values.ts';

export interface OrderItem {
  column: string;
  dir: 'asc' | 'desc';
  nulls: 'first' | 'last' | null;
}

export const MAX_ORDER_ITEMS = 100;

/** Parses one `order` value; each item is `column[.asc|.desc][.nullsfirst|.nullslast]`. */
export function parseOrder(raw: string, columns: ReadonlyMap<string, ColumnInfo>): OrderItem[] {
  const parts = raw.split(',');
  if (parts.length > MAX_ORDER_ITEMS) throw tooComplex('order', 'too_many_order_items', MAX_ORDER_ITEMS);
  const out: OrderItem[] = [];
  for (const part of parts) {
    const t = part.trim();
    if (t === '') throw invalidOrder(raw, 'empty item');
    const bits = t.split('.');
    const name = bits[0]!.trim();
    if (name === '') throw invalidOrder(t, 'empty column name');
    if (bits.length > 3) throw invalidOrder(t, 'expected column[.asc|.desc][.nullsfirst|.nullslast]');
    let dir: 'asc' | 'desc' | null = null;
    let nulls: 'first' | 'last' | null = null;
    for (const m of bits.slice(1).map((b) => b.trim())) {
      if ((m === 'asc' || m === 'desc') && dir === null && nulls === null) dir = m;
      else if ((m === 'nullsfirst' || m === 'nullslast') && nulls === null) nulls = m === 'nullsfirst' ? 'first' : 'last';
      else throw invalidOrder(t, `unknown modifier '${m.length > 40 ? m.slice(0, 40) : m}'`);
    }
    if (!columns.has(name)) throw unknownColumn(name);
    out.push({ column: name, dir: dir ?? 'asc', nulls });
  }
  return out;
}
