// Deterministic JS functions registered on every SQLite connection, giving SQLite exactly the
// semantics that the PostgreSQL compiler produces natively. Strings are handled by code point
// (as both engines count characters). Integers arrive as BigInt (safeIntegers).
import type Database from 'better-sqlite3';
import { jsonContains, jsonLength, parseJsonDocument, renderJsonb, type JsonValue } from '../../policy-language/json-value.js';
import { daysInMonth, formatDate, formatTimestamp, parseJsonPath, utcMillis } from '../../policy-language/literals.js';
import { UNIT_SECONDS } from '../../policy-language/compiler.js';
import type { IntervalUnit } from '../../policy-language/ast.js';
import { LIKE_PATTERN_MAX_CHARS } from '../../lib/like-limits.ts';
import { checkSearch } from '../../policy-language/call-bounds.ts';
import { pastDeadline } from './sqlite-deadline.ts';
import { charLength } from '../../lib/validate.ts';

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

/** The UTF-16 length of the code point at `i` (a pair is one character, as Array.from counts). */
const unitsAt = (s: string, i: number) => {
  const c = s.charCodeAt(i);
  return c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00 ? 2 : 1;
};

/** The characters (code points) of s[from, to). */
function countChars(s: string, from: number, to: number): number {
  let n = 0;
  for (let i = from; i < to; i += unitsAt(s, i)) n++;
  return n;
}

/**
 * MySQL LOCATE(sub, s[, pos]), in characters. Searched with indexOf, linear in the text: a search
 * character by character was quadratic, and one call over a 200,000-character column held the
 * thread it ran on for 20 s, which no statement deadline interrupts (a hostile review). A match of
 * a well-formed string starts on a character.
 */
export function locate(sub: string, s: string, pos = 1): number {
  if (pos < 1) return 0;
  let from = 0;
  for (let n = 1; n < pos; n++) {
    if (from >= s.length) return 0;
    from += unitsAt(s, from);
  }
  const at = s.indexOf(sub, from);
  return at < 0 ? 0 : pos + countChars(s, from, at);
}

/** Counts the matcher's work (characters and pattern words visited); tests use it to prove LIKE is linear. */
export const likeStats = { steps: 0 };

/** a pattern item that matches any one character (`_`); other items are code points */
const ANY = -1;

/** the code points of s */
function codePoints(s: string): Int32Array {
  const out = new Int32Array(s.length);
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.codePointAt(i)!;
    out[n++] = c;
    if (c > 0xffff) i++;
  }
  likeStats.steps += s.length;
  return out.subarray(0, n);
}

/** a LIKE pattern piece between two `%`: code points (ANY for `_`) and its shift-and masks */
interface Segment {
  items: Int32Array;
  /** bit j of word j >> 5: item j matches any character */
  any: Uint32Array;
  /** per code point of the segment: the items it matches (any included) */
  masks: Map<number, Uint32Array>;
}

function segment(items: number[]): Segment {
  const any = new Uint32Array((items.length + 31) >> 5);
  const masks = new Map<number, Uint32Array>();
  items.forEach((c, j) => {
    if (c === ANY) any[j >> 5]! |= 1 << (j & 31);
  });
  items.forEach((c, j) => {
    if (c === ANY) return;
    const mask = masks.get(c) ?? any.slice();
    mask[j >> 5]! |= 1 << (j & 31);
    masks.set(c, mask);
  });
  return { items: Int32Array.from(items), any, masks };
}

/** the segments of a lower-cased LIKE pattern between its unescaped `%`; a trailing lone \ is literal */
function likeSegments(pattern: string): Segment[] {
  const p = codePoints(pattern);
  const segments: Segment[] = [];
  let items: number[] = [];
  for (let i = 0; i < p.length; i++) {
    const c = p[i]!;
    if (c === 0x5c /* \ */ && i + 1 < p.length) items.push(p[++i]!);
    else if (c === 0x25 /* % */) {
      segments.push(segment(items));
      items = [];
    } else items.push(c === 0x5f /* _ */ ? ANY : c);
  }
  segments.push(segment(items));
  return segments;
}

/** SQLite calls bp_like once per row with the same pattern: the last one is kept compiled */
let compiled = { pattern: '', fold: false, segments: likeSegments('') };
function segmentsOf(pattern: string, fold: boolean): Segment[] {
  if (compiled.pattern !== pattern || compiled.fold !== fold) compiled = { pattern, fold, segments: likeSegments(fold ? pattern.toLowerCase() : pattern) };
  return compiled.segments;
}

/** does seg match v at position at (which leaves room for it)? */
function matchesAt(v: Int32Array, at: number, seg: Segment): boolean {
  const items = seg.items;
  likeStats.steps += items.length;
  for (let k = 0; k < items.length; k++) if (items[k] !== ANY && items[k] !== v[at + k]) return false;
  return true;
}

/**
 * Leftmost start i in [from, to - |seg|] where seg matches v, or -1. Shift-and: bit j of the state
 * says "seg[0..j] ends here"; one pass over v, ceil(|seg| / 32) word operations per character.
 */
function find(v: Int32Array, seg: Segment, from: number, to: number): number {
  const m = seg.items.length;
  if (m === 0) return from;
  const words = seg.any.length;
  const state = new Uint32Array(words);
  const last = words - 1;
  const done = 1 << ((m - 1) & 31);
  for (let i = from; i < to; i++) {
    const mask = seg.masks.get(v[i]!) ?? seg.any;
    let carry = 1;
    for (let w = 0; w < words; w++) {
      const s = state[w]!;
      state[w] = ((s << 1) | carry) & mask[w]!;
      carry = s >>> 31;
    }
    likeStats.steps += words;
    if (state[last]! & done) return i - m + 1;
  }
  return -1;
}

/**
 * LIKE (on lower-cased operands unless `fold` is false): % any run, _ one character, \ escapes; a
 * trailing lone \ is literal.
 * The first segment must match at the start, the last at the end, and each one between at its
 * leftmost place after the previous one (taking the leftmost match never loses a match that a later
 * one would allow). Cost: O(|value| * ceil(|pattern| / 32)), linear for a bounded pattern.
 */
export function like(value: string, pattern: string, fold = true): boolean {
  const segs = segmentsOf(pattern, fold);
  const v = codePoints(fold ? value.toLowerCase() : value);
  const first = segs[0]!;
  const last = segs[segs.length - 1]!;
  if (segs.length === 1) return v.length === first.items.length && matchesAt(v, 0, first);
  const end = v.length - last.items.length;
  if (first.items.length > end || !matchesAt(v, 0, first) || !matchesAt(v, end, last)) return false;
  let pos = first.items.length;
  for (let k = 1; k < segs.length - 1; k++) {
    const at = find(v, segs[k]!, pos, end);
    if (at < 0) return false;
    pos = at + segs[k]!.items.length;
  }
  return true;
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

/** A statement past its deadline, as SQLite reports one (sqlite-db.ts: QueryTimeout; the inline attempt's cue to move on) */
const interrupted = () => Object.assign(new Error('interrupted'), { code: 'SQLITE_INTERRUPT' });

/**
 * The last document read on this thread, kept for its statement: a row's policies read the same
 * column again and again, and 100 JSON_EXTRACT of one 1 MB document parsed it 100 times, 60 ms
 * each (a hostile review). Weakly: a statement runs in one JavaScript job, which keeps what it
 * dereferenced alive, and the parsed tree (tens of MB for a large document) is not held after it.
 * Read values are never changed.
 */
let lastJson: { text: string; value: WeakRef<object> | JsonValue } | null = null;

/** Documents parsed on this thread (tests count them) */
export const jsonStats = { parses: 0 };

function json(text: V): JsonValue {
  const s = String(text);
  if (lastJson?.text === s) {
    const kept = lastJson.value instanceof WeakRef ? (lastJson.value.deref() as JsonValue | undefined) : lastJson.value;
    if (kept !== undefined) return kept;
  }
  jsonStats.parses++;
  const r = parseJsonDocument(s);
  if ('error' in r) throw new Error(`malformed JSON: ${r.error}`);
  // a container weakly; a scalar document is small
  const v = r.value;
  lastJson = { text: s, value: v !== null && typeof v === 'object' && !('num' in v) ? new WeakRef(v) : v };
  return v;
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

type SqlFunction = (...a: V[]) => V;

function sqlFunctions(): [string, SqlFunction][] {
  const out: [string, SqlFunction][] = [];
  const fn = (name: string, f: (...a: V[]) => V | boolean) =>
    out.push([name, (...a: V[]) => {
      if (pastDeadline()) throw interrupted();
      const r = f(...a);
      return typeof r === 'boolean' ? (r ? 1 : 0) : r;
    }]);
  fn('bp_lower', (s) => (s === null ? null : String(s).toLowerCase()));
  fn('bp_upper', (s) => (s === null ? null : String(s).toUpperCase()));
  // a pattern beyond the shared bound matches nothing (NULL), as the PostgreSQL policy compiler's guard
  // bp_like(value, pattern[, fold = 1]): the policy language's LIKE and the REST ilike fold case; the REST like does not
  fn('bp_like', (v, p, fold) => (anyNull(v, p) || charLength(String(p)) > LIKE_PATTERN_MAX_CHARS ? null : like(String(v), String(p), fold !== 0n)));
  fn('bp_substring', (...a) => (anyNull(...a) ? null : substring(String(a[0]), num(a[1]!), a.length > 2 ? num(a[2]!) : undefined)));
  fn('bp_left', (s, n) => (anyNull(s, n) ? null : num(n) < 1 ? '' : chars(String(s)).slice(0, num(n)).join('')));
  fn('bp_right', (s, n) => (anyNull(s, n) ? null : num(n) < 1 ? '' : chars(String(s)).slice(-num(n)).join('')));
  fn('bp_locate', (...a) => {
    if (anyNull(...a)) return null;
    checkSearch(String(a[0]), String(a[1]));
    return locate(String(a[0]), String(a[1]), a.length > 2 ? num(a[2]!) : 1);
  });
  fn('bp_replace', (s, from, to) => {
    if (anyNull(s, from, to)) return null;
    checkSearch(String(from), String(s));
    return from === '' ? String(s) : String(s).split(String(from)).join(String(to));
  });
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
  });
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
  fn('bp_to_json', (v) => {
    if (v === null || v === undefined) return null;
    if (typeof v === 'string') return JSON.stringify(v);
    return typeof v === 'number' && !Number.isFinite(v) ? null : String(v);
  });
  fn('bp_json_contains', (t, c) => (anyNull(t, c) ? null : jsonContains(json(t), json(c))));
  return out;
}

// varargs: the wrapper's own arity would otherwise be taken as the function's
const OPTIONS = { deterministic: true, safeIntegers: true, varargs: true };
// wrapped once per thread and shared by its connections: functions created afresh for each
// connection make registering them about five times as costly, and project files open often
const FUNCTIONS = sqlFunctions();

/** The error bp_assert throws: translated where the engine translates driver errors (sqlite-db.ts). */
export const ASSERTION_CODE = 'BP_ASSERT';

/**
 * bp_assert(ok, failure): 1, or the statement fails with `failure` (Dialect.assertTrue). Not
 * deterministic, so that SQLite never evaluates it once up front for a constant condition, as it
 * may a deterministic function, even when the statement writes no row.
 */
function assertTrue(ok: V, failure: V): 1 {
  if (ok !== null && Number(ok) === 1) return 1;
  throw Object.assign(new Error(String(failure)), { code: ASSERTION_CODE });
}

export function registerSqliteFunctions(db: Database.Database): void {
  for (const [name, f] of FUNCTIONS) db.function(name, OPTIONS, f);
  db.function('bp_assert', { safeIntegers: true }, assertTrue);
}
