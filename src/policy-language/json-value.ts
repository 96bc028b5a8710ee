// A small JSON reader that keeps numbers exact (as decimal text), and the operations that the
// SQLite functions need to behave exactly like PostgreSQL's jsonb: text rendering (`#>> '{}'`),
// containment (`@>`), and length.
import { jsonbKeyOrder } from '../lib/jsonb.ts';

export type JsonValue =
  | null
  | boolean
  | string
  | { num: string } // canonical numeric text, as PostgreSQL's numeric would print it
  | JsonValue[]
  | Map<string, JsonValue>;

/**
 * The largest exponent a number may be written with: far beyond any double's (±324), and within
 * what PostgreSQL's numeric reads (`1e131072` and `1e-16384` overflow it: a policy literal or a
 * filter value holding one failed every read there, 500, while SQLite answered).
 */
export const MAX_EXPONENT = 1000;

/** Parses a JSON document; reports an error message instead of throwing. */
export function parseJsonDocument(text: string): { value: JsonValue } | { error: string } {
  try {
    const r = new Reader(text);
    r.ws();
    const value = r.value(0);
    r.ws();
    if (r.i !== text.length) return { error: `unexpected text at offset ${r.i}` };
    return { value };
  } catch (e) {
    return { error: (e as Error).message };
  }
}

class Reader {
  i = 0;
  constructor(private readonly s: string) {}
  ws() {
    while (this.i < this.s.length && ' \t\n\r'.includes(this.s[this.i]!)) this.i++;
  }
  fail(msg: string): never {
    throw new Error(`${msg} at offset ${this.i}`);
  }
  value(depth: number): JsonValue {
    if (depth > 500) this.fail('document nested too deeply');
    const c = this.s[this.i];
    if (c === '{') {
      this.i++;
      const m = new Map<string, JsonValue>();
      this.ws();
      if (this.s[this.i] === '}') {
        this.i++;
        return m;
      }
      for (;;) {
        this.ws();
        if (this.s[this.i] !== '"') this.fail('expected a key');
        const k = this.string();
        this.ws();
        if (this.s[this.i++] !== ':') this.fail('expected ":"');
        this.ws();
        m.delete(k); // jsonb keeps the last duplicate
        m.set(k, this.value(depth + 1));
        this.ws();
        const d = this.s[this.i++];
        if (d === '}') return m;
        if (d !== ',') this.fail('expected "," or "}"');
      }
    }
    if (c === '[') {
      this.i++;
      const a: JsonValue[] = [];
      this.ws();
      if (this.s[this.i] === ']') {
        this.i++;
        return a;
      }
      for (;;) {
        this.ws();
        a.push(this.value(depth + 1));
        this.ws();
        const d = this.s[this.i++];
        if (d === ']') return a;
        if (d !== ',') this.fail('expected "," or "]"');
      }
    }
    if (c === '"') return this.string();
    for (const [word, v] of [['true', true], ['false', false], ['null', null]] as const) {
      if (this.s.startsWith(word, this.i)) {
        this.i += word.length;
        return v;
      }
    }
    const m = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(this.s.slice(this.i, this.i + 400));
    if (!m || m[0] === '' || m[0] === '-') this.fail('unexpected character');
    if (m![3] && Math.abs(Number(m![3].slice(1))) > MAX_EXPONENT) this.fail('number out of range');
    this.i += m![0].length;
    return { num: canonicalNumber(m![0]) };
  }
  string(): string {
    this.i++;
    let out = '';
    for (;;) {
      const c = this.s[this.i++];
      if (c === undefined) this.fail('unterminated string');
      if (c === '"') return out;
      if (c < ' ') this.fail('control character in string');
      if (c !== '\\') {
        out += c;
        continue;
      }
      const e = this.s[this.i++];
      const simple: Record<string, string> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };
      if (e !== undefined && e in simple) out += simple[e];
      else if (e === 'u') {
        const code = this.hex4();
        if (code === 0) this.fail('\\u0000 is not supported');
        if (code >= 0xd800 && code <= 0xdbff) {
          if (this.s.slice(this.i, this.i + 2) !== '\\u') this.fail('lone surrogate');
          this.i += 2;
          const lo = this.hex4();
          if (lo < 0xdc00 || lo > 0xdfff) this.fail('lone surrogate');
          out += String.fromCharCode(code, lo);
        } else if (code >= 0xdc00 && code <= 0xdfff) this.fail('lone surrogate');
        else out += String.fromCharCode(code);
      } else this.fail('invalid escape');
    }
  }
  hex4(): number {
    const h = this.s.slice(this.i, this.i + 4);
    if (!/^[0-9a-fA-F]{4}$/.test(h)) this.fail('invalid \\u escape');
    this.i += 4;
    return parseInt(h, 16);
  }
}

/** PostgreSQL numeric rendering of a JSON number: exponent expanded, scale = max(0, fraction digits - exponent). */
export function canonicalNumber(text: string): string {
  const m = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(text)!;
  const frac = m[3] ?? '';
  const exp = Number(m[4] ?? 0);
  let digits = (m[2]! + frac).replace(/^0+(?=\d)/, '');
  const shift = exp - frac.length; // value = digits * 10^shift
  let out: string;
  if (shift >= 0) out = digits === '0' ? '0' : digits + '0'.repeat(shift);
  else {
    const scale = -shift;
    digits = digits.padStart(scale + 1, '0');
    out = `${digits.slice(0, digits.length - scale)}.${digits.slice(digits.length - scale)}`;
    out = out.replace(/^0+(?=\d)/, '');
  }
  return m[1] === '-' && /[1-9]/.test(out) ? `-${out}` : out;
}

/** numeric equality ignores trailing fraction zeros: 1.0 = 1 */
function numericKey(n: string): string {
  return n.includes('.') ? n.replace(/\.?0+$/, '') : n;
}

/** jsonb text rendering (what `jsonb::text` and `#>> '{}'` print); a top-level string is unquoted when `unquote`. */
export function renderJsonb(v: JsonValue, unquote = false): string | null {
  if (unquote && v === null) return null;
  if (unquote && typeof v === 'string') return v;
  return render(v);
}

function render(v: JsonValue): string {
  if (v === null) return 'null';
  if (typeof v === 'boolean') return String(v);
  if (typeof v === 'string') return quote(v);
  if (Array.isArray(v)) return `[${v.map(render).join(', ')}]`;
  if (v instanceof Map) {
    const keys = [...v.keys()].sort(jsonbKeyOrder);
    return `{${keys.map((k) => `${quote(k)}: ${render(v.get(k)!)}`).join(', ')}}`;
  }
  return v.num;
}

function quote(s: string): string {
  let out = '"';
  for (const ch of s) {
    const code = ch.charCodeAt(0);
    if (ch === '"') out += '\\"';
    else if (ch === '\\') out += '\\\\';
    else if (ch === '\b') out += '\\b';
    else if (ch === '\f') out += '\\f';
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (code < 0x20) out += `\\u${code.toString(16).padStart(4, '0')}`;
    else out += ch;
  }
  return out + '"';
}

/** MySQL JSON_LENGTH / jsonb: elements of an array, keys of an object, 1 for a scalar */
export function jsonLength(v: JsonValue): number {
  if (Array.isArray(v)) return v.length;
  if (v instanceof Map) return v.size;
  return 1;
}

const isContainer = (v: JsonValue): v is JsonValue[] | Map<string, JsonValue> => Array.isArray(v) || v instanceof Map;

function scalarEqual(a: JsonValue, b: JsonValue): boolean {
  if (a === null || typeof a !== 'object' || b === null || typeof b !== 'object') return a === b;
  if ('num' in a && 'num' in b) return numericKey(a.num) === numericKey(b.num);
  return false;
}

/**
 * The bound on one JSON_CONTAINS, the same on both engines: the product of the two documents'
 * lengths as `jsonb::text` prints them. PostgreSQL's `@>` compares the elements of an array pair by
 * pair and checks for cancellation rarely, so two long arrays held a backend 15 s past its
 * statement timeout (a hostile review); the embedded engine's call, one SQLite function, is not
 * interrupted at all. Every value takes at least one character, so the product bounds the pairs
 * either engine compares: at this bound, about 0.1 s of the worst documents. PostgreSQL measures
 * with `length(doc::text)` (postgres-policy-compiler.ts), the embedded engine with jsonbTextLength.
 */
export const CONTAINS_MAX_PRODUCT = 20_000_000;

/** JSON_CONTAINS past CONTAINS_MAX_PRODUCT; `code` survives a worker thread's error message and is bp_assert's failure on PostgreSQL */
export class ContainsTooComplex extends Error {
  static readonly CODE = 'BP_CONTAINS_TOO_COMPLEX';
  readonly code = ContainsTooComplex.CODE;
  constructor() {
    super(`JSON_CONTAINS of documents whose text lengths multiply past ${CONTAINS_MAX_PRODUCT}`);
  }
}

/** PostgreSQL's `target @> candidate` (JsonbDeepContains), including the top-level scalar-in-array rule. */
export function jsonContains(target: JsonValue, candidate: JsonValue): boolean {
  if (jsonbTextLength(target) * jsonbTextLength(candidate) > CONTAINS_MAX_PRODUCT) throw new ContainsTooComplex();
  const t = isContainer(target) ? target : Object.assign([target], { raw: true });
  const c = isContainer(candidate) ? candidate : Object.assign([candidate], { raw: true });
  return deepContains(t, c);
}

/** Lengths of documents measured already (JSON_CONTAINS measures its target at every call) */
const measured = new WeakMap<object, number>();

/** `length(v::text)` on PostgreSQL, in characters (code points), without rendering the text. */
export function jsonbTextLength(v: JsonValue): number {
  if (v === null || typeof v !== 'object' || 'num' in v) return textLength(v);
  let n = measured.get(v);
  if (n === undefined) measured.set(v, (n = textLength(v)));
  return n;
}

function textLength(v: JsonValue): number {
  if (v === null) return 4;
  if (typeof v === 'boolean') return v ? 4 : 5;
  if (typeof v === 'string') return quotedLength(v);
  if (Array.isArray(v)) {
    let n = v.length > 0 ? 2 * v.length : 2; // brackets, and ", " between elements
    for (const e of v) n += textLength(e);
    return n;
  }
  if (v instanceof Map) {
    let n = v.size > 0 ? 4 * v.size : 2; // braces, ": " after each key, ", " between members
    for (const [k, e] of v) n += quotedLength(k) + textLength(e);
    return n;
  }
  return v.num.length;
}

/** The length of quote(s): escapes as PostgreSQL's escape_json writes them, a surrogate pair one character. */
function quotedLength(s: string): number {
  let n = 2;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x22 || c === 0x5c || c === 0x08 || c === 0x0c || c === 0x0a || c === 0x0d || c === 0x09) n += 2;
    else if (c < 0x20) n += 6;
    else if (c < 0xdc00 || c > 0xdfff) n += 1; // a low surrogate was counted with its high one
  }
  return n;
}

/** A scalar's identity under scalarEqual, or null for one equal to nothing. */
function scalarKey(v: JsonValue): string | null {
  if (v === null) return 'n';
  if (typeof v === 'boolean') return v ? 't' : 'f';
  if (typeof v === 'string') return `s${v}`;
  if (typeof v === 'object' && 'num' in v) return `d${numericKey(v.num)}`;
  return null;
}

function deepContains(a: JsonValue[] | Map<string, JsonValue>, b: JsonValue[] | Map<string, JsonValue>): boolean {
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (a instanceof Map && b instanceof Map) {
    if (a.size < b.size) return false;
    for (const [k, bv] of b) {
      if (!a.has(k)) return false;
      const av = a.get(k)!;
      if (!isContainer(av)) {
        if (isContainer(bv) || !scalarEqual(av, bv)) return false;
      } else {
        if (!isContainer(bv) || !deepContains(av, bv)) return false;
      }
    }
    return true;
  }
  const aa = a as JsonValue[] & { raw?: boolean };
  const bb = b as JsonValue[] & { raw?: boolean };
  if (aa.raw && !bb.raw) return false;
  let scalars: Set<string> | null = null;
  for (const bv of bb) {
    if (!isContainer(bv)) {
      scalars ??= scalarsOf(aa);
      const key = scalarKey(bv);
      if (key === null || !scalars.has(key)) return false;
    } else if (!aa.some((av) => isContainer(av) && deepContains(av, bv))) return false;
  }
  return true;
}

function scalarsOf(values: readonly JsonValue[]): Set<string> {
  const out = new Set<string>();
  for (const v of values) {
    const key = isContainer(v) ? null : scalarKey(v);
    if (key !== null) out.add(key);
  }
  return out;
}
