// Property tests over random token streams: parsing/validation never throws anything but
// PolicyError, accepted expressions compile and run on SQLite, and the work done by the parser
// grows linearly with input length (counted steps, not wall-clock time).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import Database from 'better-sqlite3';
import { PolicyError, parsePolicy, validatePolicy } from '../../src/policy-language/index.js';
import { registerSqliteFunctions } from '../../src/storage/sqlite/sqlite-functions.js';
import { INTERNAL_ERROR_MESSAGE, parserStats } from '../../src/policy-language/parser.js';
import { SqlitePolicyCompiler } from '../../src/storage/sqlite/sqlite-policy-compiler.js';
import { PostgresPolicyCompiler } from '../../src/storage/postgres/postgres-policy-compiler.js';
import { CALLERS, COLUMNS, DEFAULT_AUTH, DEFAULT_NOW, openEngine, type Engine, type Row } from './policy-harness.js';
import { testEngines } from '../support/postgres.js';
import { BASE_ROW } from './policy-cases.js';
import { configureFuzz } from '../support/fuzz.js';

configureFuzz();
// before any test is registered: the CPU-bound tests below would otherwise starve the connection
// check's event loop and make PostgreSQL look unreachable on a busy machine
const { engines } = await testEngines();

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
    fc.constantFrom('name', 'email', "'x'", "''", '$auth.email', '$auth.role', 'NULL', "'ÀΣ'"),
    fc.tuple(tie('text'), tie('text')).map(([a, b]) => `CONCAT(${a}, ${b})`),
    tie('text').map((t) => `LOWER(${t})`),
    tie('text').map((t) => `UPPER(${t})`),
    fc.tuple(tie('text'), fc.constantFrom("'x'", "'A'", "''", 'name'), tie('text')).map(([s, f, t]) => `REPLACE(${s}, ${f}, ${t})`),
    fc.tuple(tie('text'), tie('num')).map(([t, n]) => `SUBSTRING(${t}, ${n})`),
    fc.tuple(tie('bool'), tie('text'), tie('text')).map(([c, a, b]) => `IF(${c}, ${a}, ${b})`),
  ),
  bool: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constantFrom('active', 'TRUE', 'NULL', '$auth.email_verified', 'created_at > NOW() - INTERVAL 1 DAY', "due < '2024-02-29'"),
    fc.tuple(tie('num'), fc.constantFrom('=', '<>', '<', '>='), tie('num')).map(([a, o, b]) => `${a} ${o} ${b}`),
    fc.tuple(tie('text'), fc.constantFrom('=', '<', 'LIKE', 'NOT LIKE'), tie('text')).map(([a, o, b]) => `${a} ${o} ${b}`),
    fc.tuple(tie('bool'), fc.constantFrom('AND', 'OR'), tie('bool')).map(([a, o, b]) => `(${a} ${o} ${b})`),
    tie('bool').map((b) => `NOT (${b})`),
    fc.tuple(tie('num'), tie('num'), tie('num')).map(([a, b, c]) => `${a} BETWEEN ${b} AND ${c}`),
    fc.tuple(tie('text'), tie('text')).map(([a, b]) => `${a} IN (${b}, 'z')`),
    tie('num').map((n) => `${n} IS NULL`),
    fc.tuple(tie('bool'), fc.constantFrom('= 1', '= 0', '<> 0', '< 1', 'BETWEEN 0 AND 1', '= TRUE')).map(([b, t]) => `(${b}) ${t}`),
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

/** parser steps for one input */
function steps(src: string): number {
  parserStats.steps = 0;
  try {
    parsePolicy(src);
  } catch (e) {
    if (!(e instanceof PolicyError)) throw e;
  }
  return parserStats.steps;
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

// ---- differential: both engines, every caller (anonymous and role-less ones give NULL
// placeholders), rows compared one by one

/** JSON documents with nulls at the top level and nested in arrays and objects */
const jsonDoc: fc.Arbitrary<unknown> = fc.letrec<{ v: unknown }>((tie) => ({
  v: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constantFrom(null, null, true, false, 7, 5, 1.5, 'admin', 'editor', 'alice@example.com', ''),
    fc.array(tie('v'), { maxLength: 4 }),
    fc.dictionary(fc.constantFrom('a', 'b', 'roles', 'members'), tie('v'), { maxKeys: 3 }),
  ),
})).v;
const maybe = <T>(a: fc.Arbitrary<T>) => fc.option(a, { nil: null, freq: 4 });
/** rows whose every column may be NULL; `data` is also often a JSON null or holds one */
const fuzzRow: fc.Arbitrary<Row> = fc.record({
  owner_id: maybe(fc.constantFrom(7, 8)),
  name: maybe(fc.constantFrom('Alice', 'admin', 'editor', 'ÀΣ', '')),
  email: maybe(fc.constantFrom('alice@example.com', 'a@x', '')),
  qty: maybe(fc.constantFrom(-3, 0, 1, 5, 7)),
  price: maybe(fc.constantFrom(0.5, 1.5, 7, 9.99)),
  active: maybe(fc.boolean()),
  data: maybe(jsonDoc.map((v) => JSON.stringify(v))),
});
const fuzzRows = fc.array(fuzzRow, { minLength: 1, maxLength: 6 });

const PATHS = ["'$'", "'$.a'", "'$.b'", "'$.roles'", "'$.members'", "'$[0]'", "'$[1]'", "'$.a[0]'", "'$.a.b'"];
const jsonValue: fc.Arbitrary<string> = fc.letrec<{ j: string }>((tie) => ({
  j: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constantFrom('data', 'data', 'NULL'),
    fc.tuple(tie('j'), fc.constantFrom(...PATHS)).map(([j, p]) => `JSON_EXTRACT(${j}, ${p})`),
    fc.tuple(tie('j'), tie('j')).map(([a, b]) => `COALESCE(${a}, ${b})`),
  ),
})).j;
/** JSON_CONTAINS candidates: json, JSON literals holding null, and every kind of implicit conversion */
const candidate = fc.oneof(
  jsonValue,
  {
    weight: 3,
    arbitrary: fc.constantFrom('$auth.id', '$auth.email', '$auth.role', 'qty', 'price', 'name', 'owner_id', 'NULL', 'CONCAT(name, $auth.role)', 'LOWER($auth.email)', 'qty + $auth.id'),
  },
  fc.constantFrom("'null'", "'[null]'", '\'{"a":null}\'', "'7'", '\'"admin"\'', "'[7]'", "'{}'", "'[]'"),
);
const jsonBool: fc.Arbitrary<string> = fc.letrec<{ b: string }>((tie) => ({
  b: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    { weight: 3, arbitrary: fc.tuple(jsonValue, candidate).map(([j, c]) => `JSON_CONTAINS(${j}, ${c})`) },
    { weight: 2, arbitrary: fc.tuple(jsonValue, candidate, fc.constantFrom(...PATHS)).map(([j, c, p]) => `JSON_CONTAINS(${j}, ${c}, ${p})`) },
    fc.tuple(jsonValue, fc.constantFrom("'admin'", "'null'", "'7'", "''", '$auth.role', '$auth.email', 'name')).map(([j, t]) => `JSON_UNQUOTE(${j}) = ${t}`),
    fc.tuple(jsonValue, fc.constantFrom('0', '1', '2', '$auth.id', 'qty')).map(([j, n]) => `JSON_LENGTH(${j}) = ${n}`),
    fc.tuple(jsonValue, fc.constantFrom(...PATHS)).map(([j, p]) => `JSON_LENGTH(${j}, ${p}) > 1`),
    fc.tuple(fc.constantFrom('JSON_UNQUOTE', 'JSON_LENGTH', ''), jsonValue, fc.constantFrom('IS NULL', 'IS NOT NULL')).map(([f, j, t]) => `${f}(${j}) ${t}`),
    fc.constantFrom('$auth.email_verified', 'owner_id = $auth.id', "$auth.role = 'editor'", 'active'),
    fc.tuple(tie('b'), fc.constantFrom('AND', 'OR'), tie('b')).map(([a, o, b]) => `(${a} ${o} ${b})`),
    tie('b').map((b) => `NOT (${b})`),
    fc.tuple(tie('b'), fc.constantFrom('IS NULL', 'IS NOT TRUE', 'IS FALSE', '= 1', '= 0', '<> 1', '> 0', 'IN (0, NULL)')).map(([b, t]) => `(${b}) ${t}`),
  ),
})).b;

const twoEngines = { skip: engines.length < 2 && 'PostgreSQL unavailable' };

/** asserts that both engines select the same rows for every caller; invalid expressions are skipped */
async function agree(sqlite: Engine, postgres: Engine, src: string, rows: Row[]): Promise<void> {
  try {
    validatePolicy(src, COLUMNS);
  } catch (e) {
    if (e instanceof PolicyError) return;
    throw e;
  }
  const a = await sqlite.matchRows(src, rows, CALLERS, DEFAULT_NOW);
  const b = await postgres.matchRows(src, rows, CALLERS, DEFAULT_NOW);
  CALLERS.forEach((auth, k) =>
    rows.forEach((r, i) => assert.equal(a[k]![i], b[k]![i], `engines disagree on ${src} for ${JSON.stringify(auth)} and row ${JSON.stringify(r)}`)),
  );
}

async function differential(exprs: fc.Arbitrary<string>, numRuns: number): Promise<void> {
  const [sqlite, postgres] = await Promise.all([openEngine('sqlite'), openEngine('postgres')]);
  try {
    await fc.assert(fc.asyncProperty(exprs, fuzzRows, (src, rows) => agree(sqlite, postgres, src, [BASE_ROW, ...rows])), { numRuns });
  } finally {
    await Promise.all([sqlite.close(), postgres.close()]);
  }
}

test('differential: generated expressions give the same answer on SQLite and PostgreSQL', twoEngines, () => differential(boolExpr, 200));

test('differential: JSON functions with SQL NULLs and JSON nulls agree on SQLite and PostgreSQL', twoEngines, () => differential(jsonBool, 200));
