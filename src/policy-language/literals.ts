// Reading string literals as dates/times and as JSON paths. Shared by the validator and compilers.
import { daysInMonth, formatDate, formatTimestamp, utcMillis } from '../lib/temporal.ts';

export { daysInMonth, formatDate, formatTimestamp, utcMillis };

export interface TemporalLiteral {
  type: 'timestamp' | 'date';
  /** canonical text: 'YYYY-MM-DD' or 'YYYY-MM-DDTHH:MM:SS.sssZ' */
  value: string;
}

const TEMPORAL_RE =
  /^(\d{4})-(\d{2})-(\d{2})(?:[ T](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,3}))?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

/** Parses a date or date-time literal; undefined if the text is not a valid one (years 0001-9999). */
export function parseTemporal(text: string): TemporalLiteral | undefined {
  const m = TEMPORAL_RE.exec(text);
  if (!m) return undefined;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (y < 1 || mo < 1 || mo > 12 || d < 1 || d > daysInMonth(y, mo)) return undefined;
  if (m[4] === undefined) return { type: 'date', value: `${m[1]}-${m[2]}-${m[3]}` };
  const [h, mi, s] = [Number(m[4]), Number(m[5]), Number(m[6] ?? 0)];
  if (h > 23 || mi > 59 || s > 59) return undefined;
  const ms = Number((m[7] ?? '').padEnd(3, '0'));
  let offsetMin = 0;
  if (m[8] && m[8] !== 'Z') {
    const sign = m[8][0] === '-' ? -1 : 1;
    const digits = m[8].slice(1).replace(':', '');
    const oh = Number(digits.slice(0, 2));
    const om = Number(digits.slice(2));
    if (oh > 23 || om > 59) return undefined;
    offsetMin = sign * (oh * 60 + om);
  }
  const t = utcMillis(y, mo, d, h, mi, s, ms) - offsetMin * 60000;
  const value = formatTimestamp(t);
  if (value === undefined) return undefined;
  return { type: 'timestamp', value };
}

/** One step of a JSON path: an object member or an array element. */
export type JsonPathStep = { key: string } | { index: number };

/**
 * Parses `$`, `$.key`, `$."quoted key"`, `$[0]` and combinations. Wildcards, negative indexes and
 * ranges are not supported. Returns an error message instead of throwing.
 */
export function parseJsonPath(path: string): JsonPathStep[] | string {
  if (path[0] !== '$') return 'a JSON path must start with "$"';
  const steps: JsonPathStep[] = [];
  let i = 1;
  while (i < path.length) {
    const c = path[i];
    if (c === '.') {
      i++;
      if (path[i] === '"') {
        const close = path.indexOf('"', i + 1);
        if (close < 0) return 'unterminated quoted key';
        const key = path.slice(i + 1, close);
        if (key === '' || key.includes('\\')) return 'quoted keys must be non-empty and contain no backslash';
        steps.push({ key });
        i = close + 1;
      } else {
        const m = /^[A-Za-z_][A-Za-z0-9_]*/.exec(path.slice(i));
        if (!m) return `invalid key at offset ${i}`;
        steps.push({ key: m[0] });
        i += m[0].length;
      }
    } else if (c === '[') {
      const m = /^\[(\d{1,9})\]/.exec(path.slice(i));
      if (!m) return `invalid array index at offset ${i}`;
      steps.push({ index: Number(m[1]) });
      i += m[0].length;
    } else {
      return `unexpected "${c}" at offset ${i}`;
    }
  }
  return steps;
}

/** The canonical path text (valid for SQLite's JSON functions and PostgreSQL's jsonpath alike). */
export function jsonPathText(steps: JsonPathStep[]): string {
  return (
    '$' +
    steps
      .map((s) => ('index' in s ? `[${s.index}]` : /^[A-Za-z_][A-Za-z0-9_]*$/.test(s.key) ? `.${s.key}` : `."${s.key}"`))
      .join('')
  );
}
