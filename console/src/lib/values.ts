// Row values in forms: each column type's input text and its JSON value. The server checks every
// value again and names the column when it refuses one; these checks only spare a round trip.
import type { ColumnType } from '../api/types.ts';

export type Parsed = { ok: true; value: unknown } | { ok: false; message: string };

/** The text an input shows for a stored value. */
export function toInput(type: ColumnType, value: unknown): string {
  if (value === null || value === undefined) return '';
  switch (type) {
    case 'json':
      return JSON.stringify(value, null, 2);
    case 'timestamp':
      // datetime-local without a zone, read and written as UTC
      return typeof value === 'string' ? value.replace(/Z$/, '').slice(0, 23) : String(value);
    default:
      return String(value);
  }
}

export function fromInput(type: ColumnType, text: string): Parsed {
  switch (type) {
    case 'text':
      return { ok: true, value: text };
    case 'integer':
      // the range (JSON's safe integers) is the server's to check: it names the column
      if (!/^-?\d+$/.test(text.trim())) return { ok: false, message: 'Enter a whole number.' };
      return { ok: true, value: Number(text) };
    case 'number': {
      const n = Number(text);
      if (text.trim() === '' || !Number.isFinite(n)) return { ok: false, message: 'Enter a number.' };
      return { ok: true, value: n };
    }
    case 'boolean':
      if (text === 'true' || text === 'false') return { ok: true, value: text === 'true' };
      return { ok: false, message: 'Choose true or false.' };
    case 'timestamp':
      if (text.trim() === '') return { ok: false, message: 'Enter a date and time.' };
      return { ok: true, value: /(Z|[+-]\d\d:\d\d)$/.test(text) ? text : `${text}Z` };
    case 'date':
      if (text.trim() === '') return { ok: false, message: 'Enter a date.' };
      return { ok: true, value: text };
    case 'json':
      try {
        return { ok: true, value: JSON.parse(text) };
      } catch (err) {
        return { ok: false, message: `Not valid JSON: ${(err as Error).message}` };
      }
  }
}

/** The default markers a column type accepts (CONTRACT §3). */
export function markersFor(type: ColumnType): string[] {
  if (type === 'timestamp' || type === 'date') return ['now()'];
  if (type === 'integer') return ['$auth.id'];
  if (type === 'text') return ['$auth.email'];
  return [];
}

export function describeDefault(value: unknown): string {
  if (value === null || value === undefined) return '';
  return typeof value === 'string' && (value === 'now()' || value.startsWith('$auth.')) ? value : JSON.stringify(value);
}
