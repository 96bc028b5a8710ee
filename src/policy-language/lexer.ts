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
  const n = src.length;
  const fail = (msg: string, start: number, end: number): never => {
    throw new PolicyError(msg, src.slice(start, end), start);
  };
  // end offset of a run of identifier characters starting at j
  const wordEnd = (j: number) => {
    while (j < n && isIdentPart(src[j]!)) j++;
    return j;
  };
  const checkNoDot = (start: number, j: number) => {
    if (src[j] === '.' && j + 1 < n && (isIdentPart(src[j + 1]!) || src[j + 1] === '`')) {
      let k = j + 1;
      if (src[k] === '`') {
        k = src.indexOf('`', k + 1);
        k = k < 0 ? n : k + 1;
      } else k = wordEnd(k);
      fail(
        `"${src.slice(start, k)}": qualified names (table.column) are not allowed; refer to the policy's own columns by plain name`,
        start,
        k,
      );
    }
  };

  while (i < n) {
    const c = src[i]!;
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r') {
      i++;
      continue;
    }
    const start = i;
    const two = src.slice(i, i + 2);
    if (two === '--' || two === '/*' || c === '#') {
      fail(`Comments ("${c === '#' ? '#' : two}") are not allowed in policy expressions`, start, start + (c === '#' ? 1 : 2));
    }
    if (c === ';') fail('";" is not allowed: a policy is a single expression', start, start + 1);
    if (c === '@') {
      const j = wordEnd(src[i + 1] === '@' ? i + 2 : i + 1);
      fail(`Variables ("${src.slice(start, j)}") are not allowed in policy expressions`, start, j);
    }
    if (c === '$') {
      let j = i + 1;
      while (j < n && (isIdentPart(src[j]!) || src[j] === '.')) j++;
      const text = src.slice(start, j);
      const m = /^\$auth\.([a-z_]+)$/i.exec(text);
      if (!m || !Object.hasOwn(AUTH_FIELDS, m[1]!.toLowerCase())) {
        fail(`Unknown placeholder "${text}"; allowed placeholders are ${AUTH_LIST}`, start, j);
      }
      tokens.push({ type: 'auth', value: m![1]!.toLowerCase(), text, pos: start, end: j });
      i = j;
      continue;
    }
    if (c === '"') {
      const close = src.indexOf('"', i + 1);
      const j = close < 0 ? n : close + 1;
      fail(
        `Double-quoted text ${src.slice(start, j)} is not allowed: use single quotes for strings and backticks for column names`,
        start,
        j,
      );
    }
    if (c === "'") {
      let j = i + 1;
      let value = '';
      for (;;) {
        if (j >= n) fail(`Unterminated string literal ${src.slice(start, start + 40)}`, start, n);
        const d = src[j]!;
        if (d === "'") {
          if (src[j + 1] === "'") {
            value += "'";
            j += 2;
            continue;
          }
          j++;
          break;
        }
        if (d === '\0') fail('String literals may not contain NUL characters', j, j + 1);
        value += d;
        j++;
      }
      tokens.push({ type: 'string', value, text: src.slice(start, j), pos: start, end: j });
      i = j;
      continue;
    }
    if (c === '`') {
      let j = i + 1;
      let value = '';
      for (;;) {
        if (j >= n) fail(`Unterminated backtick-quoted name ${src.slice(start, start + 40)}`, start, n);
        const d = src[j]!;
        if (d === '`') {
          if (src[j + 1] === '`') {
            value += '`';
            j += 2;
            continue;
          }
          j++;
          break;
        }
        value += d;
        j++;
      }
      checkNoDot(start, j);
      tokens.push({ type: 'qident', value, text: src.slice(start, j), pos: start, end: j });
      i = j;
      continue;
    }
    if (isDigit(c) || (c === '.' && isDigit(src[i + 1] ?? ''))) {
      let j = i;
      let isInteger = true;
      while (j < n && isDigit(src[j]!)) j++;
      if (src[j] === '.') {
        isInteger = false;
        j++;
        while (j < n && isDigit(src[j]!)) j++;
      }
      if ((src[j] === 'e' || src[j] === 'E') && (isDigit(src[j + 1] ?? '') || (/[+-]/.test(src[j + 1] ?? '') && isDigit(src[j + 2] ?? '')))) {
        isInteger = false;
        j += 2;
        while (j < n && isDigit(src[j]!)) j++;
      }
      if (j < n && (isIdentPart(src[j]!) || src[j] === '.')) {
        const k = wordEnd(j + 1);
        fail(`Malformed number "${src.slice(start, k)}"`, start, k);
      }
      tokens.push({ type: 'number', value: src.slice(start, j), text: src.slice(start, j), pos: start, end: j, isInteger });
      i = j;
      continue;
    }
    if (isIdentStart(c)) {
      const j = wordEnd(i);
      checkNoDot(start, j);
      const text = src.slice(start, j);
      tokens.push({ type: 'ident', value: text.toUpperCase(), text, pos: start, end: j });
      i = j;
      continue;
    }
    if (two === '||' || two === '&&') {
      fail(`"${two}" is not allowed: use OR / AND, and CONCAT() to join strings`, start, start + 2);
    }
    if (two === '<=' || two === '>=' || two === '<>' || two === '!=') {
      tokens.push({ type: 'op', value: two === '!=' ? '<>' : two, text: two, pos: start, end: start + 2 });
      i += 2;
      continue;
    }
    if ('=<>+-*/%(),'.includes(c)) {
      tokens.push({ type: 'op', value: c, text: c, pos: start, end: start + 1 });
      i++;
      continue;
    }
    // any other character: take the whole code point so the error names it exactly
    const cp = src.codePointAt(i)!;
    const len = cp > 0xffff ? 2 : 1;
    fail(`Unexpected character "${src.slice(start, start + len)}"`, start, start + len);
  }
  tokens.push({ type: 'eof', value: '', text: '', pos: n, end: n });
  return tokens;
}
