// select, order, limit/offset, on_conflict and columns parameters of parseQuery.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseQuery, RestQueryError, type ColumnInfo, type ParsedQuery } from '../../src/rest-query/index.ts';

const COLS: ColumnInfo[] = [
  { name: 'id', type: 'integer' },
  { name: 'name', type: 'text' },
  { name: 'age', type: 'integer' },
];
const q = (s: string) => parseQuery(new URLSearchParams(s), COLS);
const enc = encodeURIComponent;

function expectError(qs: string, status: number, code: string, details?: Record<string, unknown>) {
  assert.throws(
    () => q(qs),
    (e: unknown) => {
      assert.ok(e instanceof RestQueryError, `expected RestQueryError for ${qs}, got ${String(e)}`);
      assert.equal(e.status, status, `${qs}: status (${e.code} ${e.message})`);
      assert.equal(e.code, code, `${qs}: code (${JSON.stringify(e.details)})`);
      if (details) for (const [k, v] of Object.entries(details)) assert.deepEqual((e.details as Record<string, unknown>)[k], v, `${qs}: details.${k}`);
      return true;
    },
  );
}

test('defaults for an empty query', () => {
  const want: ParsedQuery = { filter: null, select: null, order: [], limit: null, offset: 0, onConflict: null, columns: null };
  assert.deepEqual(q(''), want);
});

test('select', async (t) => {
  const all = COLS.map((c) => ({ column: c.name, alias: c.name }));
  const cases: [string, ParsedQuery['select']][] = [
    ['select=*', null],
    ['select=', null],
    ['select=' + enc('  '), null],
    ['select=name', [{ column: 'name', alias: 'name' }]],
    ['select=name,age', [{ column: 'name', alias: 'name' }, { column: 'age', alias: 'age' }]],
    ['select=' + enc(' name , age '), [{ column: 'name', alias: 'name' }, { column: 'age', alias: 'age' }]],
    ['select=fullName:name,id', [{ column: 'name', alias: 'fullName' }, { column: 'id', alias: 'id' }]],
    ['select=' + enc('n : name'), [{ column: 'name', alias: 'n' }]],
    ['select=name:age,age:name', [{ column: 'age', alias: 'name' }, { column: 'name', alias: 'age' }]],
    ['select=*,name', null],
    ['select=name,*', null],
    ['select=*,*', null],
    ['select=*,name:name', null],
    ['select=*,n:name', [...all, { column: 'name', alias: 'n' }]],
    ['select=n:name,*', [...all, { column: 'name', alias: 'n' }]],
  ];
  for (const [qs, want] of cases) await t.test(qs, () => assert.deepEqual(q(qs).select, want));
});

test('select errors', async (t) => {
  const cases: [string, number, string, Record<string, unknown>?][] = [
    ['select=name::text', 400, 'invalid_select', { text: 'name::text' }],
    ['select=n:name::text', 400, 'invalid_select'],
    ['select=rel(*)', 400, 'invalid_select', { text: 'rel(*)' }],
    ['select=name,rel!inner(id)', 400, 'invalid_select', { text: 'rel!inner(id)' }],
    ['select=...rel', 400, 'invalid_select'],
    ['select=' + enc('name->a'), 400, 'invalid_select'],
    ['select=name,,age', 400, 'invalid_select'],
    ['select=name,', 400, 'invalid_select'],
    ['select=name,name', 400, 'invalid_select', { text: 'name' }],
    ['select=x:name,x:age', 400, 'invalid_select', { text: 'x' }],
    ['select=*,name:id', 400, 'invalid_select', { text: 'name' }],
    ['select=:name', 400, 'invalid_select'],
    ['select=x:', 400, 'invalid_select'],
    ['select=' + enc('a b:name'), 400, 'invalid_select'],
    ['select=' + enc('"x":name'), 400, 'invalid_select'],
    ['select=name&select=age', 400, 'invalid_select'],
    ['select=nope', 400, 'unknown_column', { column: 'nope' }],
    ['select=x:nope', 400, 'unknown_column', { column: 'nope' }],
    ['select=' + enc('"name"'), 400, 'unknown_column', { column: '"name"' }],
    ['select=' + enc('x;drop'), 400, 'unknown_column', { column: 'x;drop' }],
    ['select=' + enc('`id`'), 400, 'unknown_column', { column: '`id`' }],
    ['select=' + enc('name; drop table x'), 400, 'unknown_column', { column: 'name; drop table x' }],
    ['select=Name', 400, 'unknown_column', { column: 'Name' }],
    ['select=' + Array(501).fill('id').join(','), 400, 'query_too_complex'],
  ];
  for (const [qs, status, code, details] of cases) await t.test(qs.slice(0, 80), () => expectError(qs, status, code, details));
});

test('order', async (t) => {
  const cases: [string, ParsedQuery['order']][] = [
    ['order=name', [{ column: 'name', dir: 'asc', nulls: null }]],
    ['order=name.desc', [{ column: 'name', dir: 'desc', nulls: null }]],
    ['order=name.asc.nullsfirst', [{ column: 'name', dir: 'asc', nulls: 'first' }]],
    ['order=name.nullslast', [{ column: 'name', dir: 'asc', nulls: 'last' }]],
    [
      'order=age.desc.nullslast,name,id.asc.nullsfirst',
      [
        { column: 'age', dir: 'desc', nulls: 'last' },
        { column: 'name', dir: 'asc', nulls: null },
        { column: 'id', dir: 'asc', nulls: 'first' },
      ],
    ],
    ['order=' + enc(' age.desc , name '), [{ column: 'age', dir: 'desc', nulls: null }, { column: 'name', dir: 'asc', nulls: null }]],
    ['order=age&order=name.desc', [{ column: 'age', dir: 'asc', nulls: null }, { column: 'name', dir: 'desc', nulls: null }]],
  ];
  for (const [qs, want] of cases) await t.test(qs, () => assert.deepEqual(q(qs).order, want));
});

test('order errors', async (t) => {
  const cases: [string, number, string, Record<string, unknown>?][] = [
    ['order=', 400, 'invalid_order'],
    ['order=name,', 400, 'invalid_order'],
    ['order=.desc', 400, 'invalid_order'],
    ['order=name.up', 400, 'invalid_order', { text: 'name.up' }],
    ['order=name.DESC', 400, 'invalid_order'],
    ['order=name.desc.asc', 400, 'invalid_order'],
    ['order=name.nullsfirst.desc', 400, 'invalid_order'],
    ['order=name.nullsfirst.nullslast', 400, 'invalid_order'],
    ['order=name.desc.nullsfirst.x', 400, 'invalid_order'],
    ['order=nope.desc', 400, 'unknown_column', { column: 'nope' }],
    ['order=' + enc('"name"'), 400, 'unknown_column', { column: '"name"' }],
    ['order=' + enc('name;drop'), 400, 'unknown_column', { column: 'name;drop' }],
    ['order=' + enc('random()'), 400, 'unknown_column', { column: 'random()' }],
    ['order=' + Array(101).fill('id').join(','), 400, 'query_too_complex'],
    [Array(3).fill('order=' + Array(40).fill('id').join(',')).join('&'), 400, 'query_too_complex'],
  ];
  for (const [qs, status, code, details] of cases) await t.test(qs.slice(0, 80), () => expectError(qs, status, code, details));
});

test('limit and offset', async (t) => {
  const cases: [string, number | null, number][] = [
    ['limit=10', 10, 0],
    ['limit=0', 0, 0],
    ['offset=5', null, 5],
    ['limit=10&offset=20', 10, 20],
    ['limit=' + enc(' 3 '), 3, 0],
    ['limit=1000000', 1000000, 0], // not an error: capped by resolveRange
    ['limit=9007199254740991', 9007199254740991, 0],
  ];
  for (const [qs, limit, offset] of cases) {
    await t.test(qs, () => {
      const r = q(qs);
      assert.equal(r.limit, limit);
      assert.equal(r.offset, offset);
    });
  }
  const errors: [string, string][] = [
    ['limit=-1', 'limit'],
    ['limit=', 'limit'],
    ['limit=1.5', 'limit'],
    ['limit=1e3', 'limit'],
    ['limit=abc', 'limit'],
    ['limit=0x10', 'limit'],
    ['limit=9007199254740992', 'limit'],
    ['limit=' + '9'.repeat(40), 'limit'],
    ['limit=1&limit=2', 'limit'],
    ['offset=-5', 'offset'],
    ['offset=%2B5', 'offset'],
    ['offset=ten', 'offset'],
    ['offset=99999999999999999999', 'offset'],
  ];
  for (const [qs, param] of errors) await t.test(qs, () => expectError(qs, 400, 'invalid_range', { param }));
});

test('on_conflict and columns', async (t) => {
  const ok: [string, Partial<ParsedQuery>][] = [
    ['on_conflict=name', { onConflict: ['name'] }],
    ['on_conflict=' + enc('name, age'), { onConflict: ['name', 'age'] }],
    ['on_conflict=name,name', { onConflict: ['name'] }],
    ['columns=name,age', { columns: ['name', 'age'] }],
    ['columns=' + enc('"name","age"'), { columns: ['name', 'age'] }], // postgrest-js quotes them
    ['columns=' + enc(' "id" ,name'), { columns: ['id', 'name'] }],
  ];
  for (const [qs, want] of ok) {
    await t.test(qs, () => {
      const r = q(qs);
      for (const [k, v] of Object.entries(want)) assert.deepEqual(r[k as keyof ParsedQuery], v);
    });
  }
  const errors: [string, number, string, Record<string, unknown>][] = [
    ['on_conflict=nope', 400, 'unknown_column', { column: 'nope' }],
    ['on_conflict=' + enc('"name"'), 400, 'unknown_column', { column: '"name"' }],
    ['on_conflict=name,', 400, 'invalid_param', { param: 'on_conflict' }],
    ['on_conflict=', 400, 'invalid_param', { param: 'on_conflict' }],
    ['on_conflict=name&on_conflict=age', 400, 'invalid_param', { param: 'on_conflict' }],
    ['columns=name,nope', 400, 'unknown_column', { column: 'nope' }],
    ['columns=' + enc('"nope"'), 400, 'unknown_column', { column: 'nope' }],
    ['columns=' + enc('"name'), 400, 'unknown_column', { column: '"name' }],
    ['columns=' + enc('x;drop'), 400, 'unknown_column', { column: 'x;drop' }],
    ['columns=' + enc('""'), 400, 'invalid_param', { param: 'columns' }],
    ['columns=', 400, 'invalid_param', { param: 'columns' }],
    ['columns=id&columns=name', 400, 'invalid_param', { param: 'columns' }],
  ];
  for (const [qs, status, code, details] of errors) await t.test(qs, () => expectError(qs, status, code, details));
});

test('every parameter together', () => {
  const r = q('select=id,n:name&name=like.a*&or=(age.lt.3,age.gt.60)&order=age.desc&limit=5&offset=10&on_conflict=id&columns=name');
  assert.deepEqual(r, {
    filter: {
      kind: 'and',
      negated: false,
      items: [
        { kind: 'cond', column: 'name', op: 'like', negated: false, value: 'a%' },
        {
          kind: 'or',
          negated: false,
          items: [
            { kind: 'cond', column: 'age', op: 'lt', negated: false, value: 3 },
            { kind: 'cond', column: 'age', op: 'gt', negated: false, value: 60 },
          ],
        },
      ],
    },
    select: [{ column: 'id', alias: 'id' }, { column: 'name', alias: 'n' }],
    order: [{ column: 'age', dir: 'desc', nulls: null }],
    limit: 5,
    offset: 10,
    onConflict: ['id'],
    columns: ['name'],
  });
});
