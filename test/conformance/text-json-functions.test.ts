// The embedded engine's LOCATE and JSON_CONTAINS: the same answers as plain reference versions
// (character by character, pair by pair), and bounded work for one call, which no statement
// deadline can interrupt: LOCATE searches linearly, JSON_CONTAINS looks scalars up in a set and
// fails past CONTAINS_MAX_VISITS (counted, never timed).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import Database from 'better-sqlite3';
import { locate, registerSqliteFunctions } from '../../src/storage/sqlite/sqlite-functions.ts';
import { ContainsTooComplex, CONTAINS_MAX_VISITS, jsonContains, parseJsonDocument, type JsonValue } from '../../src/policy-language/json-value.ts';
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

test('JSON_CONTAINS of many scalars is linear; of many containers it fails past CONTAINS_MAX_VISITS, in either thread, as 400 query_too_complex', () => {
  const n = 200_000;
  const ints = doc(`[${Array.from({ length: n }, (_, i) => i).join(',')}]`);
  const reversed = doc(`[${Array.from({ length: n }, (_, i) => n - 1 - i).join(',')}]`);
  assert.equal(jsonContains(ints, reversed), true, 'n scalars against n scalars: within the budget');
  const objects = (k: number, reverse: boolean) => doc(`[${Array.from({ length: k }, (_, i) => `{"k":${reverse ? k - 1 - i : i}}`).join(',')}]`);
  const k = Math.ceil(Math.sqrt(CONTAINS_MAX_VISITS)) * 2;
  assert.throws(() => jsonContains(objects(k, false), objects(k, true)), ContainsTooComplex);
  assert.equal(jsonContains(objects(100, false), objects(100, true)), true, 'a hundred objects each: fine');
  // through SQLite, as a worker thread reports it to the main thread: the code survives
  const db = new Database(':memory:');
  registerSqliteFunctions(db);
  const big = JSON.stringify(Array.from({ length: k }, (_, i) => ({ k: i })));
  let thrown: unknown;
  try {
    db.prepare('SELECT bp_json_contains(?, ?) AS c').get(big, big);
  } catch (err) {
    thrown = translateSqliteError(Object.assign(new Error((err as Error).message), { code: (err as { code?: string }).code }));
  }
  assert.ok(thrown instanceof AppError, String(thrown));
  assert.deepEqual([thrown.status, thrown.code], [400, 'query_too_complex']);
  db.close();
});
