// Property tests over random token streams: parsing/validation never throws anything but
// PolicyError, accepted expressions compile and run on SQLite, and the work done by the lexer and
// parser grows linearly with input length (counted steps, not wall-clock time).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import Database from 'better-sqlite3';
import { PolicyError, parsePolicy, registerSqliteFunctions, validatePolicy } from '../../src/policy-language/index.js';
import { lexerStats } from '../../src/policy-language/lexer.js';
import { INTERNAL_ERROR_MESSAGE, parserStats } from '../../src/policy-language/parser.js';
import { SqlitePolicyCompiler } from '../../src/storage/sqlite/sqlite-policy-compiler.js';
import { PostgresPolicyCompiler } from '../../src/storage/postgres/postgres-policy-compiler.js';
import { COLUMNS, DEFAULT_AUTH, DEFAULT_NOW, openEngine } from './policy-harness.js';
import { testEngines } from '../support/postgres.js';
import { BASE_ROW } from './policy-cases.js';
import { configureFuzz } from '../support/fuzz.js';

configureFuzz();

const KEYWORDS = ['AND', 'OR', 'NOT', 'IN', 'LIKE', 'BETWEEN', 'IS', 'NULL', 'TRUE', 'FALSE', 'CASE', 'WHEN', 'THEN', 'ELSE', 'END', 'INTERVAL', 'DAY', 'MONTH', 'SELECT', 'FROM', 'CURRENT_DATE', 'ESCAPE'];
const FUNCS = ['LOWER(', 'CONCAT(', 'SUBSTRING(', 'LOCATE(', 'COALESCE(', 'IF(', 'GREATEST(', 'ROUND(', 'NOW()', 'DATE_ADD(', 'DATEDIFF(', 'TIMESTAMPDIFF(', 'JSON_EXTRACT(', 'JSON_CONTAINS(', 'JSON_LENGTH(', 'SLEEP(', 'FIND_IN_SET('];
const OPS = ['=', '<>', '!=', '<', '<=', '>', '>=', '+', '-', '*', '/', '%', '(', ')', ',', '(', ')'];
const IDENTS = COLUMNS.map((c) => c.name).concat(['nope', '`name`', '`qty`', 'users.id', '$auth.id', '$auth.email', '$auth.role', '$auth.email_verified', '$auth.x', '@v']);
const LITERALS = ["'a'", "''", "'2024-01-31'", "'2024-02-29 10:00:00'", "'%a\\_'", "'$.a[0]'", "'{\"a\":1}'", '0', '1', '-5', '2.5', '1e3', '9223372036854775807', "'it''s'"];
const JUNK = [';', '--', '#', '/*', '"x"', '`', "'", '@', '$', '?', '\\', '||', '&&', '!', '.', '\u0000', '😀', '\n'];

const token = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...KEYWORDS) },
  { weight: 2, arbitrary: fc.constantFrom(...FUNCS) },
  { weight: 4, arbitrary: fc.constantFrom(...OPS) },
  { weight: 4, arbitrary: fc.constantFrom(...IDENTS) },
  { weight: 3, arbitrary: fc.constantFrom(...LITERALS) },
  { weight: 1, arbitrary: fc.constantFrom(...JUNK) },
  { weight: 1, arbitrary: fc.string({ maxLength: 3 }) },
);
const tokenStream = fc.array(token, { maxLength: 40 }).chain((ts) => fc.constantFrom(ts.join(' '), ts.join('')));

/** a generator of well-formed boolean expressions (so the fuzzer also reaches the compilers) */
const boolExpr: fc.Arbitrary<string> = fc.letrec<{ bool: string; num: string; text: string }>((tie) => ({
  num: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constantFrom('qty', 'owner_id', 'price', '$auth.id', '1', '-2', '2.5', 'NULL', 'LENGTH(name)'),
    fc.tuple(tie('num'), fc.constantFrom('+', '-', '*', '/'), tie('num')).map(([a, o, b]) => `(${a} ${o} ${b})`),
    fc.tuple(tie('num'), tie('num')).map(([a, b]) => `GREATEST(${a}, ${b})`),
    tie('text').map((t) => `LOCATE('a', ${t})`),
  ),
  text: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constantFrom('name', 'email', "'x'", "''", '$auth.email', 'NULL', "'ÀΣ'"),
    fc.tuple(tie('text'), tie('text')).map(([a, b]) => `CONCAT(${a}, ${b})`),
    tie('text').map((t) => `LOWER(${t})`),
    fc.tuple(tie('text'), tie('num')).map(([t, n]) => `SUBSTRING(${t}, ${n})`),
    fc.tuple(tie('bool'), tie('text'), tie('text')).map(([c, a, b]) => `IF(${c}, ${a}, ${b})`),
  ),
  bool: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constantFrom('active', 'TRUE', 'NULL', 'created_at > NOW() - INTERVAL 1 DAY', "due < '2024-02-29'"),
    fc.tuple(tie('num'), fc.constantFrom('=', '<>', '<', '>='), tie('num')).map(([a, o, b]) => `${a} ${o} ${b}`),
    fc.tuple(tie('text'), fc.constantFrom('=', '<', 'LIKE', 'NOT LIKE'), tie('text')).map(([a, o, b]) => `${a} ${o} ${b}`),
    fc.tuple(tie('bool'), fc.constantFrom('AND', 'OR'), tie('bool')).map(([a, o, b]) => `(${a} ${o} ${b})`),
    tie('bool').map((b) => `NOT (${b})`),
    fc.tuple(tie('num'), tie('num'), tie('num')).map(([a, b, c]) => `${a} BETWEEN ${b} AND ${c}`),
    fc.tuple(tie('text'), tie('text')).map(([a, b]) => `${a} IN (${b}, 'z')`),
    tie('num').map((n) => `${n} IS NULL`),
  ),
})).bool;

function onlyPolicyErrors(f: () => unknown) {
  try {
    f();
  } catch (e) {
    if (!(e instanceof PolicyError)) throw e;
    assert.equal(typeof e.offending, 'string');
    assert.ok(Number.isInteger(e.position) && e.position >= 0);
    assert.ok(e.message.length > 0);
    assert.notEqual(e.message, INTERNAL_ERROR_MESSAGE, 'an internal error was masked');
  }
}

test('random token streams: parsePolicy and validatePolicy throw only PolicyError', () => {
  fc.assert(
    fc.property(tokenStream, (src) => {
      onlyPolicyErrors(() => parsePolicy(src));
      onlyPolicyErrors(() => validatePolicy(src, COLUMNS));
    }),
    { numRuns: 3000 },
  );
});

test('random strings: only PolicyError', () => {
  fc.assert(
    fc.property(fc.string({ maxLength: 60 }), (src) => {
      onlyPolicyErrors(() => validatePolicy(src, COLUMNS));
    }),
    { numRuns: 2000 },
  );
});

test('generated well-formed expressions validate, compile for both engines and run on SQLite', () => {
  const db = new Database(':memory:');
  registerSqliteFunctions(db);
  db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, owner_id INTEGER, name TEXT, email TEXT, tags TEXT, qty INTEGER, price REAL, active INTEGER, created_at TEXT, due TEXT, data TEXT)');
  db.prepare("INSERT INTO t VALUES (1, 7, 'Alice', 'a@x', 'a,b', 5, 2.5, 1, '2024-03-10T08:30:00.000Z', '2024-02-29', '{}')").run();
  const ctx = { auth: DEFAULT_AUTH, now: DEFAULT_NOW };
  try {
    fc.assert(
      fc.property(boolExpr, (src) => {
        let typed;
        try {
          typed = validatePolicy(src, COLUMNS);
        } catch (e) {
          if (e instanceof PolicyError && src.length <= 4000) return; // e.g. nesting limit
          throw e;
        }
        const s = new SqlitePolicyCompiler().compile(typed, ctx);
        const p = new PostgresPolicyCompiler().compile(typed, ctx);
        assert.equal(s.sql.split('?').length - 1, s.params.length);
        assert.equal(p.sql.split('?').length - 1, p.params.length);
        db.prepare(`SELECT count(*) FROM t WHERE (${s.sql})`).get(...s.params);
      }),
      { numRuns: 1500 },
    );
  } finally {
    db.close();
  }
});

/** lexer + parser steps for one input */
function steps(src: string): number {
  lexerStats.steps = 0;
  parserStats.steps = 0;
  try {
    parsePolicy(src);
  } catch (e) {
    if (!(e instanceof PolicyError)) throw e;
  }
  return lexerStats.steps + parserStats.steps;
}

test('parsing work is linear in the input length (deterministic step count)', () => {
  const shapes = [
    (n: number) => Array.from({ length: n }, (_, i) => `qty = ${i}`).join(' OR '),
    (n: number) => `name IN (${Array.from({ length: n }, () => "'abc'").join(', ')})`,
    (n: number) => `name = '${'x'.repeat(n * 8)}'`,
    (n: number) => `${'('.repeat(Math.min(n, 60))}TRUE${')'.repeat(Math.min(n, 60))} AND ${Array.from({ length: n }, () => 'active').join(' AND ')}`,
    (n: number) => `LOWER(${'CONCAT(name, '.repeat(50)}'x'${')'.repeat(50)}) = 'a' OR ${Array.from({ length: n }, () => '1 + 1 > 0').join(' OR ')}`,
  ];
  for (const shape of shapes) {
    const small = shape(150);
    const large = shape(300);
    const ratio = steps(large) / steps(small);
    const lengthRatio = large.length / small.length;
    assert.ok(ratio < lengthRatio * 1.25, `steps grew ${ratio.toFixed(2)}x for ${lengthRatio.toFixed(2)}x the input`);
  }
  // and the absolute work per character is bounded
  const big = Array.from({ length: 400 }, (_, i) => `qty = ${i}`).join(' OR ').slice(0, 3990);
  assert.ok(steps(big) < big.length * 4, `${steps(big)} steps for ${big.length} characters`);
});

test('deep nesting is rejected without exhausting the stack', () => {
  for (const src of ['('.repeat(3999), 'NOT '.repeat(999), 'LOWER('.repeat(600), '-'.repeat(3999) + '1', 'CASE WHEN '.repeat(390)]) {
    assert.throws(() => validatePolicy(src, COLUMNS), PolicyError);
  }
});

const { engines } = await testEngines();
test('differential: generated expressions give the same answer on SQLite and PostgreSQL', { skip: engines.length < 2 && 'PostgreSQL unavailable' }, async () => {
  const [sqlite, postgres] = await Promise.all([openEngine('sqlite'), openEngine('postgres')]);
  const rows = [
    BASE_ROW,
    { ...BASE_ROW, name: 'ÀΣ', email: '', qty: -3, price: 0.5, active: false, owner_id: 8 },
    Object.fromEntries(Object.keys(BASE_ROW).map((k) => [k, null])),
  ];
  try {
    await fc.assert(
      fc.asyncProperty(boolExpr, fc.constantFrom(...rows), fc.constantFrom(DEFAULT_AUTH, null), async (src, row, auth) => {
        try {
          validatePolicy(src, COLUMNS);
        } catch (e) {
          if (e instanceof PolicyError) return;
          throw e;
        }
        const [a, b] = [await sqlite.matches(src, row, auth, DEFAULT_NOW), await postgres.matches(src, row, auth, DEFAULT_NOW)];
        assert.equal(a, b, `engines disagree on ${src}`);
      }),
      { numRuns: 400 },
    );
  } finally {
    await Promise.all([sqlite.close(), postgres.close()]);
  }
});
