// Deterministic JS functions registered on every SQLite connection, giving SQLite exactly the
// semantics that the PostgreSQL compiler produces natively. Strings are handled by code point
// (as both engines count characters). Integers arrive as BigInt (safeIntegers).
import type Database from 'better-sqlite3';
import { jsonContains, jsonLength, parseJsonDocument, renderJsonb, type JsonValue } from './json-value.js';
import { daysInMonth, formatDate, formatTimestamp, parseJsonPath, utcMillis } from './literals.js';
import { UNIT_SECONDS } from './compiler.js';
import type { IntervalUnit } from './ast.js';

type V = null | number | bigint | string | Buffer;
const chars = (s: string) => Array.from(s);
const num = (v: V) => (typeof v === 'bigint' ? Number(v) : (v as number));
const anyNull = (...a: V[]) => a.some((x) => x === null || x === undefined);

/** MySQL SUBSTRING(s, pos[, len]) */
export function substring(s: string, pos: number, len?: number): string {
  const cs = chars(s);
  let start: number;
  if (pos > 0) start = pos - 1;
  else if (pos < 0) {
    if (-pos > cs.length) return '';
    start = cs.length + pos;
  } else return '';
  if (len !== undefined && len < 1) return '';
  return cs.slice(start, len === undefined ? undefined : start + len).join('');
}

/** MySQL LOCATE(sub, s[, pos]) */
export function locate(sub: string, s: string, pos = 1): number {
  if (pos < 1) return 0;
  const cs = chars(s);
  const cu = chars(sub);
  if (pos - 1 > cs.length) return 0;
  outer: for (let i = pos - 1; i + cu.length <= cs.length; i++) {
    for (let k = 0; k < cu.length; k++) if (cs[i + k] !== cu[k]) continue outer;
    return i + 1;
  }
  return 0;
}

/** LIKE on lower-cased operands: % any run, _ one character, \ escapes; a trailing lone \ is literal */
export function like(value: string, pattern: string): boolean {
  const v = chars(value.toLowerCase());
  const p: { c: string; lit: boolean }[] = [];
  const pc = chars(pattern.toLowerCase());
  for (let i = 0; i < pc.length; i++) {
    if (pc[i] === '\\' && i + 1 < pc.length) p.push({ c: pc[++i]!, lit: true });
    else p.push({ c: pc[i]!, lit: pc[i] === '\\' });
  }
  // iterative wildcard matching with single backtrack point: O(|v| * |p|) worst case
  let vi = 0, pi = 0, star = -1, mark = 0;
  while (vi < v.length) {
    const t = p[pi];
    if (t && !t.lit && t.c === '%') {
      star = pi++;
      mark = vi;
    } else if (t && ((!t.lit && t.c === '_') || t.c === v[vi])) {
      vi++;
      pi++;
    } else if (star >= 0) {
      pi = star + 1;
      vi = ++mark;
    } else return false;
  }
  while (p[pi] && !p[pi]!.lit && p[pi]!.c === '%') pi++;
  return pi === p.length;
}

/** PostgreSQL round(x::numeric, d)::float8: x read with 15 significant digits, half away from zero */
export function roundNumber(x: number, d: number): number {
  if (!Number.isFinite(x)) return x;
  const [mant, expPart] = Math.abs(x).toPrecision(15).split('e');
  const [ip, fp = ''] = mant!.split('.');
  const digits = BigInt(ip! + fp);
  const scale = fp.length - Number(expPart ?? 0); // |x| = digits * 10^-scale
  if (scale - d > 400) return 0; // |x| < 10^309: rounds to 0 (and 10n ** huge would not finish)
  let out: string;
  if (scale <= d) out = `${digits}e${-scale}`;
  else {
    const p = 10n ** BigInt(scale - d);
    let q = digits / p;
    if ((digits % p) * 2n >= p) q += 1n;
    out = `${q}e${-d}`;
  }
  const r = Number(out) * Math.sign(x);
  return r === 0 ? 0 : r;
}

export function roundInteger(x: bigint, d: number): bigint {
  if (d >= 0) return x;
  if (-d > 19) return 0n;
  const p = 10n ** BigInt(-d);
  const sign = x < 0n ? -1n : 1n;
  const ax = x * sign;
  let q = ax / p;
  if ((ax % p) * 2n >= p) q += 1n;
  return q * p * sign;
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const fitInt = (r: bigint) => (r < INT64_MIN || r > INT64_MAX ? null : r);
const toBig = (v: V) => (typeof v === 'bigint' ? v : Number.isFinite(Number(v)) ? BigInt(Math.trunc(Number(v))) : null);

/** checked 64-bit integer arithmetic: NULL outside the signed 64-bit range */
export function intOp(op: string, a: bigint, b: bigint): bigint | null {
  if (op === '+') return fitInt(a + b);
  if (op === '-') return fitInt(a - b);
  if (op === '*') return fitInt(a * b);
  if (op === 'abs') return fitInt(a < 0n ? -a : a);
  throw new Error(`bp_int: unknown operator ${op}`);
}

/** double arithmetic: ±Infinity/NaN is NULL, a product or quotient below the smallest normal double is 0 */
export function numOp(op: string, a: number, b: number): number | null {
  const r = op === '+' ? a + b : op === '-' ? a - b : op === '*' ? a * b : b === 0 ? NaN : a / b;
  if (!Number.isFinite(r)) return null;
  return (op === '*' || op === '/') && Math.abs(r) < 2 ** -1022 ? 0 : r;
}

const parseTs = (s: string) => Date.parse(s.length === 10 ? `${s}T00:00:00.000Z` : s);

function addMonths(ms: number, months: number): number {
  const d = new Date(ms);
  const total = d.getUTCFullYear() * 12 + d.getUTCMonth() + months;
  const y = Math.floor(total / 12);
  const m = total - y * 12 + 1;
  const day = Math.min(d.getUTCDate(), daysInMonth(y, m));
  return utcMillis(y, m, day, d.getUTCHours(), d.getUTCMinutes(), d.getUTCSeconds(), d.getUTCMilliseconds());
}

/** date/timestamp + n units; MONTH/YEAR clamp to the month's last day (as PostgreSQL and MySQL) */
export function dateAdd(value: string, n: number, unit: IntervalUnit): string | null {
  const ms = parseTs(value);
  if (Number.isNaN(ms) || !(Math.abs(n) <= 1e12)) return null; // beyond 1e12 units: surely outside 0001-9999
  const out =
    unit === 'MONTH' ? addMonths(ms, n) : unit === 'YEAR' ? addMonths(ms, n * 12) : ms + n * UNIT_SECONDS[unit] * 1000;
  return (value.length === 10 ? formatDate(out) : formatTimestamp(out)) ?? null;
}

/** MySQL TIMESTAMPDIFF: whole units from a to b, truncated toward zero */
export function timestampDiff(unit: IntervalUnit, a: string, b: string): number | null {
  const ta = parseTs(a);
  const tb = parseTs(b);
  if (Number.isNaN(ta) || Number.isNaN(tb)) return null;
  if (unit !== 'MONTH' && unit !== 'YEAR') {
    const diff = tb - ta;
    // the compiler passes fixed units as their length in seconds
    const u = (/^\d+$/.test(unit) ? Number(unit) : UNIT_SECONDS[unit]) * 1000;
    return (diff - (diff % u)) / u;
  }
  const da = new Date(ta);
  const db = new Date(tb);
  let months = (db.getUTCFullYear() - da.getUTCFullYear()) * 12 + db.getUTCMonth() - da.getUTCMonth();
  const rest = (d: Date, t: number) => t - utcMillis(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
  const ra = rest(da, ta);
  const rb = rest(db, tb);
  if (months > 0 && rb < ra) months--;
  else if (months < 0 && rb > ra) months++;
  return unit === 'MONTH' ? months : Math.trunc(months / 12);
}

function json(text: V): JsonValue {
  const r = parseJsonDocument(String(text));
  if ('error' in r) throw new Error(`malformed JSON: ${r.error}`);
  return r.value;
}

/** navigates a JSON document like jsonb (last duplicate key wins); undefined when absent */
export function jsonExtract(doc: JsonValue, path: string): JsonValue | undefined {
  const steps = parseJsonPath(path);
  if (typeof steps === 'string') throw new Error(`invalid JSON path: ${steps}`);
  let v: JsonValue | undefined = doc;
  for (const s of steps) {
    if ('index' in s) v = Array.isArray(v) ? v[s.index] : undefined;
    else v = v instanceof Map ? v.get(s.key) : undefined;
    if (v === undefined) return undefined;
  }
  return v;
}

export function registerSqliteFunctions(db: Database.Database): void {
  const opts = { deterministic: true, safeIntegers: true };
  // varargs: the wrapper's own arity would otherwise be taken as the function's
  const fn = (name: string, f: (...a: V[]) => V | boolean, _varargs = false) =>
    db.function(name, { ...opts, varargs: true }, (...a: V[]) => {
      const r = f(...a);
      return typeof r === 'boolean' ? (r ? 1 : 0) : r;
    });
  fn('bp_lower', (s) => (s === null ? null : String(s).toLowerCase()));
  fn('bp_upper', (s) => (s === null ? null : String(s).toUpperCase()));
  fn('bp_like', (v, p) => (anyNull(v, p) ? null : like(String(v), String(p))));
  fn('bp_substring', (...a) => (anyNull(...a) ? null : substring(String(a[0]), num(a[1]!), a.length > 2 ? num(a[2]!) : undefined)), true);
  fn('bp_left', (s, n) => (anyNull(s, n) ? null : num(n) < 1 ? '' : chars(String(s)).slice(0, num(n)).join('')));
  fn('bp_right', (s, n) => (anyNull(s, n) ? null : num(n) < 1 ? '' : chars(String(s)).slice(-num(n)).join('')));
  fn('bp_locate', (...a) => (anyNull(...a) ? null : locate(String(a[0]), String(a[1]), a.length > 2 ? num(a[2]!) : 1)), true);
  fn('bp_find_in_set', (s, list) => {
    if (anyNull(s, list)) return null;
    if (list === '') return 0;
    return String(list).split(',').indexOf(String(s)) + 1;
  });
  fn('bp_int', (op, a, b) => {
    const [x, y] = [a, b].map((v) => (v === null ? null : toBig(v)));
    return x === null || y === null ? null : intOp(String(op), x!, y!);
  });
  fn('bp_num', (op, a, b) => (anyNull(a, b) ? null : numOp(String(op), num(a), num(b))));
  fn('bp_round', (...a) => {
    const r = anyNull(...a) ? null : roundNumber(num(a[0]!), a.length > 1 ? num(a[1]!) : 0);
    return r === null || Number.isFinite(r) ? r : null;
  }, true);
  fn('bp_round_int', (x, d) => (anyNull(x, d) || toBig(x) === null ? null : fitInt(roundInteger(toBig(x)!, num(d)))));
  fn('bp_date_add', (v, n, unit) => (anyNull(v, n) ? null : dateAdd(String(v), num(n), String(unit) as IntervalUnit)));
  fn('bp_timestampdiff', (unit, a, b) => (anyNull(a, b) ? null : timestampDiff(String(unit) as IntervalUnit, String(a), String(b))));
  fn('bp_json_extract', (j, p) => {
    if (anyNull(j, p)) return null;
    const v = jsonExtract(json(j), String(p));
    return v === undefined ? null : renderJsonb(v);
  });
  fn('bp_json_unquote', (j) => (j === null ? null : renderJsonb(json(j), true)));
  fn('bp_json_length', (j) => (j === null ? null : jsonLength(json(j))));
  fn('bp_json_contains', (t, c) => (anyNull(t, c) ? null : jsonContains(json(t), json(c))));
}
