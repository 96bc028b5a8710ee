// `Accept: text/csv` (supabase-js `.csv()`): the rows of a read as RFC 4180 CSV, a header line of
// the selected names first, as PostgREST answers it. NULL is an empty field; JSON values are their
// JSON text.
import type { SelectItem } from '../../rest-query/index.ts';

export const CSV_MEDIA = 'text/csv';

/** A field quoted when it holds a separator, a quote, a line break or edge spaces (RFC 4180). */
function field(text: string): string {
  return /[",\r\n]|^\s|\s$/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

const value = (v: unknown, json: boolean): string => (v === null || v === undefined ? '' : json ? JSON.stringify(v) : String(v));

/** `isJson(column)`: whether a column's values are JSON (a JSON string is `"x"`, as its text). */
export function toCsv(items: readonly SelectItem[], rows: readonly Record<string, unknown>[], isJson: (column: string) => boolean): string {
  const json = items.map((i) => isJson(i.column));
  const lines = [items.map((i) => field(i.alias)).join(',')];
  for (const row of rows) lines.push(items.map((i, n) => field(value(row[i.alias], json[n]!))).join(','));
  return `${lines.join('\n')}\n`;
}
