// REST filters go through the policy compiler (principle 10): the PostgREST grammar is parsed,
// translated into the policy AST and compiled by each engine's compiler. First the exact SQL of
// every operator per dialect, then a table of filters run on both engines over rows with NULLs,
// JSON null, Unicode, escapes and range edges, each asserting exactly which rows match.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { filterToPolicy, parseQuery } from '../../src/rest-query/index.js';
import type { CompiledSql, PolicyCompiler } from '../../src/policy-language/index.js';
import { SqlitePolicyCompiler } from '../../src/storage/sqlite/sqlite-policy-compiler.js';
import { PostgresPolicyCompiler } from '../../src/storage/postgres/postgres-policy-compiler.js';
import { testEngines } from '../support/postgres.js';
import { COLUMNS, DEFAULT_AUTH, DEFAULT_NOW, openEngine, type Engine, type Row } from './policy-harness.js';

const TYPES = new Map(COLUMNS.map((c) => [c.name, c.type] as const));

/** One query parameter per pair (built from pairs: `+` and `%` stay what they are). */
function compileWith(compiler: PolicyCompiler, params: [string, string][]): CompiledSql {
  const q = parseQuery(new URLSearchParams(params), COLUMNS);
  return compiler.compile(filterToPolicy(q.filter!, TYPES), { auth: DEFAULT_AUTH, now: DEFAULT_NOW });
}

// PostgreSQL's LIKE: the pattern bounded, a trailing lone escape closed (as SQLite's bp_like reads it)
const pgLike = (value: string, pattern: string) =>
  `CASE WHEN length(?::text) <= 256 THEN ((${value} COLLATE "C") LIKE (regexp_replace(${pattern}, '^((\\\\.|[^\\\\])*)\\\\$', '\\1\\\\\\\\') COLLATE "C") ESCAPE '\\') END`;

interface SqlCase {
  params: [string, string][];
  sqlite: [string, unknown[]];
  postgres: [string, unknown[]];
}

const SQL_CASES: SqlCase[] = [
  { params: [['qty', 'eq.5']], sqlite: ['("qty" = ?)', [5n]], postgres: ['("qty" = ?::bigint)', [5]] },
  { params: [['qty', 'neq.5']], sqlite: ['("qty" <> ?)', [5n]], postgres: ['("qty" <> ?::bigint)', [5]] },
  { params: [['price', 'gt.1.5']], sqlite: ['("price" > ?)', [1.5]], postgres: ['("price" > ?::double precision)', [1.5]] },
  { params: [['price', 'gte.-2']], sqlite: ['("price" >= ?)', [-2]], postgres: ['("price" >= ?::double precision)', [-2]] },
  {
    // text orders by code point on both engines
    params: [['name', 'lt.b']],
    sqlite: ['("name" < ?)', ['b']],
    postgres: ['(("name" COLLATE "C") < (?::text COLLATE "C"))', ['b']],
  },
  { params: [['name', 'eq.bob']], sqlite: ['("name" = ?)', ['bob']], postgres: ['("name" = ?::text)', ['bob']] },
  {
    // timestamps are normalised to UTC text before they are bound
    params: [['created_at', 'lte.2024-03-01T12:00:00+02:00']],
    sqlite: ['("created_at" <= ?)', ['2024-03-01T10:00:00.000Z']],
    postgres: ['("created_at" <= ?::timestamptz)', ['2024-03-01T10:00:00.000Z']],
  },
  { params: [['due', 'gt.2024-02-29']], sqlite: ['("due" > ?)', ['2024-02-29']], postgres: ['("due" > ?::date)', ['2024-02-29']] },
  { params: [['active', 'eq.t']], sqlite: ['("active" = ?)', [1n]], postgres: ['("active" = ?::boolean)', [true]] },
  {
    // json: the value bound in canonical form (jsonb key order), compared as jsonb on PostgreSQL
    params: [['data', 'eq.{"tags": ["x"], "a": 1}']],
    sqlite: ['("data" = ?)', ['{"a":1,"tags":["x"]}']],
    postgres: ['("data" = ?::jsonb)', ['{"a":1,"tags":["x"]}']],
  },
  {
    // like is case-sensitive; `*` is the PostgREST spelling of `%`
    params: [['name', 'like.*li*']],
    sqlite: ['bp_like("name", ?, 0)', ['%li%']],
    postgres: [pgLike('"name"', '?::text'), ['%li%', '%li%']],
  },
  {
    // ilike folds case with full Unicode lower-casing (ICU's root locale on PostgreSQL)
    params: [['name', 'ilike.*LI*']],
    sqlite: ['bp_like("name", ?)', ['%LI%']],
    postgres: [pgLike('lower(("name" COLLATE "und-x-icu"))', 'lower((?::text COLLATE "und-x-icu"))'), ['%LI%', '%LI%']],
  },
  { params: [['active', 'is.true']], sqlite: ['("active" IS TRUE)', []], postgres: ['("active" IS TRUE)', []] },
  { params: [['active', 'is.false']], sqlite: ['("active" IS FALSE)', []], postgres: ['("active" IS FALSE)', []] },
  { params: [['active', 'is.unknown']], sqlite: ['("active" IS NULL)', []], postgres: ['("active" IS NULL)', []] },
  { params: [['name', 'is.not_null']], sqlite: ['("name" IS NOT NULL)', []], postgres: ['("name" IS NOT NULL)', []] },
  { params: [['name', 'not.is.null']], sqlite: ['(NOT ("name" IS NULL))', []], postgres: ['(NOT ("name" IS NULL))', []] },
  {
    params: [['qty', 'in.(1,"2")']],
    sqlite: ['("qty" IN (?, ?))', [1n, 2n]],
    postgres: ['("qty" IN (?::bigint, ?::bigint))', [1, 2]],
  },
  { params: [['qty', 'in.()']], sqlite: ['(1=0)', []], postgres: ['(1=0)', []] },
  { params: [['qty', 'not.in.()']], sqlite: ['(NOT (1=0))', []], postgres: ['(NOT (1=0))', []] },
  {
    params: [['or', '(qty.lt.0,not.and(active.is.true,due.eq.2024-02-29))']],
    sqlite: ['(("qty" < ?) OR (NOT (("active" IS TRUE) AND ("due" = ?))))', [0n, '2024-02-29']],
    postgres: ['(("qty" < ?::bigint) OR (NOT (("active" IS TRUE) AND ("due" = ?::date))))', [0, '2024-02-29']],
  },
  {
    // repeated filters are ANDed
    params: [['qty', 'gte.0'], ['qty', 'not.eq.3']],
    sqlite: ['(("qty" >= ?) AND (NOT ("qty" = ?)))', [0n, 3n]],
    postgres: ['(("qty" >= ?::bigint) AND (NOT ("qty" = ?::bigint)))', [0, 3]],
  },
];

const label = (params: [string, string][]) => params.map(([k, v]) => `${k}=${v}`).join('&');

describe('REST filters: compiled SQL per dialect', () => {
  for (const c of SQL_CASES) {
    test(`sqlite: ${label(c.params)}`, () => {
      const out = compileWith(new SqlitePolicyCompiler(), c.params);
      assert.deepEqual([out.sql, out.params], c.sqlite);
    });
    test(`postgres: ${label(c.params)}`, () => {
      const out = compileWith(new PostgresPolicyCompiler(), c.params);
      assert.deepEqual([out.sql, out.params], c.postgres);
    });
  }

  test('no user text in the SQL: one parameter per placeholder, and the values only in the parameters', () => {
    const hostile = "x'); DROP TABLE t; --";
    for (const compiler of [new SqlitePolicyCompiler(), new PostgresPolicyCompiler()]) {
      for (const op of ['eq', 'like', 'ilike', 'in']) {
        const out = compileWith(compiler, [['name', op === 'in' ? `in.("${hostile}")` : `${op}.${hostile}`]]);
        assert.ok(!out.sql.includes('DROP'), out.sql);
        assert.equal(out.sql.split('?').length - 1, out.params.length);
        assert.ok(out.params.includes(hostile));
      }
    }
  });
});

// The rows every filter below runs over. `none` is NULL everywhere; `jnull` holds the JSON null
// (not SQL NULL) in its json column.
const ROWS: Record<string, Row> = {
  alice: { name: 'Alice', qty: 5, price: 9.5, active: true, created_at: '2024-03-01T10:00:00.000Z', due: '2024-03-10', data: '{"a":1,"tags":["x"]}' },
  bob: { name: 'bob', qty: 0, price: -1.25, active: false, created_at: '2024-03-15T12:00:00.000Z', due: '2024-02-29', data: '[1,2]' },
  none: {},
  umit: { name: 'Ümit_50%', qty: -3, price: 0, active: true, created_at: '1999-12-31T23:59:59.999Z', due: '0001-01-01', data: '"text"' },
  jnull: { name: 'slash\\', qty: 9007199254740991, price: 1e300, active: false, created_at: '9999-12-31T23:59:59.999Z', due: '9999-12-31', data: 'null' },
};
const NAMES = Object.keys(ROWS);

const MATCH_CASES: Array<[[string, string][], string[]]> = [
  [[['qty', 'eq.5']], ['alice']],
  [[['qty', 'neq.5']], ['bob', 'umit', 'jnull']],
  [[['qty', 'gt.0']], ['alice', 'jnull']],
  [[['qty', 'gte.0']], ['alice', 'bob', 'jnull']],
  [[['qty', 'lt.0']], ['umit']],
  [[['qty', 'lte.0']], ['bob', 'umit']],
  [[['qty', 'eq.9007199254740991']], ['jnull']],
  [[['qty', 'not.eq.5']], ['bob', 'umit', 'jnull']],
  [[['price', 'gt.-1.25']], ['alice', 'umit', 'jnull']],
  [[['price', 'eq.-0']], ['umit']],
  [[['price', 'gte.1e300']], ['jnull']],
  [[['name', 'lt.b']], ['alice']],
  [[['name', 'gt.Z']], ['bob', 'umit', 'jnull']],
  [[['name', 'eq.ALICE']], []],
  [[['name', 'like.*li*']], ['alice']],
  [[['name', 'like.*LI*']], []],
  [[['name', 'ilike.*LI*']], ['alice']],
  [[['name', 'ilike.üMIT*']], ['umit']],
  [[['name', 'like.Ümit\\_50\\%']], ['umit']],
  [[['name', 'like.Ümit_50_']], ['umit']],
  [[['name', 'like.B*']], []],
  // a trailing lone escape matches a backslash
  [[['name', 'like.*\\']], ['jnull']],
  [[['name', 'not.like.*li*']], ['bob', 'umit', 'jnull']],
  [[['name', 'not.ilike.*LI*']], ['bob', 'umit', 'jnull']],
  [[['active', 'is.true']], ['alice', 'umit']],
  [[['active', 'is.false']], ['bob', 'jnull']],
  [[['active', 'is.unknown']], ['none']],
  [[['active', 'eq.true']], ['alice', 'umit']],
  [[['active', 'neq.true']], ['bob', 'jnull']],
  // NOT (x IS TRUE) holds for NULL, NOT (x = TRUE) does not
  [[['active', 'not.is.true']], ['bob', 'none', 'jnull']],
  [[['active', 'not.eq.true']], ['bob', 'jnull']],
  [[['name', 'is.null']], ['none']],
  [[['name', 'is.NULL']], ['none']],
  [[['name', 'not.is.null']], ['alice', 'bob', 'umit', 'jnull']],
  [[['name', 'is.not_null']], ['alice', 'bob', 'umit', 'jnull']],
  [[['qty', 'in.(5,0)']], ['alice', 'bob']],
  [[['qty', 'not.in.(5,0)']], ['umit', 'jnull']],
  [[['qty', 'in.()']], []],
  [[['qty', 'not.in.()']], NAMES],
  [[['name', 'in.("Alice","a,b",bob)']], ['alice', 'bob']],
  [[['created_at', 'eq.2024-03-01T12:00:00+02:00']], ['alice']],
  [[['created_at', 'gt.2024-03-01T10:00:00Z']], ['bob', 'jnull']],
  [[['created_at', 'lt.2000-01-01']], ['umit']],
  [[['due', 'lt.2024-03-01']], ['bob', 'umit']],
  [[['due', 'eq.9999-12-31']], ['jnull']],
  // json: equal as values (key order and spacing aside); the JSON null is a value, SQL NULL is not
  [[['data', 'eq.{"tags": ["x"], "a": 1}']], ['alice']],
  [[['data', 'eq.null']], ['jnull']],
  [[['data', 'is.null']], ['none']],
  [[['data', 'neq.[1,2]']], ['alice', 'umit', 'jnull']],
  [[['data', 'eq."text"']], ['umit']],
  [[['or', '(qty.lt.0,name.eq.bob)']], ['bob', 'umit']],
  [[['and', '(active.is.true,qty.gt.0)']], ['alice']],
  [[['not.or', '(qty.lt.0,qty.gt.1)']], ['bob']],
  // `active IS TRUE` is false (not NULL) for the NULL row, so the AND is false and its NOT true
  [[['not.and', '(active.is.true,qty.gt.0)']], ['bob', 'none', 'umit', 'jnull']],
  [[['or', '(and(qty.gte.0,qty.lte.5),not.and(active.is.true,name.is.null),data.is.null)']], NAMES],
  [[['or', '(qty.in.(),name.in.("Ümit_50%"))']], ['umit']],
  [[['qty', 'gte.0'], ['qty', 'lte.5']], ['alice', 'bob']],
  [[['qty', 'gte.0'], ['or', '(active.is.false,name.like.A*)']], ['alice', 'bob', 'jnull']],
];

const { engines } = await testEngines();
for (const name of engines) {
  describe(`REST filters run on ${name}`, () => {
    let engine: Engine;
    // per filter, for each row, whether it matches: the asserted SQL first (it must run), then the table
    let matched: boolean[][];
    before(async () => {
      engine = await openEngine(name);
      const compiled = [...SQL_CASES.map((c) => c.params), ...MATCH_CASES.map(([params]) => params)].map((params) => {
        const q = parseQuery(new URLSearchParams(params), COLUMNS);
        return engine.compileTyped(filterToPolicy(q.filter!, TYPES));
      });
      matched = (await engine.matchCompiled(compiled, Object.values(ROWS))).slice(SQL_CASES.length);
    });
    after(async () => {
      await engine?.close();
    });
    MATCH_CASES.forEach(([params, expected], i) => {
      test(label(params), () => {
        assert.deepEqual(NAMES.filter((_, k) => matched[i]![k]), expected);
      });
    });
  });
}
