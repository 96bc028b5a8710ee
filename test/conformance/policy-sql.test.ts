// Kysely-style dialect tests: the exact SQL each engine's compiler emits, then the same SQL run.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { validatePolicy } from '../../src/policy-language/index.js';
import { SqlitePolicyCompiler } from '../../src/storage/sqlite/sqlite-policy-compiler.js';
import { PostgresPolicyCompiler } from '../../src/storage/postgres/postgres-policy-compiler.js';
import { testEngines } from '../support/postgres.js';
import { BASE_ROW } from './policy-cases.js';
import { COLUMNS, DEFAULT_AUTH, DEFAULT_NOW, openEngine, type Engine } from './policy-harness.js';

interface SqlCase {
  expr: string;
  matches: boolean;
  sqlite: [string, unknown[]];
  postgres: [string, unknown[]];
}

const CASES: SqlCase[] = [
  {
    expr: 'owner_id = $auth.id AND active',
    matches: true,
    sqlite: ['(("owner_id" = ?) AND "active")', [7n]],
    postgres: ['(("owner_id" = ?::bigint) AND "active")', [7]],
  },
  {
    expr: "name < 'b'",
    matches: true,
    sqlite: ['("name" < ?)', ['b']],
    postgres: ['(("name" COLLATE "C") < (?::text COLLATE "C"))', ['b']],
  },
  {
    expr: "email LIKE '%@example.com'",
    matches: true,
    sqlite: ['bp_like("email", ?)', ['%@example.com']],
    postgres: [
      // a pattern longer than LIKE_PATTERN_MAX_CHARS matches nothing
      `CASE WHEN length(?::text) <= 256 THEN ((lower(("email" COLLATE "und-x-icu")) COLLATE "C") LIKE (regexp_replace(lower((?::text COLLATE "und-x-icu")), '^((\\\\.|[^\\\\])*)\\\\$', '\\1\\\\\\\\') COLLATE "C") ESCAPE '\\') END`,
      ['%@example.com', '%@example.com'],
    ],
  },
  {
    expr: 'created_at > NOW() - INTERVAL 7 DAY',
    matches: true,
    sqlite: [`("created_at" > bp_date_add(?, ?, 'DAY'))`, ['2024-03-15T12:00:00.000Z', -7n]],
    postgres: [
      // the amount is bounded, then the result range-checked (years 0001-9999), before PostgreSQL computes it
      `("created_at" > CASE WHEN CAST(?::bigint AS numeric) * 86400 BETWEEN -316224000000 AND 316224000000 THEN CASE WHEN extract(epoch from (?::timestamptz AT TIME ZONE 'UTC')) + (?::bigint * CAST(86400 AS bigint)) BETWEEN -62135596800 AND 253402300799.999999 THEN (((?::timestamptz AT TIME ZONE 'UTC') + make_interval(secs => (?::bigint * CAST(86400 AS bigint)))) AT TIME ZONE 'UTC') END END)`,
      [-7, '2024-03-15T12:00:00.000Z', -7, '2024-03-15T12:00:00.000Z', -7],
    ],
  },
  {
    expr: 'qty / 2 >= 1.5 OR qty % 2 = 1',
    matches: true,
    sqlite: ['(((CAST("qty" AS REAL) / ?) >= ?) OR (("qty" % ?) = ?))', [2n, 1.5, 2n, 1n]],
    postgres: [
      '(((CAST("qty" AS double precision) / NULLIF(?::bigint, 0)) >= ?::double precision) OR (("qty" % NULLIF(?::bigint, 0)) = ?::bigint))',
      [2, 1.5, 2, 1],
    ],
  },
  {
    // checked integer arithmetic: NULL outside the 64-bit range on both engines
    expr: 'qty + 1 = 6',
    matches: true,
    sqlite: [`(bp_int('+', "qty", ?) = ?)`, [1n, 6n]],
    postgres: [
      '(CAST(NULLIF(NULLIF(LEAST(GREATEST((CAST("qty" AS numeric) + ?::bigint), -9223372036854775809), 9223372036854775808), 9223372036854775808), -9223372036854775809) AS bigint) = ?::bigint)',
      [1, 6],
    ],
  },
  {
    expr: "JSON_UNQUOTE(JSON_EXTRACT(data, '$.role')) IN ('admin', 'owner')",
    matches: true,
    sqlite: ['(bp_json_unquote(bp_json_extract("data", ?)) IN (?, ?))', ['$.role', 'admin', 'owner']],
    postgres: [
      `((jsonb_path_query_first("data", CAST(?::text AS jsonpath), '{}', true) #>> '{}') IN (?::text, ?::text))`,
      ['strict $.role', 'admin', 'owner'],
    ],
  },
  {
    // a boolean meets the integer literal 1 as TRUE (MySQL), bound as a boolean
    expr: "JSON_CONTAINS(data, '\"a\"', '$.tags') = 1",
    matches: true,
    sqlite: ['(bp_json_contains(bp_json_extract("data", ?), ?) = ?)', ['$.tags', '"a"', 1n]],
    postgres: [
      // `@>` only within the bound on the documents' text lengths (CONTAINS_MAX_PRODUCT); the extracted document computed once
      `((SELECT CASE WHEN CAST(length(CAST("BPL"."V0" AS text)) AS bigint) * length(CAST(?::jsonb AS text)) > 20000000 THEN "baseplate".bp_assert(false, 'BP_CONTAINS_TOO_COMPLEX') = 0 ELSE "BPL"."V0" @> ?::jsonb END FROM (SELECT jsonb_path_query_first("data", CAST(?::text AS jsonpath), '{}', true) AS "V0" OFFSET 0) AS "BPL") = ?::boolean)`,
      ['"a"', '"a"', 'strict $.tags', true],
    ],
  },
  {
    // string results are bounded: the size is checked before anything is concatenated
    expr: "CONCAT(name, '!') = 'Alice!'",
    matches: true,
    sqlite: ['(CASE WHEN CAST(octet_length("name") AS bigint) + CAST(octet_length(?) AS bigint) <= 1048576 THEN ("name" || ?) END = ?)', ['!', '!', 'Alice!']],
    postgres: [
      '(CASE WHEN CAST(octet_length("name") AS bigint) + CAST(octet_length(?::text) AS bigint) <= 1048576 THEN ("name" || ?::text) END = ?::text)',
      ['!', '!', 'Alice!'],
    ],
  },
  {
    expr: "due = '2024-02-29' AND created_at IS NOT NULL",
    matches: true,
    sqlite: ['(("due" = ?) AND ("created_at" IS NOT NULL))', ['2024-02-29']],
    postgres: ['(("due" = ?::date) AND ("created_at" IS NOT NULL))', ['2024-02-29']],
  },
  {
    expr: "created_at >= CURDATE() OR name IS NULL",
    matches: false,
    sqlite: [`(("created_at" >= (? || 'T00:00:00.000Z')) OR ("name" IS NULL))`, ['2024-03-15']],
    postgres: [`(("created_at" >= (CAST(?::date AS timestamp) AT TIME ZONE 'UTC')) OR ("name" IS NULL))`, ['2024-03-15']],
  },
  {
    expr: 'GREATEST(qty, 3) = 5 AND NULL IS NULL',
    matches: true,
    sqlite: ['((max("qty", ?) = ?) AND (NULL IS NULL))', [3n, 5n]],
    postgres: [
      '((CASE WHEN "qty" IS NULL OR ?::bigint IS NULL THEN NULL ELSE GREATEST("qty", ?::bigint) END = ?::bigint) AND (NULL::text IS NULL))',
      [3, 3, 5],
    ],
  },
];

describe('compiled SQL per dialect', () => {
  const ctx = { auth: DEFAULT_AUTH, now: DEFAULT_NOW };
  for (const c of CASES) {
    test(`sqlite: ${c.expr}`, () => {
      const out = new SqlitePolicyCompiler().compile(validatePolicy(c.expr, COLUMNS), ctx);
      assert.deepEqual([out.sql, out.params], c.sqlite);
    });
    test(`postgres: ${c.expr}`, () => {
      const out = new PostgresPolicyCompiler().compile(validatePolicy(c.expr, COLUMNS), ctx);
      assert.deepEqual([out.sql, out.params], c.postgres);
    });
  }

  test('columnRef decides how columns are written; a repeated complex argument is evaluated once', () => {
    const typed = validatePolicy("SUBSTRING(CONCAT(name, email), qty) = 'x'", COLUMNS);
    const out = new PostgresPolicyCompiler().compile(typed, { ...ctx, columnRef: (n) => `r."${n}"` });
    assert.match(out.sql, /^\(\(SELECT CASE WHEN r\."qty" > 0 /);
    // OFFSET 0 keeps PostgreSQL from inlining the bound value back into each use
    assert.match(out.sql, /FROM \(SELECT CASE WHEN .* THEN \(r\."name" \|\| r\."email"\) END AS "V0" OFFSET 0\) AS "BPL"\)/);
    assert.equal(out.sql.split('||').length - 1, 1);
  });

  test('no literal "?" other than placeholders, and one parameter per placeholder', () => {
    for (const c of CASES) {
      for (const compiler of [new SqlitePolicyCompiler(), new PostgresPolicyCompiler()]) {
        const out = compiler.compile(validatePolicy(c.expr, COLUMNS), ctx);
        assert.equal(out.sql.split('?').length - 1, out.params.length);
      }
    }
  });
});

const { engines } = await testEngines();
for (const name of engines) {
  describe(`the asserted SQL runs on ${name}`, () => {
    let engine: Engine;
    before(async () => {
      engine = await openEngine(name);
    });
    after(async () => {
      await engine?.close();
    });
    for (const c of CASES) {
      test(c.expr, async () => {
        assert.equal(await engine.matches(c.expr, BASE_ROW, DEFAULT_AUTH, DEFAULT_NOW), c.matches);
      });
    }
  });
}
