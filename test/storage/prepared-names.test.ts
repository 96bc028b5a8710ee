// The named prepared statements of one PostgreSQL connection (storage/postgres/prepared-names.ts):
// at most `perConnection`, a project's own at most `perProject`; the connection is replaced after
// `replaceAfter` unnamed statements, to which a project beyond its share counts only when its share
// holds statements of an earlier schema version of its own.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PreparedNames } from '../../src/storage/postgres/prepared-names.ts';

const limits = { perConnection: 6, perProject: 3, replaceAfter: 4 };
const a = (version: number | null = 0) => ({ project: 'p_a', version });
const b = { project: 'p_b', version: 0 };

test("a project's own statements take at most its share; the others' and the platform's are named beside them", () => {
  const names = new PreparedNames(limits);
  assert.deepEqual(['a1', 'a2', 'a3', 'a4'].map((n) => names.name(n, a())), ['a1', 'a2', 'a3', undefined]);
  assert.equal(names.name('a1', a()), 'a1', 'one already named runs under its name');
  assert.equal(names.name('b1', b), 'b1');
  assert.equal(names.name('platform', undefined), 'platform');
  assert.equal(names.name('b2', b), 'b2');
  assert.equal(names.name('b3', b), undefined, 'the connection holds 6');
  assert.equal(names.name('platform2', undefined), undefined);
});

test('a project beyond its share at the same schema version does not replace the connection; the connection beyond its own limit does', () => {
  const names = new PreparedNames(limits);
  for (const n of ['a1', 'a2', 'a3']) names.name(n, a());
  for (let i = 0; i < 10; i++) assert.equal(names.name(`more${i}`, a()), undefined);
  assert.equal(names.replace, false, 'more shapes than its share: a new connection would not give it more');
  for (const n of ['b1', 'b2', 'b3']) names.name(n, b);
  for (let i = 0; i < 3; i++) names.name(`p${i}`, undefined);
  assert.equal(names.replace, false);
  names.name('p3', undefined);
  assert.equal(names.replace, true, 'four unnamed beyond the connection limit');
});

test("a project whose share holds an earlier schema version's statements counts towards replacing the connection", () => {
  const names = new PreparedNames(limits);
  for (const n of ['a1', 'a2']) names.name(n, a(0));
  names.name('meta', a(null)); // its `_bp_` statements never change
  for (let i = 0; i < 3; i++) assert.equal(names.name(`v1_${i}`, a(1)), undefined);
  assert.equal(names.replace, false);
  names.name('v1_3', a(1));
  assert.equal(names.replace, true);
});

test('a statement the server refused to parse gives its place back', () => {
  const names = new PreparedNames(limits);
  for (const n of ['a1', 'a2', 'a3']) names.name(n, a());
  names.forget('a3', a());
  assert.equal(names.name('a4', a()), 'a4');
  assert.equal(names.name('a5', a()), undefined, 'the share is full again');
});
