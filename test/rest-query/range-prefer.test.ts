// resolveRange, contentRange and parsePrefer.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { contentRange, parsePrefer, resolveRange, RestQueryError, type Prefer } from '../../src/rest-query/index.ts';

test('resolveRange', async (t) => {
  type Opts = Parameters<typeof resolveRange>[0];
  const cases: [string, Opts, { limit: number; offset: number }][] = [
    ['nothing asked: one full page', { limit: null, offset: 0, maxRows: 1000 }, { limit: 1000, offset: 0 }],
    ['limit below max', { limit: 10, offset: 0, maxRows: 1000 }, { limit: 10, offset: 0 }],
    ['huge limit is capped', { limit: 1e15, offset: 0, maxRows: 1000 }, { limit: 1000, offset: 0 }],
    ['limit 0', { limit: 0, offset: 7, maxRows: 1000 }, { limit: 0, offset: 7 }],
    ['offset kept', { limit: 5, offset: 20, maxRows: 1000 }, { limit: 5, offset: 20 }],
    ['Range 0-9', { limit: null, offset: 0, rangeHeader: '0-9', maxRows: 1000 }, { limit: 10, offset: 0 }],
    ['Range 10-19', { limit: null, offset: 0, rangeHeader: '10-19', maxRows: 1000 }, { limit: 10, offset: 10 }],
    ['Range with unit', { limit: null, offset: 0, rangeHeader: 'items=5-6', maxRows: 1000 }, { limit: 2, offset: 5 }],
    ['Range with spaces', { limit: null, offset: 0, rangeHeader: ' 0-0 ', maxRows: 1000 }, { limit: 1, offset: 0 }],
    ['open Range', { limit: null, offset: 0, rangeHeader: '5-', maxRows: 1000 }, { limit: 1000, offset: 5 }],
    ['Range wider than max', { limit: null, offset: 0, rangeHeader: '0-99999', maxRows: 1000 }, { limit: 1000, offset: 0 }],
    ['Range intersected with limit', { limit: 3, offset: 0, rangeHeader: '0-9', maxRows: 1000 }, { limit: 3, offset: 0 }],
    ['Range intersected with offset', { limit: null, offset: 5, rangeHeader: '0-9', maxRows: 1000 }, { limit: 5, offset: 5 }],
    ['disjoint Range and limit: empty page', { limit: 5, offset: 0, rangeHeader: '10-19', maxRows: 1000 }, { limit: 0, offset: 10 }],
    ['malformed Range is ignored', { limit: null, offset: 0, rangeHeader: 'bytes=0-9', maxRows: 50 }, { limit: 50, offset: 0 }],
    ['malformed Range is ignored (2)', { limit: 4, offset: 2, rangeHeader: '-5', maxRows: 50 }, { limit: 4, offset: 2 }],
    ['malformed Range is ignored (3)', { limit: null, offset: 0, rangeHeader: '0-9,20-29', maxRows: 50 }, { limit: 50, offset: 0 }],
    ['empty Range header', { limit: null, offset: 0, rangeHeader: '', maxRows: 50 }, { limit: 50, offset: 0 }],
  ];
  for (const [name, opts, want] of cases) await t.test(name, () => assert.deepEqual(resolveRange(opts), want));

  const unsatisfiable = ['9-0', '1-0', '99999999999999999999-', '0-99999999999999999999'];
  for (const h of unsatisfiable) {
    await t.test(`416 for ${h}`, () =>
      assert.throws(
        () => resolveRange({ limit: null, offset: 0, rangeHeader: h, maxRows: 1000 }),
        (e: unknown) => e instanceof RestQueryError && e.status === 416 && e.code === 'range_not_satisfiable',
      ),
    );
  }
  await t.test('a bad maxRows is a programming error', () => {
    assert.throws(() => resolveRange({ limit: null, offset: 0, maxRows: 0 }), (e: unknown) => !(e instanceof RestQueryError));
  });
});

test('contentRange', async (t) => {
  const cases: [number, number, number | null, string][] = [
    [0, 10, 123, '0-9/123'],
    [10, 5, 15, '10-14/15'],
    [0, 0, 0, '*/0'],
    [50, 0, 12, '*/12'],
    [0, 10, null, '0-9/*'],
    [0, 0, null, '*/*'],
    [7, 1, 8, '7-7/8'],
  ];
  for (const [offset, rows, total, want] of cases) await t.test(want, () => assert.equal(contentRange(offset, rows, total), want));
});

test('parsePrefer', async (t) => {
  const none: Prefer = { return: null, count: null, resolution: null, missing: null, handling: null, tx: null, maxAffected: null, applied: [], rejected: [] };
  const cases: [string, Parameters<typeof parsePrefer>[0], Prefer][] = [
    ['absent', undefined, none],
    ['empty', '', none],
    ['return=minimal', 'return=minimal', { ...none, return: 'minimal', applied: ['return=minimal'] }],
    ['return=headers-only', 'return=headers-only', { ...none, return: 'headers-only', applied: ['return=headers-only'] }],
    [
      'several, spaced, mixed case',
      ' return = Representation ,count=exact, resolution=merge-duplicates,missing=default',
      {
        ...none,
        return: 'representation',
        count: 'exact',
        resolution: 'merge-duplicates',
        missing: 'default',
        applied: ['return=representation', 'count=exact', 'resolution=merge-duplicates', 'missing=default'],
      },
    ],
    ['header array', ['count=planned', 'resolution=ignore-duplicates'], { ...none, count: 'planned', resolution: 'ignore-duplicates', applied: ['count=planned', 'resolution=ignore-duplicates'] }],
    ['count=estimated', 'count=estimated', { ...none, count: 'estimated', applied: ['count=estimated'] }],
    ['first valid wins', 'return=minimal, return=representation', { ...none, return: 'minimal', applied: ['return=minimal'], rejected: ['return=representation'] }],
    ['invalid value then valid', 'count=bogus, count=exact', { ...none, count: 'exact', applied: ['count=exact'], rejected: ['count=bogus'] }],
    [
      'tx, handling and max-affected (supabase-js rollback() and maxAffected())',
      'tx=rollback, handling=strict, max-affected=5',
      { ...none, tx: 'rollback', handling: 'strict', maxAffected: 5, applied: ['tx=rollback', 'handling=strict'] },
    ],
    ['unknown preferences rejected', 'timezone=UTC, params=single-object, foo', { ...none, rejected: ['timezone=UTC', 'params=single-object', 'foo'] }],
    ['max-affected not a count', 'max-affected=-1, max-affected=1.5, max-affected=x', { ...none, rejected: ['max-affected=-1', 'max-affected=1.5', 'max-affected=x'] }],
    ['missing=null rejected', 'missing=null', { ...none, rejected: ['missing=null'] }],
    ['junk', ';;;,===,return', { ...none, rejected: [';;;', '===', 'return'] }],
    ['__proto__ key', '__proto__=x, constructor=y, hasOwnProperty=z', { ...none, rejected: ['__proto__=x', 'constructor=y', 'hasOwnProperty=z'] }],
  ];
  for (const [name, header, want] of cases) await t.test(name, () => assert.deepEqual(parsePrefer(header), want));
});
