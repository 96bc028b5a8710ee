// Tokenizer: one left-to-right pass, no backtracking, every character inspected O(1) times.
import { AUTH_FIELDS } from './ast.js';
import { PolicyError } from './errors.js';

export type TokenType = 'ident' | 'qident' | 'string' | 'number' | 'op' | 'auth' | 'eof';

export interface Token {
  type: TokenType;
  /** ident: upper-cased word; qident: the name inside backticks; string: decoded value; op: the operator; auth: field */
  value: string;
  /** exact source text */
  text: string;
  pos: number;
  end: number;
  /** number tokens: true if written without '.' or exponent */
  isInteger?: boolean;
}

const AUTH_NAMES = Object.keys(AUTH_FIELDS).map((f) => `$auth.${f}`);
const AUTH_LIST = `${AUTH_NAMES.slice(0, -1).join(', ')} and ${AUTH_NAMES.at(-1)}`;
const isIdentStart = (c: string) => /[A-Za-z_]/.test(c);
const isIdentPart = (c: string) => /[A-Za-z0-9_]/.test(c);
const isDigit = (c: string) => c >= '0' && c <= '9';

export function tokenize(src: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < src.length) {
    const c = src[i]!;
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r') {
      i++;
      continue;
    }
    const token = readToken(src, i);
    tokens.push(token);
    i = token.end;
  }
  tokens.push({ type: 'eof', value: '', text: '', pos: src.length, end: src.length });
  return tokens;
}

function fail(src: string, start: number, end: number, message: string): never {
  throw new PolicyError(message, src.slice(start, end), start);
}

/** The token that starts at `start`, which is not white space. */
function readToken(src: string, start: number): Token {
  const c = src[start]!;
  refuseForeignSyntax(src, start);
  if (c === '$') return readPlaceholder(src, start);
  if (c === "'") return readString(src, start);
  if (c === '`') return readQuotedName(src, start);
  if (isDigit(c) || (c === '.' && isDigit(src[start + 1] ?? ''))) return readNumber(src, start);
  if (isIdentStart(c)) return readWord(src, start);
  return readOperator(src, start);
}

// Authors often paste SQL or MySQL habits; naming the construct beats "unexpected character".
function refuseForeignSyntax(src: string, start: number): void {
  const c = src[start]!;
  const two = src.slice(start, start + 2);
  if (two === '--' || two === '/*' || c === '#') {
    fail(src, start, start + (c === '#' ? 1 : 2), `Comments ("${c === '#' ? '#' : two}") are not allowed in policy expressions`);
  }
  if (c === ';') fail(src, start, start + 1, '";" is not allowed: a policy is a single expression');
  if (c === '@') {
    const j = wordEnd(src, src[start + 1] === '@' ? start + 2 : start + 1);
    fail(src, start, j, `Variables ("${src.slice(start, j)}") are not allowed in policy expressions`);
  }
  if (c === '"') {
    const close = src.indexOf('"', start + 1);
    const j = close < 0 ? src.length : close + 1;
    fail(
      src,
      start,
      j,
      `Double-quoted text ${src.slice(start, j)} is not allowed: use single quotes for strings and backticks for column names`,
    );
  }
}

/** end offset of a run of identifier characters starting at j */
function wordEnd(src: string, j: number): number {
  while (j < src.length && isIdentPart(src[j]!)) j++;
  return j;
}

function readPlaceholder(src: string, start: number): Token {
  let j = start + 1;
  while (j < src.length && (isIdentPart(src[j]!) || src[j] === '.')) j++;
  const text = src.slice(start, j);
  const m = /^\$auth\.([a-z_]+)$/i.exec(text);
  if (!m || !Object.hasOwn(AUTH_FIELDS, m[1]!.toLowerCase())) {
    fail(src, start, j, `Unknown placeholder "${text}"; allowed placeholders are ${AUTH_LIST}`);
  }
  return { type: 'auth', value: m![1]!.toLowerCase(), text, pos: start, end: j };
}

function readString(src: string, start: number): Token {
  const { value, end } = readQuoted(src, start, 'string literal');
  return { type: 'string', value, text: src.slice(start, end), pos: start, end };
}

function readQuotedName(src: string, start: number): Token {
  const { value, end } = readQuoted(src, start, 'backtick-quoted name');
  refuseQualifiedName(src, start, end);
  return { type: 'qident', value, text: src.slice(start, end), pos: start, end };
}

/** The text between the quote at `start` and its closing match; a doubled quote stands for one. */
function readQuoted(src: string, start: number, what: string): { value: string; end: number } {
  const quote = src[start]!;
  let j = start + 1;
  let value = '';
  for (;;) {
    if (j >= src.length) fail(src, start, src.length, `Unterminated ${what} ${src.slice(start, start + 40)}`);
    const d = src[j]!;
    if (d === quote) {
      if (src[j + 1] !== quote) return { value, end: j + 1 };
      value += quote;
      j += 2;
      continue;
    }
    // PostgreSQL text cannot hold NUL
    if (d === '\0' && quote === "'") fail(src, j, j + 1, 'String literals may not contain NUL characters');
    value += d;
    j++;
  }
}

function readNumber(src: string, start: number): Token {
  let isInteger = true;
  let j = digitsEnd(src, start);
  if (src[j] === '.') {
    isInteger = false;
    j = digitsEnd(src, j + 1);
  }
  const next = src[j + 1] ?? '';
  if ((src[j] === 'e' || src[j] === 'E') && (isDigit(next) || (/[+-]/.test(next) && isDigit(src[j + 2] ?? '')))) {
    isInteger = false;
    j = digitsEnd(src, j + 2);
  }
  if (j < src.length && (isIdentPart(src[j]!) || src[j] === '.')) {
    const k = wordEnd(src, j + 1);
    fail(src, start, k, `Malformed number "${src.slice(start, k)}"`);
  }
  const text = src.slice(start, j);
  return { type: 'number', value: text, text, pos: start, end: j, isInteger };
}

function digitsEnd(src: string, j: number): number {
  while (j < src.length && isDigit(src[j]!)) j++;
  return j;
}

function readWord(src: string, start: number): Token {
  const j = wordEnd(src, start);
  refuseQualifiedName(src, start, j);
  const text = src.slice(start, j);
  return { type: 'ident', value: text.toUpperCase(), text, pos: start, end: j };
}

/** Refuses `name.column` and `name.`quoted``, where the name ends at j. */
function refuseQualifiedName(src: string, start: number, j: number): void {
  if (src[j] !== '.' || j + 1 >= src.length || !(isIdentPart(src[j + 1]!) || src[j + 1] === '`')) return;
  let k = j + 1;
  if (src[k] === '`') {
    k = src.indexOf('`', k + 1);
    k = k < 0 ? src.length : k + 1;
  } else k = wordEnd(src, k);
  fail(
    src,
    start,
    k,
    `"${src.slice(start, k)}": qualified names (table.column) are not allowed; refer to the policy's own columns by plain name`,
  );
}

function readOperator(src: string, start: number): Token {
  const two = src.slice(start, start + 2);
  if (two === '||' || two === '&&') {
    fail(src, start, start + 2, `"${two}" is not allowed: use OR / AND, and CONCAT() to join strings`);
  }
  if (two === '<=' || two === '>=' || two === '<>' || two === '!=') {
    return { type: 'op', value: two === '!=' ? '<>' : two, text: two, pos: start, end: start + 2 };
  }
  const c = src[start]!;
  if ('=<>+-*/%(),'.includes(c)) return { type: 'op', value: c, text: c, pos: start, end: start + 1 };
  // any other character: take the whole code point so the error names it exactly
  const len = src.codePointAt(start)! > 0xffff ? 2 : 1;
  return fail(src, start, start + len, `Unexpected character "${src.slice(start, start + len)}"`);
}
