// The embedded engine's LOCATE and JSON_CONTAINS: the same answers as plain reference versions
// (character by character, pair by pair), and bounded work for one call, which no statement
// deadline can interrupt: LOCATE searches linearly, JSON_CONTAINS looks scalars up in a set and
// refuses documents whose text lengths multiply past CONTAINS_MAX_PRODUCT, measured as PostgreSQL's
// `length(doc::text)` measures them (checked against the server here).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import Database from 'better-sqlite3';
import { locate, registerSqliteFunctions } from '../../src/storage/sqlite/sqlite-functions.ts';
import { checkSearch, SEARCH_MAX_PRODUCT, SearchTooLarge } from '../../src/policy-language/call-bounds.ts';
import pg from 'pg';
import { ContainsTooComplex, CONTAINS_MAX_PRODUCT, jsonbTextLength, jsonContains, parseJsonDocument, renderJsonb, type JsonValue } from '../../src/policy-language/json-value.ts';
import { PG_ADMIN_URL, testEngines } from '../support/postgres.ts';
import { translateSqliteError } from '../../src/storage/sqlite/sqlite-db.ts';
import { AppError } from '../../src/errors.ts';
import { configureFuzz } from '../support/fuzz.ts';

configureFuzz();

/** LOCATE character by character (quadratic: small inputs only) */
function referenceLocate(sub: string, s: string, pos = 1): number {
  if (pos < 1) return 0;
  const cs = Array.from(s);
  const cu = Array.from(sub);
  if (pos - 1 > cs.length) return 0;
  outer: for (let i = pos - 1; i + cu.length <= cs.length; i++) {
    for (let k = 0; k < cu.length; k++) if (cs[i + k] !== cu[k]) continue outer;
    return i + 1;
  }
  return 0;
}

const text = (max: number) => fc.array(fc.constantFrom('a', 'b', 'é', '😀', 'A'), { maxLength: max }).map((a) => a.join(''));

test('LOCATE agrees with a character-by-character search, astral characters and start positions included', () => {
  fc.assert(
    fc.property(text(3), text(10), fc.integer({ min: -1, max: 14 }), (sub, s, pos) => {
      assert.equal(locate(sub, s, pos), referenceLocate(sub, s, pos), JSON.stringify({ sub, s, pos }));
    }),
    { numRuns: 3000 },
  );
  assert.equal(locate('😀b', 'a😀😀b', 1), 3);
  assert.equal(locate('', 'abc', 4), 4);
  assert.equal(locate('', 'abc', 5), 0);
  // the review's case: a long near-miss, answered (0) by a linear search
  assert.equal(locate(`${'a'.repeat(100_000)}b`, 'a'.repeat(200_000)), 0);
});

const doc = (text: string): JsonValue => {
  const r = parseJsonDocument(text);
  if ('error' in r) throw new Error(r.error);
  return r.value;
};

/** PostgreSQL's @> pair by pair, without the set of scalars or a budget */
function referenceContains(a: unknown, b: unknown, top = true): boolean {
  const isObj = (v: unknown) => typeof v === 'object' && v !== null && !Array.isArray(v);
  if (top && !Array.isArray(a) && !isObj(a)) a = Object.assign([a], { raw: true });
  if (top && !Array.isArray(b) && !isObj(b)) b = Object.assign([b], { raw: true });
  if (Array.isArray(a) !== Array.isArray(b) || isObj(a) !== isObj(b)) return false;
  if (isObj(a)) return Object.entries(b as object).every(([k, bv]) => k in (a as object) && same((a as Record<string, unknown>)[k], bv));
  const aa = a as unknown[] & { raw?: boolean };
  const bb = b as unknown[] & { raw?: boolean };
  if (aa.raw && !bb.raw) return false;
  return bb.every((bv) => aa.some((av) => same(av, bv)));
}
function same(av: unknown, bv: unknown): boolean {
  const container = (v: unknown) => typeof v === 'object' && v !== null;
  if (container(av) || container(bv)) return container(av) && container(bv) && referenceContains(av, bv, false);
  return av === bv;
}

const json = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small' }, fc.constantFrom(null, true, false, 0, 1, 2, 'a', 'b'), fc.array(tie('value'), { maxLength: 4 }), fc.dictionary(fc.constantFrom('x', 'y', 'z'), tie('value'), { maxKeys: 3 })),
})).value;

test('JSON_CONTAINS agrees with a pair-by-pair containment (PostgreSQL @>)', () => {
  fc.assert(
    fc.property(json, json, (a, b) => {
      assert.equal(jsonContains(doc(JSON.stringify(a)), doc(JSON.stringify(b))), referenceContains(a, b), JSON.stringify({ a, b }));
    }),
    { numRuns: 3000 },
  );
  assert.equal(jsonContains(doc('[1.0, 2]'), doc('[1]')), true, 'numbers by value');
  assert.equal(jsonContains(doc('["1"]'), doc('[1]')), false, 'a string is not a number');
});

const wide = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.constantFrom(null, true, false, 0, -1.5, 1e21, 0.000001, 'a"b', 'back\\slash', 'tab\t', 'nl\n', '\u0001\u001f', 'é😀', ''),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.string({ maxLength: 6, unit: 'binary' }).filter((x) => !x.includes('\u0000') && !/[\ud800-\udfff]/.test(x.replace(/[\ud800-\udbff][\udc00-\udfff]/g, ''))),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(fc.string({ maxLength: 3 }).filter((k) => !k.includes('\u0000')), tie('value'), { maxKeys: 3 }),
  ),
})).value;

const codePoints = (s: string) => Array.from(s).length;

test("jsonbTextLength is the length of jsonb's text, in characters: escapes, astral characters, numbers as numeric prints them", () => {
  fc.assert(
    fc.property(wide, (v) => {
      const value = doc(JSON.stringify(v));
      assert.equal(jsonbTextLength(value), codePoints(renderJsonb(value)!), JSON.stringify(v));
    }),
    { numRuns: 3000 },
  );
  assert.equal(jsonbTextLength(doc('{"a":[1,{"b":"é😀\\n\\u0001"}],"":null}')), codePoints('{"": null, "a": [1, {"b": "é😀\\n\\u0001"}]}'));
});

test('jsonbTextLength is what PostgreSQL measures: length(doc::jsonb::text), the measure of its JSON_CONTAINS bound', async (t) => {
  const { engines, skipReason } = await testEngines();
  if (!engines.includes('postgres')) return t.skip(skipReason);
  const samples = fc.sample(wide, { numRuns: 1500, seed: 7 }).map((v) => JSON.stringify(v));
  const client = new pg.Client({ connectionString: PG_ADMIN_URL });
  await client.connect();
  try {
    const res = await client.query<{ n: number }>('SELECT length(CAST(d AS jsonb)::text) AS n FROM unnest(CAST($1 AS text[])) WITH ORDINALITY AS s(d, i) ORDER BY i', [samples]);
    const mismatches = samples.filter((text, i) => jsonbTextLength(doc(text)) !== res.rows[i]!.n);
    assert.deepEqual(mismatches.slice(0, 5), []);
  } finally {
    await client.end();
  }
});

test('JSON_CONTAINS of many scalars is linear; past CONTAINS_MAX_PRODUCT it is refused before it runs, in either thread, as 400 query_too_complex', () => {
  const n = 20_000;
  const ints = doc(`[${Array.from({ length: n }, (_, i) => i).join(',')}]`);
  const reversed = doc(`[${Array.from({ length: 20 }, (_, i) => n - 1 - i).join(',')}]`);
  assert.equal(jsonContains(ints, reversed), true, 'a long array against a short one: within the bound, and linear');
  // strings of text length 10,000 and 2,000: exactly the bound; one character more is past it
  const str = (len: number) => doc(JSON.stringify('x'.repeat(len - 2)));
  assert.equal(CONTAINS_MAX_PRODUCT, 10_000 * 2_000);
  assert.equal(jsonContains(str(10_000), str(2_000)), false);
  assert.throws(() => jsonContains(str(10_000), str(2_001)), ContainsTooComplex);
  assert.throws(() => jsonContains(str(2_001), str(10_000)), ContainsTooComplex, 'either side');
  const objects = (k: number, reverse: boolean) => doc(`[${Array.from({ length: k }, (_, i) => `{"k":${reverse ? k - 1 - i : i}}`).join(',')}]`);
  assert.throws(() => jsonContains(objects(3_000, false), objects(3_000, true)), ContainsTooComplex, 'two long arrays of objects');
  assert.equal(jsonContains(objects(100, false), objects(100, true)), true, 'a hundred objects each: fine');
  // through SQLite, as a worker thread reports it to the main thread: the code survives
  const db = new Database(':memory:');
  registerSqliteFunctions(db);
  const big = JSON.stringify(Array.from({ length: 3_000 }, (_, i) => ({ k: i })));
  let thrown: unknown;
  try {
    db.prepare('SELECT bp_json_contains(?, ?) AS c').get(big, big);
  } catch (err) {
    thrown = translateSqliteError(Object.assign(new Error((err as Error).message), { code: (err as { code?: string }).code }));
  }
  assert.ok(thrown instanceof AppError, String(thrown));
  assert.deepEqual([thrown.status, thrown.code, thrown.details], [400, 'query_too_complex', { reason: 'json_contains_too_large', max: CONTAINS_MAX_PRODUCT }]);
  db.close();
});

test("bp_replace is SQLite's replace (every occurrence, left to right; '' leaves the text as it is), linear in the text", () => {
  const db = new Database(':memory:');
  registerSqliteFunctions(db);
  const both = db.prepare('SELECT replace(?, ?, ?) AS native, bp_replace(?, ?, ?) AS ours');
  fc.assert(
    fc.property(text(12), text(3), text(3), (s, f, to) => {
      const r = both.get(s, f, to, s, f, to) as { native: string; ours: string };
      assert.equal(r.ours, r.native, JSON.stringify({ s, f, to }));
    }),
    { numRuns: 3000 },
  );
  // the review's near-miss, within the bound: answered at once (SQLite's own took seconds)
  const near = db.prepare('SELECT length(bp_replace(?, ?, ?)) AS n').get('a'.repeat(1_000_000), `${'a'.repeat(99)}b`, '') as { n: number };
  assert.equal(near.n, 1_000_000);
  db.close();
});

test('LOCATE and REPLACE: past SEARCH_MAX_PRODUCT (lengths in characters) refused before searching, in either thread, as 400 query_too_complex', () => {
  assert.equal(SEARCH_MAX_PRODUCT, 100 * 1_000_000);
  checkSearch('x'.repeat(100), 'y'.repeat(1_000_000));
  checkSearch('x'.repeat(100), `😀${'y'.repeat(999_999)}`); // 1,000,001 UTF-16 units, 1,000,000 characters
  assert.throws(() => checkSearch('x'.repeat(101), 'y'.repeat(1_000_000)), SearchTooLarge);
  const db = new Database(':memory:');
  registerSqliteFunctions(db);
  for (const sql of ['SELECT bp_locate(?, ?) AS r', 'SELECT bp_replace(?, ?, ?) AS r']) {
    const args = sql.includes('replace') ? ['y'.repeat(1_000_000), 'x'.repeat(101), ''] : ['x'.repeat(101), 'y'.repeat(1_000_000)];
    let thrown: unknown;
    try {
      db.prepare(sql).get(...args);
    } catch (err) {
      thrown = translateSqliteError(Object.assign(new Error((err as Error).message), { code: (err as { code?: string }).code }));
    }
    assert.ok(thrown instanceof AppError, String(thrown));
    assert.deepEqual([thrown.status, thrown.code, thrown.details], [400, 'query_too_complex', { reason: 'text_search_too_large', max: SEARCH_MAX_PRODUCT }]);
  }
  db.close();
});
