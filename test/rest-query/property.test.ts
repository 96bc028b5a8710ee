// Property tests: arbitrary query strings never make parseQuery throw anything but RestQueryError,
// and well-formed values round-trip.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { parseQuery, parsePrefer, resolveRange, RestQueryError, type ColumnInfo } from '../../src/rest-query/index.ts';
import { configureFuzz } from '../support/fuzz.js';

configureFuzz();

const COLS: ColumnInfo[] = [
  { name: 'id', type: 'integer' },
  { name: 'name', type: 'text' },
  { name: 'score', type: 'number' },
  { name: 'ok', type: 'boolean' },
  { name: 'at', type: 'timestamp' },
  { name: 'day', type: 'date' },
  { name: 'meta', type: 'json' },
];

function onlyRestQueryErrors(run: () => unknown): void {
  try {
    run();
  } catch (e) {
    if (!(e instanceof RestQueryError)) throw e;
    assert.ok([400, 416, 422].includes(e.status));
    assert.match(e.code, /^[a-z_]+$/);
    JSON.stringify(e); // details are serialisable
  }
}

const keys = fc.oneof(
  fc.constantFrom('id', 'name', 'score', 'ok', 'at', 'day', 'meta', 'select', 'order', 'limit', 'offset', 'on_conflict', 'columns', 'and', 'or', 'not.and', 'not.or', 'nope', ''),
  fc.string(),
  fc.string({ unit: 'binary' }),
);
const ops = fc.constantFrom('eq.', 'neq.', 'gt.', 'lt.', 'gte.', 'lte.', 'like.', 'ilike.', 'in.', 'is.', 'not.eq.', 'not.in.', 'not.is.', '');
const grammarChars = fc.constantFrom('(', ')', ',', '.', '"', '\\', '*', ':', ' ', 'and(', 'or(', 'not.', 'name.eq.', 'id.in.(', 'ok.is.', '1', 'x', '\u0000', '💥');
const values = fc.oneof(
  fc.string(),
  fc.string({ unit: 'binary' }),
  fc.tuple(ops, fc.string()).map(([o, s]) => o + s),
  fc.tuple(ops, fc.array(grammarChars, { maxLength: 40 })).map(([o, a]) => o + a.join('')),
  fc.array(grammarChars, { maxLength: 60 }).map((a) => a.join('')),
);

test('random keys and values: parseQuery throws only RestQueryError', () => {
  fc.assert(
    fc.property(fc.array(fc.tuple(keys, values), { maxLength: 8 }), (pairs) => {
      const params = new URLSearchParams();
      for (const [k, v] of pairs) params.append(k, v);
      onlyRestQueryErrors(() => parseQuery(params, COLS));
    }),
    { numRuns: 3000 },
  );
});

test('random raw query strings: parseQuery throws only RestQueryError', () => {
  fc.assert(
    fc.property(fc.oneof(fc.string(), fc.string({ unit: 'binary' }), fc.array(fc.oneof(grammarChars, fc.constantFrom('&', '=', '%', '%2', '%22', '%28', '+')), { maxLength: 80 }).map((a) => a.join(''))), (qs) => {
      onlyRestQueryErrors(() => parseQuery(new URLSearchParams(qs), COLS));
    }),
    { numRuns: 3000 },
  );
});

test('random Prefer and Range headers never throw unexpectedly', () => {
  fc.assert(
    fc.property(fc.oneof(fc.string(), fc.array(fc.string(), { maxLength: 3 })), (h) => {
      const p = parsePrefer(h);
      assert.ok(Array.isArray(p.applied));
    }),
  );
  fc.assert(
    fc.property(fc.string(), fc.option(fc.nat()), fc.nat(), fc.integer({ min: 1, max: 5000 }), (h, limit, offset, maxRows) => {
      try {
        const r = resolveRange({ limit, offset, rangeHeader: h, maxRows });
        assert.ok(r.limit >= 0 && r.limit <= maxRows && Number.isSafeInteger(r.limit) && r.offset >= 0);
      } catch (e) {
        assert.ok(e instanceof RestQueryError && e.status === 416);
      }
    }),
  );
});

test('any text value round-trips through eq, a quoted in list and a quoted logic-tree value', () => {
  const quote = (s: string) => `"${s.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`;
  fc.assert(
    fc.property(fc.string({ unit: 'binary', maxLength: 200 }).filter((s) => !s.includes('\u0000')), (v) => {
      const eq = parseQuery(new URLSearchParams([['name', `eq.${v}`]]), COLS).filter;
      assert.deepEqual(eq, { kind: 'cond', column: 'name', op: 'eq', negated: false, value: v });
      const inList = parseQuery(new URLSearchParams([['name', `in.(${quote(v)},x)`]]), COLS).filter;
      assert.deepEqual(inList, { kind: 'cond', column: 'name', op: 'in', negated: false, value: [v, 'x'] });
      const tree = parseQuery(new URLSearchParams([['or', `(name.eq.${quote(v)},id.eq.1)`]]), COLS).filter;
      assert.deepEqual(tree, {
        kind: 'or',
        negated: false,
        items: [
          { kind: 'cond', column: 'name', op: 'eq', negated: false, value: v },
          { kind: 'cond', column: 'id', op: 'eq', negated: false, value: 1 },
        ],
      });
    }),
    { numRuns: 1000 },
  );
});

test('safe integers and finite doubles round-trip', () => {
  fc.assert(
    fc.property(fc.maxSafeInteger(), (n) => {
      const f = parseQuery(new URLSearchParams([['id', `eq.${n}`]]), COLS).filter;
      assert.deepEqual(f, { kind: 'cond', column: 'id', op: 'eq', negated: false, value: n === 0 ? 0 : n });
    }),
  );
  fc.assert(
    fc.property(fc.double({ noNaN: true, noDefaultInfinity: true }), (d) => {
      const f = parseQuery(new URLSearchParams([['score', `gt.${String(d)}`]]), COLS).filter;
      assert.deepEqual(f, { kind: 'cond', column: 'score', op: 'gt', negated: false, value: d === 0 ? 0 : d });
    }),
  );
  fc.assert(
    fc.property(fc.date({ min: new Date('0001-01-01T00:00:00Z'), max: new Date('9999-12-31T23:59:59.999Z'), noInvalidDate: true }), (d) => {
      const iso = d.toISOString();
      const f = parseQuery(new URLSearchParams([['at', `eq.${iso}`]]), COLS).filter;
      assert.deepEqual(f, { kind: 'cond', column: 'at', op: 'eq', negated: false, value: iso });
    }),
  );
});
