// `Accept: text/csv` (supabase-js `.csv()`): the rows of a read as RFC 4180 CSV, a header line of
// the selected names first, as PostgREST answers it. NULL is an empty field, an empty text `""`;
// JSON values are their JSON text.
import type { SelectItem } from '../../rest-query/index.ts';

export const CSV_MEDIA = 'text/csv';

/** A field quoted when it holds a separator, a quote, a line break or edge spaces (RFC 4180). */
function field(text: string): string {
  return /[",\r\n]|^\s|\s$/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/** One value's field. NULL is an empty field and an empty text `""`, so that the two stay apart. */
function cell(v: unknown, json: boolean): string {
  if (v === null || v === undefined) return '';
  if (json) return field(JSON.stringify(v));
  return v === '' ? '""' : field(String(v));
}

/** `isJson(column)`: whether a column's values are JSON (a JSON string is `"x"`, as its text). */
export function toCsv(items: readonly SelectItem[], rows: readonly Record<string, unknown>[], isJson: (column: string) => boolean): string {
  const json = items.map((i) => isJson(i.column));
  const lines = [items.map((i) => field(i.alias)).join(',')];
  for (const row of rows) lines.push(items.map((i, n) => cell(row[i.alias], json[n]!)).join(','));
  return `${lines.join('\n')}\n`;
}

/**
 * Whether an Accept header asks for CSV: `text/csv` with a quality above 0, ranked at least as high
 * as JSON (`application/json`; a later one of equal rank loses), so that `text/csv;q=0` or a
 * generic list with JSON first still reads JSON.
 */
export function wantsCsv(accept: string): boolean {
  // on every read: most ask for no CSV at all
  if (!accept.includes(CSV_MEDIA)) return false;
  let csv = { q: 0, at: -1 };
  let json = { q: 0, at: -1 };
  accept.split(',').forEach((part, at) => {
    const [type = '', ...params] = part.split(';').map((p) => p.trim().toLowerCase());
    const qParam = params.find((p) => p.startsWith('q='));
    const q = qParam === undefined ? 1 : Number(qParam.slice(2));
    if (!(q >= 0 && q <= 1)) return;
    if (type === CSV_MEDIA && q > csv.q) csv = { q, at };
    if (type === 'application/json' && q > json.q) json = { q, at };
  });
  return csv.q > 0 && (csv.q > json.q || (csv.q === json.q && csv.at < json.at));
}
