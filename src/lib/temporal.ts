// Calendar dates and UTC instants: the one parser for every place a date or timestamp arrives as
// text (row bodies, defaults, filters, key expiry) and the calendar helpers of the policy language.
// Hand-written scanning: no regular expression, nothing that can backtrack.

const isDigit = (c: number): boolean => c >= 48 && c <= 57;

/** Whether `s[from, to)` is one or more ASCII digits. */
function allDigits(s: string, from: number, to: number): boolean {
  if (to <= from) return false;
  for (let i = from; i < to; i++) if (!isDigit(s.charCodeAt(i))) return false;
  return true;
}

export function isLeap(y: number): boolean {
  return (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
}

export function daysInMonth(y: number, m: number): number {
  return [31, isLeap(y) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][m - 1]!;
}

export function utcMillis(y: number, mo: number, d: number, h = 0, mi = 0, s = 0, ms = 0): number {
  const dt = new Date(Date.UTC(2000, mo - 1, d, h, mi, s, ms));
  dt.setUTCFullYear(y);
  return dt.getTime();
}

/** Canonical timestamp text, or undefined outside years 0001-9999. */
export function formatTimestamp(ms: number): string | undefined {
  const dt = new Date(ms);
  const y = dt.getUTCFullYear();
  if (!(y >= 1 && y <= 9999)) return undefined; // also an invalid Date (NaN year)
  return dt.toISOString();
}

export function formatDate(ms: number): string | undefined {
  return formatTimestamp(ms)?.slice(0, 10);
}

function num(s: string, from: number, len: number): number | null {
  return allDigits(s, from, from + len) && from + len <= s.length ? Number(s.slice(from, from + len)) : null;
}

const pad = (n: number, w: number): string => String(n).padStart(w, '0');

/** Reads `YYYY-MM-DD` at the start of `t`; years 0001-9999. */
function readDate(t: string): { y: number; m: number; d: number } | null {
  if (t.length < 10 || t[4] !== '-' || t[7] !== '-') return null;
  const y = num(t, 0, 4);
  const m = num(t, 5, 2);
  const d = num(t, 8, 2);
  if (y === null || m === null || d === null) return null;
  if (y < 1 || m < 1 || m > 12 || d < 1 || d > daysInMonth(y, m)) return null;
  return { y, m, d };
}

/** A calendar date, exactly `YYYY-MM-DD` (surrounding whitespace tolerated). */
export function parseDate(text: string): string | null {
  const t = text.trim();
  if (t.length !== 10) return null;
  const r = readDate(t);
  return r ? `${pad(r.y, 4)}-${pad(r.m, 2)}-${pad(r.d, 2)}` : null;
}

/**
 * An ISO-8601 instant: `YYYY-MM-DD[(T| )HH:MM[:SS[.fraction]][Z|±HH[:MM]|±HHMM]]`. Without an offset the
 * time is UTC (columns hold UTC instants). Fractions beyond milliseconds are truncated. Normalised to
 * `YYYY-MM-DDTHH:MM:SS.sssZ`; results outside years 0001-9999 are rejected.
 *
 * `requireZone`: the text must say its zone (`Z` or an offset). Values that are stored (row bodies,
 * defaults, key expiry) require it; filters accept the shorthand (`at=gte.2026-01-01`, read as UTC).
 */
export function parseTimestamp(text: string, opts: { requireZone?: boolean } = {}): string | null {
  const t = text.trim();
  const date = readDate(t);
  if (!date) return null;
  let i = 10;
  let h = 0;
  let mi = 0;
  let s = 0;
  let ms = 0;
  let offsetMin = 0;
  let zoned = false;
  if (i < t.length) {
    if (t[i] !== 'T' && t[i] !== 't' && t[i] !== ' ') return null;
    i++;
    const hh = num(t, i, 2);
    if (hh === null || t[i + 2] !== ':') return null;
    const mm = num(t, i + 3, 2);
    if (mm === null) return null;
    h = hh;
    mi = mm;
    i += 5;
    if (t[i] === ':') {
      const ss = num(t, i + 1, 2);
      if (ss === null) return null;
      s = ss;
      i += 3;
      if (t[i] === '.' || t[i] === ',') {
        i++;
        const fracStart = i;
        while (i < t.length && isDigit(t.charCodeAt(i))) i++;
        if (i === fracStart) return null;
        ms = Number(t.slice(fracStart, Math.min(i, fracStart + 3)).padEnd(3, '0'));
      }
    }
    if (h > 23 || mi > 59 || s > 59) return null;
    if (i < t.length) {
      const c = t[i];
      zoned = true;
      if ((c === 'Z' || c === 'z') && i + 1 === t.length) {
        i++;
      } else if (c === '+' || c === '-') {
        const sign = c === '+' ? 1 : -1;
        const oh = num(t, i + 1, 2);
        if (oh === null) return null;
        let om = 0;
        const rest = t.slice(i + 3);
        if (rest === '') om = 0;
        else if (rest.length === 3 && rest[0] === ':' && num(rest, 1, 2) !== null) om = Number(rest.slice(1));
        else if (rest.length === 2 && num(rest, 0, 2) !== null) om = Number(rest);
        else return null;
        if (oh > 15 || om > 59) return null;
        offsetMin = sign * (oh * 60 + om);
        i = t.length;
      } else {
        return null;
      }
    }
  }
  if (i !== t.length || (opts.requireZone && !zoned)) return null;
  const d = new Date(0);
  d.setUTCFullYear(date.y, date.m - 1, date.d);
  d.setUTCHours(h, mi, s, ms);
  const ts = d.getTime() - offsetMin * 60_000;
  if (!Number.isFinite(ts)) return null;
  const out = new Date(ts);
  const year = out.getUTCFullYear();
  if (year < 1 || year > 9999) return null;
  return out.toISOString();
}
