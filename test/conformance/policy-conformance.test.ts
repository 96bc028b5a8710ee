// Every accepted case runs on SQLite and on PostgreSQL and must give the same, expected answer.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { testEngines } from '../support/postgres.js';
import { MAX_STRING_BYTES } from '../../src/policy-language/index.js';
import { MAX_TEXT_BYTES } from '../../src/services/column-values.js';
import { BASE_ROW, POLICY_CASES } from './policy-cases.js';
import { DEFAULT_AUTH, DEFAULT_NOW, openEngine, type Engine } from './policy-harness.js';

/** rows may hold integers beyond 2^53 as BigInt */
const bigintText = (_k: string, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v);

const { engines, skipReason } = await testEngines();
if (skipReason) test(`PostgreSQL policy conformance: ${skipReason}`, { skip: skipReason }, () => {});

test('the case table is large enough', () => {
  assert.ok(POLICY_CASES.length >= 200, `${POLICY_CASES.length} cases`);
  assert.equal(new Set(POLICY_CASES.map((c) => JSON.stringify(c, bigintText))).size, POLICY_CASES.length, 'duplicate cases');
});

test('string results are bounded by the longest text a column holds', () => {
  // any stored text passes CONCAT/REPLACE/LOWER/UPPER unchanged in size; only growth is cut off
  assert.equal(MAX_STRING_BYTES, MAX_TEXT_BYTES);
});

for (const name of engines) {
  describe(`policy conformance on ${name}`, () => {
    let engine: Engine;
    before(async () => {
      engine = await openEngine(name);
    });
    after(async () => {
      await engine?.close();
    });
    for (const c of POLICY_CASES) {
      const short = (s: string) => (s.length > 100 ? `${s.slice(0, 100)}... (${s.length} chars)` : s);
      const label = `${c.expected ? 'matches' : 'no match'}: ${short(c.expr)}${c.auth === null ? ' [anonymous]' : ''}${c.row ? ` ${short(JSON.stringify(c.row, bigintText))}` : ''}`;
      test(label, async () => {
        const auth = c.auth === undefined ? DEFAULT_AUTH : c.auth;
        const now = c.now ? new Date(c.now) : DEFAULT_NOW;
        const got = await engine.matches(c.expr, { ...BASE_ROW, ...c.row }, auth, now);
        assert.equal(got, c.expected);
      });
    }
  });
}
